package virtio

// Modern virtio over PCI (§4.1): the device's registers are structures in
// its memory BARs, found through vendor-specific capabilities (ID 0x09) in
// its configuration space.

// The common configuration structure (§4.1.4.3); each field is accessed
// with its own width.
const (
	pciDeviceFeatureSel = 0x00 // le32
	pciDeviceFeature    = 0x04 // le32
	pciDriverFeatureSel = 0x08 // le32
	pciDriverFeature    = 0x0c // le32
	pciMSIXConfig       = 0x10 // le16
	pciNumQueues        = 0x12 // le16
	pciStatus           = 0x14 // u8
	pciConfigGeneration = 0x15 // u8
	pciQueueSelect      = 0x16 // le16
	pciQueueSize        = 0x18 // le16
	pciQueueMSIXVector  = 0x1a // le16
	pciQueueEnable      = 0x1c // le16
	pciQueueNotifyOff   = 0x1e // le16
	pciQueueDesc        = 0x20 // le64
	pciQueueDriver      = 0x28 // le64
	pciQueueDevice      = 0x30 // le64
	pciCommonLen        = 0x38 // the virtio 1.0 structure; 1.2 adds fields after
)

// Capability structure types (cfg_type, §4.1.4).
const (
	capCommon  = 1
	capNotify  = 2
	capISR     = 3
	capDevice  = 4
	capVendor  = 0x09 // the PCI capability ID of a vendor-specific capability
	capHdrLen  = 16   // struct virtio_pci_cap
	capNotLen  = 20   // struct virtio_pci_notify_cap: the multiplier follows
	capListMin = 0x40 // capabilities live after the standard header
	capListMax = 0x100
)

// Configuration-space header fields (PCI Local Bus 3.0, 6.1).
const (
	cfgVendor     = 0x00 // le16, then the device ID
	cfgCommand    = 0x04 // le16
	cfgStatus     = 0x06 // le16
	cfgClass      = 0x08 // le32: revision, then the class code
	cfgHeaderType = 0x0e
	cfgBAR0       = 0x10
	cfgSubsystem  = 0x2e // le16: the subsystem ID (a transitional device's virtio type)
	cfgCapPtr     = 0x34

	cmdMemory    = 1 << 1
	cmdBusMaster = 1 << 2
	statusCaps   = 1 << 4

	// VendorVirtio is the PCI vendor ID of virtio devices.
	VendorVirtio = 0x1af4
)

// PCIConfig reaches PCI configuration space: memory-mapped (ECAM, PCIe
// 7.2.2) at ECAM, the virtual address of bus 0's space, when it is
// nonzero; else, on amd64, through the legacy ports 0xCF8/0xCFC
// (configuration mechanism #1), which reach the first 256 bytes of each
// function. The port mechanism is two accesses: callers on several CPUs
// serialise them. On arm64 ECAM is the only way (virt's PCIe host bridge,
// from the device tree); q35 has ECAM too (ACPI's MCFG); pc has only the
// ports.
type PCIConfig struct {
	ECAM uintptr
}

// BDF packs a function's bus, device (0-31) and function (0-7) numbers.
func BDF(bus, dev, fn uint8) uint16 {
	return uint16(bus)<<8 | uint16(dev&31)<<3 | uint16(fn&7)
}

// portAddr is the value written to 0xCF8 to reach the aligned dword at
// off: enable, bus, device, function, register.
func portAddr(bdf, off uint16) uint32 {
	return 1<<31 | uint32(bdf)<<8 | uint32(off&0xfc)
}

// Read32 reads the aligned dword at off (rounded down to a multiple of 4).
// A function that does not exist reads as all ones.
func (c PCIConfig) Read32(bdf, off uint16) uint32 {
	if c.ECAM != 0 {
		return read32(c.ECAM + uintptr(bdf)<<12 + uintptr(off&0xffc))
	}
	return portRead32(portAddr(bdf, off))
}

// Read16 reads the 16-bit field at off (2-byte aligned), from its dword.
func (c PCIConfig) Read16(bdf, off uint16) uint16 {
	return uint16(c.Read32(bdf, off) >> (8 * (off & 2)))
}

// Read8 reads the byte at off, from its dword.
func (c PCIConfig) Read8(bdf, off uint16) uint8 {
	return uint8(c.Read32(bdf, off) >> (8 * (off & 3)))
}

// Write16 writes the 16-bit field at off (2-byte aligned) with a 16-bit
// access, so that the other half of the dword (the status register beside
// the command register, whose bits clear when written with 1) is left
// alone.
func (c PCIConfig) Write16(bdf, off, v uint16) {
	if c.ECAM != 0 {
		write16(c.ECAM+uintptr(bdf)<<12+uintptr(off&0xffe), v)
		return
	}
	portWrite16(portAddr(bdf, off), off, v)
}

// Write32 writes the aligned dword at off (a BAR, an MSI-X register pair).
func (c PCIConfig) Write32(bdf, off uint16, v uint32) {
	if c.ECAM != 0 {
		write32(c.ECAM+uintptr(bdf)<<12+uintptr(off&0xffc), v)
		return
	}
	portWrite32(portAddr(bdf, off), v)
}

// PCIFunction is a virtio function found on a bus.
type PCIFunction struct {
	BDF    uint16
	Device uint16 // PCI device ID: 0x1040+type (modern) or 0x1000-0x103F (transitional)
	Type   uint32 // virtio device type
}

// virtioType reads the IDs of the function at bdf and returns its PCI
// device ID and virtio device type (§4.1.2.1): a modern device's ID is
// 0x1040 plus the type; a transitional device's (0x1000-0x103F) is given
// by its subsystem ID. present is false if there is no function there, ok
// false if it is not a virtio device.
func (c PCIConfig) virtioType(bdf uint16) (device uint16, typ uint32, present, ok bool) {
	id := c.Read32(bdf, cfgVendor)
	vendor, device := uint16(id), uint16(id>>16)
	switch {
	case vendor == 0xffff:
		return 0, 0, false, false
	case vendor != VendorVirtio:
		return device, 0, true, false
	case device >= 0x1040 && device <= 0x107f:
		return device, uint32(device - 0x1040), true, true
	case device >= 0x1000 && device <= 0x103f:
		return device, uint32(c.Read16(bdf, cfgSubsystem)), true, true
	}
	return device, 0, true, false
}

// Virtio lists the virtio functions on bus into out and returns how many
// there are; ErrTooMany if more than fit (the count is still exact). It
// reads configuration space only.
func (c PCIConfig) Virtio(bus uint8, out []PCIFunction) (n int, err Error) {
	for i, f := c.NextVirtio(bus, 0); i >= 0; i, f = c.NextVirtio(bus, i+1) {
		if n < len(out) {
			out[n] = f
		} else {
			err = ErrTooMany
		}
		n++
	}
	return n, err
}

// NextVirtio is the first virtio function on bus at or after index i
// (device*8 + function, as Next's), and its index; -1 if none. A walk
// with it, i+1 each step, finds every virtio function on the bus (up to
// 256) with no table to fill.
func (c PCIConfig) NextVirtio(bus uint8, i int) (int, PCIFunction) {
	for i = c.Next(bus, i); i >= 0; i = c.Next(bus, i+1) {
		bdf := BDF(bus, uint8(i>>3), uint8(i&7))
		if id, t, _, ok := c.virtioType(bdf); ok {
			return i, PCIFunction{BDF: bdf, Device: id, Type: t}
		}
	}
	return -1, PCIFunction{}
}

// Next is the first function present on bus at or after index i
// (device*8 + function), -1 if none: functions 1-7 of a device only if
// function 0 says it is multi-function.
func (c PCIConfig) Next(bus uint8, i int) int {
	for ; i < 32*8; i++ {
		dev, fn := uint8(i>>3), uint8(i&7)
		if c.Read16(BDF(bus, dev, 0), cfgVendor) == 0xffff {
			i |= 7 // no device: on to the next
			continue
		}
		if fn != 0 && c.Read8(BDF(bus, dev, 0), cfgHeaderType)&0x80 == 0 {
			i |= 7
			continue
		}
		if c.Read16(BDF(bus, dev, fn), cfgVendor) != 0xffff {
			return i
		}
	}
	return -1
}

// Class is the class code of the function at bdf: base class, subclass
// and programming interface (0x010802: an NVMe controller).
func (c PCIConfig) Class(bdf uint16) uint32 { return c.Read32(bdf, cfgClass) >> 8 }

// BAR is the physical address memory BAR i of the function at bdf was
// assigned (a 64-bit BAR with the next one's high half): ErrIOBAR for
// an I/O BAR, ErrBARUnassigned for address 0.
func (c PCIConfig) BAR(bdf uint16, i uint8) (uint64, Error) { return c.bar(bdf, i) }

// Enable turns on memory decoding and bus mastering (the function's DMA)
// in the command register.
func (c PCIConfig) Enable(bdf uint16) {
	c.Write16(bdf, cfgCommand, c.Read16(bdf, cfgCommand)|cmdMemory|cmdBusMaster)
}

// PCIStruct is where one virtio structure is: a BAR, an offset and a
// length in it, and the physical address they make.
type PCIStruct struct {
	BAR    uint8
	Offset uint32
	Length uint32
	Addr   uint64
}

// PCICaps are a virtio function's structures, from its capabilities: the
// first of each type whose BAR is valid (§4.1.4: a driver uses the first
// it can). Device has Length 0 if the function has no device-specific
// configuration.
type PCICaps struct {
	Common, Notify, ISR, Device PCIStruct
	NotifyMul                   uint32 // notify_off_multiplier
}

// Caps walks the capability list of the function at bdf and resolves the
// BARs of the four virtio structures. The walk is bounded: a pointer
// below 0x40 or into the last bytes of the 256, a capability met twice (a
// loop) or one running past the end is ErrCapList. A structure in an I/O
// BAR is ErrIOBAR; in a BAR at address 0, ErrBARUnassigned (QEMU's
// firmware assigns BARs on pc and q35; nothing does on arm64 virt under
// -kernel, nor without firmware). BAR sizes are not probed (that writes
// the BAR): a structure is trusted to fit in its BAR.
func (c PCIConfig) Caps(bdf uint16) (PCICaps, Error) {
	var caps PCICaps
	if c.Read16(bdf, cfgStatus)&statusCaps == 0 {
		return caps, ErrNoCapList
	}
	var seen uint64 // one bit per dword of configuration space
	var found uint8 // one bit per cfg_type
	for p := uint16(c.Read8(bdf, cfgCapPtr) &^ 3); p != 0; {
		if p < capListMin || p > capListMax-4 || seen&(1<<(p/4)) != 0 {
			return caps, ErrCapList
		}
		seen |= 1 << (p / 4)
		id, next := c.Read8(bdf, p), uint16(c.Read8(bdf, p+1)&^3)
		if id == capVendor {
			n, typ, bar := uint16(c.Read8(bdf, p+2)), c.Read8(bdf, p+3), c.Read8(bdf, p+4)
			need := uint16(capHdrLen)
			if typ == capNotify {
				need = capNotLen
			}
			if n < need || p+need > capListMax {
				return caps, ErrCapList
			}
			if typ >= capCommon && typ <= capDevice && found&(1<<typ) == 0 && bar <= 5 {
				found |= 1 << typ
				s := PCIStruct{BAR: bar, Offset: c.Read32(bdf, p+8), Length: c.Read32(bdf, p+12)}
				switch typ {
				case capCommon:
					caps.Common = s
				case capNotify:
					caps.Notify = s
					caps.NotifyMul = c.Read32(bdf, p+16)
				case capISR:
					caps.ISR = s
				case capDevice:
					caps.Device = s
				}
			}
		}
		p = next
	}
	switch {
	case found&(1<<capCommon) == 0 || caps.Common.Length < pciCommonLen:
		return caps, ErrNoCommon
	case found&(1<<capNotify) == 0 || caps.Notify.Length < 2:
		return caps, ErrNoNotify
	case found&(1<<capISR) == 0 || caps.ISR.Length < 1:
		return caps, ErrNoISR
	}
	for _, s := range [...]*PCIStruct{&caps.Common, &caps.Notify, &caps.ISR, &caps.Device} {
		if e := c.resolve(bdf, s); e != OK {
			return caps, e
		}
	}
	return caps, OK
}

// resolve sets s.Addr from its BAR (nothing for an absent structure).
func (c PCIConfig) resolve(bdf uint16, s *PCIStruct) Error {
	if s.Length == 0 {
		return OK
	}
	base, e := c.bar(bdf, s.BAR)
	if e != OK {
		return e
	}
	s.Addr = base + uint64(s.Offset)
	if s.Addr < base || s.Addr+uint64(s.Length) < s.Addr {
		return ErrBARRange
	}
	return OK
}

// bar is the physical address a memory BAR was assigned.
func (c PCIConfig) bar(bdf uint16, i uint8) (uint64, Error) {
	v := c.Read32(bdf, cfgBAR0+4*uint16(i))
	if v&1 != 0 {
		return 0, ErrIOBAR
	}
	a := uint64(v &^ 0xf)
	if v>>1&3 == 2 { // 64-bit: the next BAR holds the high half
		if i == 5 {
			return 0, ErrBARRange
		}
		a |= uint64(c.Read32(bdf, cfgBAR0+4*uint16(i+1))) << 32
	}
	if a == 0 {
		return 0, ErrBARUnassigned
	}
	return a, OK
}

// OpenPCI opens the virtio function at bdf: it checks the IDs, finds the
// structures (Caps), and enables memory decoding and bus mastering (the
// device's DMA to the rings) in the command register. physOff turns the
// BARs' physical addresses into virtual ones (the physical map's base;
// the caller maps the BARs as device memory). It does not touch the
// device's status: Negotiate starts with a reset.
func OpenPCI(c PCIConfig, bdf uint16, physOff uintptr) (Device, Error) {
	_, t, present, ok := c.virtioType(bdf)
	if !present {
		return Device{}, ErrNoDevice
	}
	if !ok {
		return Device{}, ErrNotVirtio
	}
	caps, e := c.Caps(bdf)
	if e != OK {
		return Device{}, e
	}
	c.Enable(bdf)
	return Device{
		pci:       true,
		typ:       t,
		regs:      uintptr(caps.Common.Addr) + physOff,
		notify:    uintptr(caps.Notify.Addr) + physOff,
		notifyMul: caps.NotifyMul,
		notifyLen: caps.Notify.Length,
		isr:       uintptr(caps.ISR.Addr) + physOff,
		cfg:       uintptr(caps.Device.Addr) + physOff,
		cfgLen:    caps.Device.Length,
	}, OK
}
