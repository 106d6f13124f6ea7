package virtio

import (
	"encoding/binary"
	"testing"
)

// env is a driver's world: RAM, a device behind a transport, the
// transport opened.
type env struct {
	t     *testing.T
	b     *bus
	r     *ram
	v     *vdev
	d     Device
	dev   *ringDev
	space *pciSpace // PCI only
}

const (
	mmioBase  = 0x0a00_3e00
	ecamBase  = 0x3000_0000
	bar4Addr  = 0x80_0000_0000 // a 64-bit BAR above 4 GiB: common, ISR, notify
	bar1Addr  = 0xfe80_0000    // a 32-bit BAR: the device configuration
	notifyMul = 4
	physOff   = 0x1000_0000_0000 // the "physical map" base the PCI test opens through
	pciDev    = 3
)

type transport struct {
	name string
	open func(t *testing.T, offered uint64, queueMax ...uint16) *env
}

var transports = []transport{{"mmio", mmioEnv}, {"pci", pciEnv}}

func newEnv(t *testing.T, offered uint64, queueMax []uint16) *env {
	e := &env{t: t, b: newBus(t), r: newRAM(4 << 20)}
	e.v = newVdev(t, e.r, offered, queueMax...)
	e.dev = &ringDev{t: t, v: e.v, r: e.r}
	return e
}

// mmioEnv is a virtio-mmio version 2 network device.
func mmioEnv(t *testing.T, offered uint64, queueMax ...uint16) *env {
	e := newEnv(t, offered, queueMax)
	e.b.add(mmioBase, MMIOSize, &mmioModel{v: e.v, magic: MMIOMagic, version: 2, deviceID: TypeNet})
	d, err := OpenMMIO(mmioBase)
	if err != OK {
		t.Fatalf("OpenMMIO: %v", err)
	}
	e.d = d
	return e
}

// pciEnv is a modern virtio PCI network device at 00:03.0 behind ECAM.
func pciEnv(t *testing.T, offered uint64, queueMax ...uint16) *env {
	e := newEnv(t, offered, queueMax)
	e.space = newPCISpace(t)
	buildVirtioFn(e.space.fn(BDF(0, pciDev, 0)), 0x1041, standardCaps)
	e.b.add(ecamBase, 1<<20, e.space)
	e.b.add(physOff+bar4Addr, 0x1000, &pciCommon{v: e.v})
	e.b.add(physOff+bar4Addr+0x1000, 0x1000, &pciISR{v: e.v})
	e.b.add(physOff+bar4Addr+0x3000, 0x1000, &pciNotify{v: e.v, mul: notifyMul})
	e.b.add(physOff+bar1Addr, 0x100, &pciDevCfg{v: e.v})
	d, err := OpenPCI(PCIConfig{ECAM: ecamBase}, BDF(0, pciDev, 0), physOff)
	if err != OK {
		t.Fatalf("OpenPCI: %v", err)
	}
	e.d = d
	return e
}

// capSpec is one capability in a built configuration space.
type capSpec struct {
	at, next     uint8
	id, len      uint8
	typ, bar     uint8
	offset, size uint32
	mul          uint32
}

// standardCaps is the layout QEMU gives a modern device, give or take the
// order: MSI-X, then the virtio structures, the last a PCI_CFG window.
var standardCaps = []capSpec{
	{at: 0x40, next: 0x50, id: 0x11, len: 12},
	{at: 0x50, next: 0x60, id: capVendor, len: 16, typ: capCommon, bar: 4, offset: 0, size: 0x1000},
	{at: 0x60, next: 0x70, id: capVendor, len: 16, typ: capISR, bar: 4, offset: 0x1000, size: 0x1000},
	{at: 0x70, next: 0x80, id: capVendor, len: 16, typ: capDevice, bar: 1, offset: 0, size: 0x100},
	{at: 0x80, next: 0x98, id: capVendor, len: 20, typ: capNotify, bar: 4, offset: 0x3000, size: 0x1000, mul: notifyMul},
	{at: 0x98, next: 0, id: capVendor, len: 20, typ: 5, bar: 0},
}

// buildVirtioFn writes a virtio function's header, BARs and capabilities.
func buildVirtioFn(f *[4096]byte, device uint16, caps []capSpec) {
	binary.LittleEndian.PutUint16(f[0:], VendorVirtio)
	binary.LittleEndian.PutUint16(f[2:], device)
	binary.LittleEndian.PutUint16(f[cfgStatus:], statusCaps)
	binary.LittleEndian.PutUint16(f[cfgSubsystem:], uint16(TypeNet))
	binary.LittleEndian.PutUint32(f[cfgBAR0+4*1:], bar1Addr)                        // 32-bit memory BAR
	binary.LittleEndian.PutUint32(f[cfgBAR0+4*4:], uint32(bar4Addr&0xffffffff)|0xc) // 64-bit prefetchable
	binary.LittleEndian.PutUint32(f[cfgBAR0+4*5:], uint32(bar4Addr>>32))
	if len(caps) > 0 {
		f[cfgCapPtr] = caps[0].at
	}
	for _, c := range caps {
		p := f[c.at:]
		p[0], p[1], p[2], p[3], p[4] = c.id, c.next, c.len, c.typ, c.bar
		if c.id == capVendor && c.len >= 16 {
			binary.LittleEndian.PutUint32(p[8:], c.offset)
			binary.LittleEndian.PutUint32(p[12:], c.size)
		}
		if c.len >= 20 {
			binary.LittleEndian.PutUint32(p[16:], c.mul)
		}
	}
}

// start negotiates and sets up queues 0..len(sizes)-1 of the given sizes in
// fresh RAM, then sets DRIVER_OK.
func (e *env) start(want uint64, sizes ...uint16) []*Queue {
	got, err := e.d.Negotiate(want)
	if err != OK {
		e.t.Fatalf("Negotiate: %v", err)
	}
	e.dev.events = got&FEventIdx != 0
	var qs []*Queue
	for i, s := range sizes {
		virt, phys := e.r.alloc(uint64(QueueBytes(s)), 4096)
		q := new(Queue)
		if err := q.Init(uint16(i), s, virt, phys, got&FEventIdx != 0); err != OK {
			e.t.Fatalf("Init: %v", err)
		}
		if err := e.d.SetupQueue(q); err != OK {
			e.t.Fatalf("SetupQueue(%d): %v", i, err)
		}
		qs = append(qs, q)
	}
	e.d.Ready()
	return qs
}
