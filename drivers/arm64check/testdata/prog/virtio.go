package main

import "yolk/drivers/virtio"

var (
	vdev virtio.Device
	vq   virtio.Queue
	bufs [2]virtio.Buffer
	fns  [4]virtio.PCIFunction
	mac  [6]byte
)

func virtioCalls() {
	d, err := virtio.OpenMMIO(0x0a000000)
	sink += uint64(len(err.String()))
	vdev = d
	c := virtio.PCIConfig{ECAM: 0x3f000000}
	n, _ := c.Virtio(0, fns[:])
	p, _ := virtio.OpenPCI(c, fns[0].BDF, 0)
	caps, _ := c.Caps(fns[0].BDF)
	c.Write16(virtio.BDF(0, 1, 0), 4, c.Read16(0, 4)+uint16(c.Read8(0, 6))+uint16(c.Read32(0, 8)))
	sink += uint64(n) + caps.Common.Addr + uint64(p.Type())
	got, _ := vdev.Negotiate(virtio.FEventIdx)
	sink += got + vdev.Features() + uint64(vdev.QueueMax(0)) + uint64(vdev.Status())
	vdev.SetFeatures(got)
	vdev.SetStatus(virtio.StatusAcknowledge)
	vdev.Reset()
	vq.Init(0, 256, 0x40100000, 0x40100000, true)
	vdev.SetupQueue(&vq)
	vdev.Ready()
	bufs[0] = virtio.Buffer{Addr: 0x40200000, Len: 12}
	h, _ := vq.Add(bufs[:], 1)
	vdev.Kick(&vq)
	if vq.Publish() {
		vdev.Notify(&vq)
	}
	vq.DisableInterrupts()
	if vq.EnableInterrupts() || vq.Pending() || vq.Broken() {
		sink++
	}
	head, length, _ := vq.Next()
	sink += uint64(h+head+vq.Free()+vq.Size()+vq.Index()) + uint64(length) + vq.DescAddr() + vq.DriverAddr() + vq.DeviceAddr()
	sink += uint64(vdev.Interrupt()+vdev.ConfigGeneration()+vdev.ConfigLen()+uint32(vdev.Config8(0))+uint32(vdev.Config16(0))+vdev.Config32(0)) + vdev.Config64(0)
	vdev.ConfigBytes(0, mac[:])
	sink += uint64(virtio.QueueBytes(256))
	if vdev.IsPCI() {
		vdev.Fail()
	}
}
