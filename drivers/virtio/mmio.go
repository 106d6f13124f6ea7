package virtio

// virtio-mmio version 2 registers (§4.2.2). The driver uses only aligned
// 32-bit accesses to them; the device-specific configuration at 0x100 may
// be read with narrower ones.
const (
	mmioMagic             = 0x000 // "virt"
	mmioVersion           = 0x004
	mmioDeviceID          = 0x008
	mmioVendorID          = 0x00c
	mmioDeviceFeatures    = 0x010
	mmioDeviceFeaturesSel = 0x014
	mmioDriverFeatures    = 0x020
	mmioDriverFeaturesSel = 0x024
	mmioQueueSel          = 0x030
	mmioQueueNumMax       = 0x034
	mmioQueueNum          = 0x038
	mmioQueueReady        = 0x044
	mmioQueueNotify       = 0x050
	mmioInterruptStatus   = 0x060
	mmioInterruptACK      = 0x064
	mmioStatus            = 0x070
	mmioQueueDescLow      = 0x080 // High at +4
	mmioQueueDriverLow    = 0x090
	mmioQueueDeviceLow    = 0x0a0
	mmioConfigGeneration  = 0x0fc
	mmioConfig            = 0x100

	// MMIOMagic is the value of the first register: "virt", little-endian.
	MMIOMagic = 0x74726976
	// MMIOSize is the register block of one virtio-mmio transport in QEMU
	// (virt: 32 of them from 0x0a000000, 0x200 apart; microvm: from
	// 0xfeb00000, 0x200 apart).
	MMIOSize = 0x200
)

// OpenMMIO opens the virtio-mmio transport whose registers are at base
// (mapped as device memory). It refuses a legacy version-1 transport
// (ErrLegacy: QEMU microvm gives one unless started with -global
// virtio-mmio.force-legacy=false) and an empty slot (ErrNoDevice: QEMU
// creates every slot, most without a device behind them). It does not
// touch the device's status: Negotiate starts with a reset.
func OpenMMIO(base uintptr) (Device, Error) {
	if read32(base+mmioMagic) != MMIOMagic {
		return Device{}, ErrMagic
	}
	switch read32(base + mmioVersion) {
	case 2:
	case 1:
		return Device{}, ErrLegacy
	default:
		return Device{}, ErrVersion
	}
	id := read32(base + mmioDeviceID)
	if id == 0 {
		return Device{}, ErrNoDevice
	}
	return Device{typ: id, regs: base, cfg: base + mmioConfig, cfgLen: MMIOSize - mmioConfig}, OK
}
