package virtio

import "yolk/drivers/mmio"

// Register access; hosted tests replace them with models of the devices.
var (
	read8   = mmio.Read8
	write8  = mmio.Write8
	read16  = mmio.Read16
	write16 = mmio.Write16
	read32  = mmio.Read32
	write32 = mmio.Write32
)

// resetSpins bounds the wait for a reset to read back as status 0 (QEMU
// resets at the write; hardware may take a moment).
const resetSpins = 1 << 20

// configTries bounds the retries of a configuration read that the device
// changed underneath (the generation moved).
const configTries = 16

// Device is one virtio device behind either transport, opened by OpenMMIO
// or OpenPCI. It holds addresses only: a plain value, copyable, that may be
// a package-level variable.
type Device struct {
	pci       bool
	typ       uint32
	regs      uintptr // virtio-mmio: the register block; PCI: the common configuration
	notify    uintptr // PCI: the notify structure
	notifyMul uint32
	notifyLen uint32
	isr       uintptr // PCI: the ISR status byte
	cfg       uintptr // the device-specific configuration
	cfgLen    uint32
}

// Type is the virtio device type (TypeNet, Type9P, ...).
func (d *Device) Type() uint32 { return d.typ }

// IsPCI says which transport the device is behind.
func (d *Device) IsPCI() bool { return d.pci }

// Status reads the device status (Status* bits).
func (d *Device) Status() uint8 {
	if d.pci {
		return read8(d.regs + pciStatus)
	}
	return uint8(read32(d.regs + mmioStatus))
}

// SetStatus writes the device status; 0 resets the device.
func (d *Device) SetStatus(s uint8) {
	if d.pci {
		write8(d.regs+pciStatus, s)
		return
	}
	write32(d.regs+mmioStatus, uint32(s))
}

// Reset writes status 0 and waits for the device to read back 0 (§2.1.2,
// §4.1.4.3.2): every queue is disabled and every negotiated feature lost.
func (d *Device) Reset() Error {
	d.SetStatus(0)
	for i := 0; i < resetSpins; i++ {
		if d.Status() == 0 {
			return OK
		}
	}
	return ErrResetTimeout
}

// Fail sets FAILED: the driver gave up on the device.
func (d *Device) Fail() { d.SetStatus(d.Status() | StatusFailed) }

// Ready sets DRIVER_OK, after the queues are set up (§3.1.1 step 8): the
// device starts using them.
func (d *Device) Ready() { d.SetStatus(d.Status() | StatusDriverOK) }

// Features reads the 64 feature bits the device offers.
func (d *Device) Features() uint64 {
	sel, val := uintptr(mmioDeviceFeaturesSel), uintptr(mmioDeviceFeatures)
	if d.pci {
		sel, val = pciDeviceFeatureSel, pciDeviceFeature
	}
	write32(d.regs+sel, 0)
	lo := read32(d.regs + val)
	write32(d.regs+sel, 1)
	hi := read32(d.regs + val)
	return uint64(hi)<<32 | uint64(lo)
}

// SetFeatures writes the feature bits the driver accepts.
func (d *Device) SetFeatures(f uint64) {
	sel, val := uintptr(mmioDriverFeaturesSel), uintptr(mmioDriverFeatures)
	if d.pci {
		sel, val = pciDriverFeatureSel, pciDriverFeature
	}
	write32(d.regs+sel, 0)
	write32(d.regs+val, uint32(f))
	write32(d.regs+sel, 1)
	write32(d.regs+val, uint32(f>>32))
}

// Negotiate runs the initialisation sequence up to the queues (§3.1.1
// steps 1-6): reset, ACKNOWLEDGE, DRIVER, the features — those of want the
// device offers, and VIRTIO_F_VERSION_1, which the device must offer —
// then FEATURES_OK, read back to see the device accepted them. It returns
// the features in force. On a refusal it sets FAILED. Next: Queue.Init and
// SetupQueue for each queue, the device-specific set-up, then Ready.
func (d *Device) Negotiate(want uint64) (uint64, Error) {
	if e := d.Reset(); e != OK {
		return 0, e
	}
	d.SetStatus(StatusAcknowledge)
	d.SetStatus(StatusAcknowledge | StatusDriver)
	offered := d.Features()
	if offered&FVersion1 == 0 {
		d.Fail()
		return 0, ErrNoVersion1
	}
	got := offered & (want | FVersion1)
	d.SetFeatures(got)
	d.SetStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK)
	if d.Status()&StatusFeaturesOK == 0 {
		d.Fail()
		return 0, ErrFeaturesRefused
	}
	return got, OK
}

// QueueMax is the largest size queue n may have; 0 if it does not exist.
func (d *Device) QueueMax(n uint16) uint16 {
	if d.pci {
		if n >= read16(d.regs+pciNumQueues) {
			return 0
		}
		write16(d.regs+pciQueueSelect, n)
		return read16(d.regs + pciQueueSize)
	}
	write32(d.regs+mmioQueueSel, uint32(n))
	m := read32(d.regs + mmioQueueNumMax)
	if m > MaxQueueSize {
		m = MaxQueueSize
	}
	return uint16(m)
}

// QueueFit is the size to give queue n: the largest power of two at most
// want and the device's maximum; 0 if the queue does not exist.
func (d *Device) QueueFit(n, want uint16) uint16 {
	size := min(d.QueueMax(n), want)
	for size&(size-1) != 0 {
		size &= size - 1
	}
	return size
}

// SetupQueue tells the device where q is (Queue.Init prepared it: its
// number, size and addresses) and enables it, after FEATURES_OK and before
// Ready. It records in q the register Notify writes.
func (d *Device) SetupQueue(q *Queue) Error {
	if !goodSize(q.size) {
		return ErrQueueSize
	}
	if d.pci {
		return d.setupPCI(q)
	}
	r := d.regs
	write32(r+mmioQueueSel, uint32(q.index))
	if read32(r+mmioQueueReady) != 0 {
		return ErrQueueInUse
	}
	max := read32(r + mmioQueueNumMax)
	if max == 0 {
		return ErrNoQueue
	}
	if uint32(q.size) > max {
		return ErrQueueSize
	}
	write32(r+mmioQueueNum, uint32(q.size))
	write64(r+mmioQueueDescLow, q.DescAddr())
	write64(r+mmioQueueDriverLow, q.DriverAddr())
	write64(r+mmioQueueDeviceLow, q.DeviceAddr())
	write32(r+mmioQueueReady, 1)
	q.notify, q.notify32 = r+mmioQueueNotify, true
	return OK
}

func (d *Device) setupPCI(q *Queue) Error {
	r := d.regs
	if q.index >= read16(r+pciNumQueues) {
		return ErrNoQueue
	}
	write16(r+pciQueueSelect, q.index)
	if read16(r+pciQueueEnable) != 0 {
		return ErrQueueInUse
	}
	max := read16(r + pciQueueSize)
	if max == 0 {
		return ErrNoQueue
	}
	if q.size > max {
		return ErrQueueSize
	}
	off := uint64(read16(r+pciQueueNotifyOff)) * uint64(d.notifyMul)
	if off+2 > uint64(d.notifyLen) {
		return ErrNotifyRange
	}
	write16(r+pciQueueSize, q.size)
	write64(r+pciQueueDesc, q.DescAddr())
	write64(r+pciQueueDriver, q.DriverAddr())
	write64(r+pciQueueDevice, q.DeviceAddr())
	write16(r+pciQueueEnable, 1)
	q.notify, q.notify32 = d.notify+uintptr(off), false
	return OK
}

// write64 writes a 64-bit register as two 32-bit halves, low first
// (§4.1.3.1 and §4.2.2 allow it; virtio-mmio has only 32-bit registers).
func write64(a uintptr, v uint64) {
	write32(a, uint32(v))
	write32(a+4, uint32(v>>32))
}

// Notify tells the device that queue q has new available chains (the
// queue's number written to its notify register, 32 bits on virtio-mmio,
// 16 on PCI). The write is ordered after the ring's (mmio's accesses).
func (d *Device) Notify(q *Queue) {
	if q.notify32 {
		write32(q.notify, uint32(q.index))
	} else {
		write16(q.notify, q.index)
	}
}

// Kick publishes q's new chains and notifies the device if it wants to be
// (Queue.Publish); it reports whether it did.
func (d *Device) Kick(q *Queue) bool {
	if q.Publish() {
		d.Notify(q)
		return true
	}
	return false
}

// Interrupt reads the interrupt status (IntUsed, IntConfig) and
// acknowledges it, deasserting a level-triggered line: virtio-mmio's
// InterruptStatus written back to InterruptACK; PCI's ISR byte, which the
// read clears (INTx; with MSI-X the ISR is not used). Call it from the
// device's interrupt handler before harvesting, so that a chain returned
// after the harvest raises the line again.
func (d *Device) Interrupt() uint32 {
	if d.pci {
		return uint32(read8(d.isr))
	}
	v := read32(d.regs + mmioInterruptStatus)
	if v != 0 {
		write32(d.regs+mmioInterruptACK, v)
	}
	return v
}

// ConfigGeneration changes whenever the device changes its configuration;
// a multi-field read is consistent if it reads the same before and after.
func (d *Device) ConfigGeneration() uint32 {
	if d.pci {
		return uint32(read8(d.regs + pciConfigGeneration))
	}
	return read32(d.regs + mmioConfigGeneration)
}

// ConfigLen is the size of the device-specific configuration (PCI: its
// structure's length; virtio-mmio: the 256 bytes the register block has
// room for).
func (d *Device) ConfigLen() uint32 { return d.cfgLen }

func (d *Device) inConfig(off, n uint32) bool {
	return off <= d.cfgLen && n <= d.cfgLen-off && off%n == 0
}

// Config8, Config16 and Config32 read a field of the device-specific
// configuration at offset off with an access of its width; a field outside
// the configuration, or misaligned, reads as 0.
func (d *Device) Config8(off uint32) uint8 {
	if !d.inConfig(off, 1) {
		return 0
	}
	return read8(d.cfg + uintptr(off))
}

func (d *Device) Config16(off uint32) uint16 {
	if !d.inConfig(off, 2) {
		return 0
	}
	return read16(d.cfg + uintptr(off))
}

func (d *Device) Config32(off uint32) uint32 {
	if !d.inConfig(off, 4) {
		return 0
	}
	return read32(d.cfg + uintptr(off))
}

// Config64 reads a 64-bit field as two 32-bit halves under one
// configuration generation (§2.4.1), retrying a few times if it moved.
func (d *Device) Config64(off uint32) uint64 {
	var v uint64
	for i := 0; i < configTries; i++ {
		g := d.ConfigGeneration()
		v = uint64(d.Config32(off)) | uint64(d.Config32(off+4))<<32
		if d.ConfigGeneration() == g {
			break
		}
	}
	return v
}

// ConfigBytes reads len(p) bytes from offset off, a byte at a time, under
// one configuration generation (retrying a few times if it moved); bytes
// outside the configuration read as 0. For byte arrays such as a MAC
// address.
func (d *Device) ConfigBytes(off uint32, p []byte) {
	for i := 0; i < configTries; i++ {
		g := d.ConfigGeneration()
		for j := range p {
			p[j] = d.Config8(off + uint32(j))
		}
		if d.ConfigGeneration() == g {
			return
		}
	}
}
