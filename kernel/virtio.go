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
