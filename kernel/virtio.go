package kernel

import "yolk/drivers/virtio"

// virtioAttach gives virtio device d, found by the arch's virtioInit at
// where/base with interrupt irq, to its driver: the first network device
// is the NIC (nic.go), 9p devices are shares (share.go). It reports
// whether the device is used, so that its interrupt is routed.
func virtioAttach(d virtio.Device, where string, base uint64, irq uint32) bool {
	switch d.Type() {
	case virtio.TypeNet:
		return nicOpen(d, where, base, irq)
	case virtio.Type9P:
		return shareAttach(d, where, base, irq)
	case virtio.TypeBlock:
		ok, e := blks.Attach(d, where, base, irq)
		if e != virtio.OK {
			nicRefused(where, base, e)
		}
		return ok
	}
	return false
}

// virtioCatchUp does line irq's interrupt work once, for the devices on it,
// just after the arch's virtioInit has routed the line at the interrupt
// controller. A device can raise its line between DRIVER_OK and that
// routing — the NIC, when the host's frames wait for it (a Linux host's
// IPv6 router solicitations on a fresh tap) — and the controller may not
// have recorded it: QEMU's I/O APIC ignores a rise on a masked pin still in
// edge mode, its GIC latches nothing for a disabled level-mode SPI that is
// then made edge. The line, still high, never rises again, so no
// interrupt would ever come; reading the devices' interrupt status here
// lowers it (and takes what they had), and the next event raises it
// anew.
func virtioCatchUp(irq uint32) {
	if irq == nicIRQ && nicIRQ != 0 {
		nicInterrupt()
	}
	shares.Interrupt(irq)
	blks.Interrupt(irq)
}
