package virtio

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"unsafe"
)

// The models: guest RAM (a byte slice the driver reaches at its address and
// the device at a made-up physical address), a register bus that routes
// the driver's register accesses to models of a virtio-mmio register file,
// of PCI configuration space and of a modern virtio PCI function's
// structures, the virtio device state behind both transports (status,
// features, queues, interrupt status, configuration), and the device side
// of the split ring over the same RAM, reached only through the addresses
// the driver wrote into the registers.

// ram is guest memory. The driver sees it at virt, the device at phys.
type ram struct {
	buf  []uint64 // 8-byte aligned backing
	mem  []byte
	virt uintptr
	phys uint64
	next uint64 // bump allocator, offset
}

const ramPhys = 0x4000_0000

func newRAM(size int) *ram {
	buf := make([]uint64, size/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), size)
	return &ram{buf: buf, mem: mem, virt: uintptr(unsafe.Pointer(&buf[0])), phys: ramPhys}
}

// alloc returns n bytes aligned to align (a power of two).
func (r *ram) alloc(n, align uint64) (virt uintptr, phys uint64) {
	r.next = (r.next + align - 1) &^ (align - 1)
	off := r.next
	r.next += n
	if r.next > uint64(len(r.mem)) {
		panic("model RAM exhausted")
	}
	return r.virt + uintptr(off), r.phys + off
}

// slice is the device's view of [phys, phys+n); ok is false outside RAM.
func (r *ram) slice(phys uint64, n uint32) ([]byte, bool) {
	if phys < r.phys || phys-r.phys > uint64(len(r.mem)) || uint64(n) > uint64(len(r.mem))-(phys-r.phys) {
		return nil, false
	}
	o := phys - r.phys
	return r.mem[o : o+uint64(n)], true
}

func (r *ram) word(phys uint64) *uint32 {
	b, ok := r.slice(phys, 4)
	if !ok || phys%4 != 0 {
		panic(fmt.Sprintf("model: word at %#x outside RAM or misaligned", phys))
	}
	return (*uint32)(unsafe.Pointer(&b[0]))
}

// region is one register block on the bus.
type region interface {
	read(off uintptr, size int) uint64
	write(off uintptr, size int, v uint64)
}

type mapping struct {
	base, size uintptr
	r          region
}

// bus routes the package's register accessors to the regions.
type bus struct {
	t    *testing.T
	maps []mapping
}

func newBus(t *testing.T) *bus {
	b := &bus{t: t}
	saved := [...]any{read8, write8, read16, write16, read32, write32}
	read8 = func(a uintptr) uint8 { return uint8(b.read(a, 1)) }
	read16 = func(a uintptr) uint16 { return uint16(b.read(a, 2)) }
	read32 = func(a uintptr) uint32 { return uint32(b.read(a, 4)) }
	write8 = func(a uintptr, v uint8) { b.write(a, 1, uint64(v)) }
	write16 = func(a uintptr, v uint16) { b.write(a, 2, uint64(v)) }
	write32 = func(a uintptr, v uint32) { b.write(a, 4, uint64(v)) }
	t.Cleanup(func() {
		read8, write8 = saved[0].(func(uintptr) uint8), saved[1].(func(uintptr, uint8))
		read16, write16 = saved[2].(func(uintptr) uint16), saved[3].(func(uintptr, uint16))
		read32, write32 = saved[4].(func(uintptr) uint32), saved[5].(func(uintptr, uint32))
	})
	return b
}

func (b *bus) add(base, size uintptr, r region) { b.maps = append(b.maps, mapping{base, size, r}) }

func (b *bus) find(a uintptr, size int) (region, uintptr) {
	if a%uintptr(size) != 0 {
		b.t.Errorf("misaligned %d-byte register access at %#x", size, a)
	}
	for _, m := range b.maps {
		if a >= m.base && a+uintptr(size) <= m.base+m.size {
			return m.r, a - m.base
		}
	}
	b.t.Fatalf("%d-byte register access at %#x: nothing there", size, a)
	return nil, 0
}

func (b *bus) read(a uintptr, size int) uint64 {
	r, off := b.find(a, size)
	return r.read(off, size)
}

func (b *bus) write(a uintptr, size int, v uint64) {
	r, off := b.find(a, size)
	r.write(off, size, v)
}

// vqueue is a queue as the device knows it.
type vqueue struct {
	max, size            uint16
	desc, driver, device uint64
	ready                bool
	lastAvail, used      uint16 // the device's ring positions
	interrupts, notifies int
	suppressedInterrupts int
	noNotify             bool
	outstanding          int
}

// vdev is a virtio device's state behind either transport.
type vdev struct {
	t                      *testing.T
	r                      *ram
	offered                uint64
	refuse                 bool // clear FEATURES_OK whatever was written
	accepted               uint64
	devSel, drvSel         uint32
	status                 uint8
	statusLog              []uint8
	resetReads             int // status reads that still show the old value after a reset
	queues                 []vqueue
	sel                    uint16
	notified               []uint16
	isr                    uint32
	config                 []byte
	gen                    uint32
	genBumpOnConfigRead    int // bump the generation on this many config reads
	featuresWrittenOutside bool
}

func newVdev(t *testing.T, r *ram, offered uint64, queueMax ...uint16) *vdev {
	v := &vdev{t: t, r: r, offered: offered, config: make([]byte, 64)}
	for _, m := range queueMax {
		v.queues = append(v.queues, vqueue{max: m, size: m})
	}
	return v
}

func (v *vdev) readStatus() uint8 {
	if v.resetReads > 0 {
		v.resetReads--
		return 0x0f
	}
	return v.status
}

func (v *vdev) setStatus(s uint8) {
	v.statusLog = append(v.statusLog, s)
	if s == 0 {
		v.status, v.accepted = 0, 0
		for i := range v.queues {
			q := &v.queues[i]
			*q = vqueue{max: q.max, size: q.max}
		}
		return
	}
	if v.status&^s != 0 && s&StatusFailed == 0 {
		v.t.Errorf("status %#x clears bits of %#x", s, v.status)
	}
	if s&StatusDriver != 0 && s&StatusAcknowledge == 0 {
		v.t.Errorf("status %#x: DRIVER without ACKNOWLEDGE", s)
	}
	if s&StatusFeaturesOK != 0 && v.status&StatusFeaturesOK == 0 {
		if v.refuse || v.accepted&^v.offered != 0 || v.accepted&FVersion1 == 0 {
			s &^= StatusFeaturesOK
		}
	}
	if s&StatusDriverOK != 0 && s&StatusFeaturesOK == 0 && s&StatusFailed == 0 {
		v.t.Errorf("status %#x: DRIVER_OK without FEATURES_OK", s)
	}
	v.status = s
}

func (v *vdev) writeFeatures(sel, val uint32) {
	if v.status&StatusDriver == 0 || v.status&StatusFeaturesOK != 0 {
		v.featuresWrittenOutside = true
	}
	if sel == 0 {
		v.accepted = v.accepted&^0xffffffff | uint64(val)
	} else if sel == 1 {
		v.accepted = v.accepted&0xffffffff | uint64(val)<<32
	}
}

func (v *vdev) deviceFeatures(sel uint32) uint32 {
	if sel > 1 {
		return 0
	}
	return uint32(v.offered >> (32 * sel))
}

// q is the selected queue, nil if there is none.
func (v *vdev) q() *vqueue {
	if int(v.sel) >= len(v.queues) {
		return nil
	}
	return &v.queues[v.sel]
}

func (v *vdev) queueWrite(what string) *vqueue {
	if v.status&StatusFeaturesOK == 0 || v.status&StatusDriverOK != 0 {
		v.t.Errorf("queue %s written in status %#x", what, v.status)
	}
	q := v.q()
	if q == nil {
		v.t.Errorf("queue %s written for missing queue %d", what, v.sel)
		return &vqueue{}
	}
	return q
}

func (v *vdev) configRead(off uintptr, size int) uint64 {
	if v.genBumpOnConfigRead > 0 {
		v.genBumpOnConfigRead--
		v.gen++
	}
	if int(off)+size > len(v.config) {
		return 0
	}
	var x uint64
	for i := size - 1; i >= 0; i-- {
		x = x<<8 | uint64(v.config[int(off)+i])
	}
	return x
}

// mmioModel is a virtio-mmio register block; only 32-bit accesses to the
// registers are allowed.
type mmioModel struct {
	v                        *vdev
	magic, version, deviceID uint32
}

func setLoHi(p *uint64, hi bool, x uint64) {
	if hi {
		*p = *p&0xffffffff | x<<32
	} else {
		*p = *p&^0xffffffff | x
	}
}

func (m *mmioModel) read(off uintptr, size int) uint64 {
	v := m.v
	if off >= mmioConfig {
		return v.configRead(off-mmioConfig, size)
	}
	if size != 4 {
		v.t.Errorf("virtio-mmio register %#x read with %d bytes", off, size)
	}
	switch off {
	case mmioMagic:
		return uint64(m.magic)
	case mmioVersion:
		return uint64(m.version)
	case mmioDeviceID:
		return uint64(m.deviceID)
	case mmioVendorID:
		return 0x554d4551
	case mmioDeviceFeatures:
		return uint64(v.deviceFeatures(v.devSel))
	case mmioQueueNumMax:
		if q := v.q(); q != nil {
			return uint64(q.max)
		}
		return 0
	case mmioQueueReady:
		if q := v.q(); q != nil && q.ready {
			return 1
		}
		return 0
	case mmioInterruptStatus:
		return uint64(v.isr)
	case mmioStatus:
		return uint64(v.readStatus())
	case mmioConfigGeneration:
		return uint64(v.gen)
	}
	v.t.Errorf("virtio-mmio: read of register %#x", off)
	return 0
}

func (m *mmioModel) write(off uintptr, size int, x uint64) {
	v := m.v
	if size != 4 || off >= mmioConfig {
		v.t.Errorf("virtio-mmio: %d-byte write at %#x", size, off)
		return
	}
	switch off {
	case mmioDeviceFeaturesSel:
		v.devSel = uint32(x)
	case mmioDriverFeaturesSel:
		v.drvSel = uint32(x)
	case mmioDriverFeatures:
		v.writeFeatures(v.drvSel, uint32(x))
	case mmioQueueSel:
		v.sel = uint16(x)
	case mmioQueueNum:
		v.queueWrite("size").size = uint16(x)
	case mmioQueueReady:
		v.queueWrite("ready").ready = x == 1
	case mmioQueueDescLow, mmioQueueDescLow + 4:
		setLoHi(&v.queueWrite("desc").desc, off&4 != 0, x)
	case mmioQueueDriverLow, mmioQueueDriverLow + 4:
		setLoHi(&v.queueWrite("driver").driver, off&4 != 0, x)
	case mmioQueueDeviceLow, mmioQueueDeviceLow + 4:
		setLoHi(&v.queueWrite("device").device, off&4 != 0, x)
	case mmioQueueNotify:
		v.notify(uint16(x))
	case mmioInterruptACK:
		v.isr &^= uint32(x)
	case mmioStatus:
		v.setStatus(uint8(x))
	default:
		v.t.Errorf("virtio-mmio: write of register %#x", off)
	}
}

func (v *vdev) notify(n uint16) {
	v.notified = append(v.notified, n)
	if int(n) < len(v.queues) {
		v.queues[n].notifies++
	} else {
		v.t.Errorf("notify of missing queue %d", n)
	}
}

// pciCommon is the common configuration structure; every field must be
// accessed with its own width (§4.1.3.1; the 64-bit ones as two halves).
type pciCommon struct{ v *vdev }

var commonWidth = map[uintptr]int{
	pciDeviceFeatureSel: 4, pciDeviceFeature: 4, pciDriverFeatureSel: 4, pciDriverFeature: 4,
	pciMSIXConfig: 2, pciNumQueues: 2, pciStatus: 1, pciConfigGeneration: 1,
	pciQueueSelect: 2, pciQueueSize: 2, pciQueueMSIXVector: 2, pciQueueEnable: 2, pciQueueNotifyOff: 2,
	pciQueueDesc: 4, pciQueueDesc + 4: 4, pciQueueDriver: 4, pciQueueDriver + 4: 4, pciQueueDevice: 4, pciQueueDevice + 4: 4,
}

func (c *pciCommon) check(op string, off uintptr, size int) {
	if w, ok := commonWidth[off]; !ok || w != size {
		c.v.t.Errorf("common configuration: %d-byte %s at %#x", size, op, off)
	}
}

func (c *pciCommon) read(off uintptr, size int) uint64 {
	c.check("read", off, size)
	v := c.v
	q := v.q()
	switch off {
	case pciDeviceFeature:
		return uint64(v.deviceFeatures(v.devSel))
	case pciNumQueues:
		return uint64(len(v.queues))
	case pciStatus:
		return uint64(v.readStatus())
	case pciConfigGeneration:
		return uint64(uint8(v.gen))
	case pciQueueSize:
		if q != nil {
			return uint64(q.size)
		}
	case pciQueueEnable:
		if q != nil && q.ready {
			return 1
		}
	case pciQueueNotifyOff:
		return uint64(v.sel) // queue n notifies at n·multiplier
	default:
		v.t.Errorf("common configuration: read of %#x", off)
	}
	return 0
}

func (c *pciCommon) write(off uintptr, size int, x uint64) {
	c.check("write", off, size)
	v := c.v
	switch off {
	case pciDeviceFeatureSel:
		v.devSel = uint32(x)
	case pciDriverFeatureSel:
		v.drvSel = uint32(x)
	case pciDriverFeature:
		v.writeFeatures(v.drvSel, uint32(x))
	case pciStatus:
		v.setStatus(uint8(x))
	case pciQueueSelect:
		v.sel = uint16(x)
	case pciQueueSize:
		q := v.queueWrite("size")
		if uint16(x) > q.max {
			v.t.Errorf("queue size %d above the maximum %d", x, q.max)
		}
		q.size = uint16(x)
	case pciQueueEnable:
		v.queueWrite("enable").ready = x == 1
	case pciQueueDesc, pciQueueDesc + 4:
		setLoHi(&v.queueWrite("desc").desc, off&4 != 0, x)
	case pciQueueDriver, pciQueueDriver + 4:
		setLoHi(&v.queueWrite("driver").driver, off&4 != 0, x)
	case pciQueueDevice, pciQueueDevice + 4:
		setLoHi(&v.queueWrite("device").device, off&4 != 0, x)
	default:
		v.t.Errorf("common configuration: write of %#x", off)
	}
}

// pciNotify is the notify structure: queue n's register is at n·mul.
type pciNotify struct {
	v   *vdev
	mul uintptr
}

func (n *pciNotify) read(off uintptr, size int) uint64 {
	n.v.t.Errorf("notify structure read at %#x", off)
	return 0
}

func (n *pciNotify) write(off uintptr, size int, x uint64) {
	if size != 2 || off%n.mul != 0 || uint64(off/n.mul) != x {
		n.v.t.Errorf("notify: %d-byte write of %d at %#x (multiplier %d)", size, x, off, n.mul)
	}
	n.v.notify(uint16(x))
}

// pciISR is the ISR status byte: a read returns and clears it.
type pciISR struct{ v *vdev }

func (i *pciISR) read(off uintptr, size int) uint64 {
	if off != 0 || size != 1 {
		i.v.t.Errorf("ISR: %d-byte read at %#x", size, off)
	}
	x := i.v.isr
	i.v.isr = 0
	return uint64(x)
}

func (i *pciISR) write(off uintptr, size int, x uint64) { i.v.t.Errorf("ISR written") }

// pciDevCfg is the device-specific configuration structure.
type pciDevCfg struct{ v *vdev }

func (d *pciDevCfg) read(off uintptr, size int) uint64 { return d.v.configRead(off, size) }
func (d *pciDevCfg) write(off uintptr, size int, x uint64) {
	d.v.t.Errorf("device configuration written")
}

// pciSpace is configuration space for bus 0, reached through ECAM (or the
// ports, on amd64): 4 KiB per function, absent functions read all ones.
// Only the command register may be written.
type pciSpace struct {
	t   *testing.T
	fns map[uint16]*[4096]byte
}

func newPCISpace(t *testing.T) *pciSpace { return &pciSpace{t: t, fns: map[uint16]*[4096]byte{}} }

func (s *pciSpace) fn(bdf uint16) *[4096]byte {
	f := s.fns[bdf]
	if f == nil {
		f = new([4096]byte)
		s.fns[bdf] = f
	}
	return f
}

func (s *pciSpace) cfgRead(bdf uint16, reg uintptr, size int) uint64 {
	f := s.fns[bdf]
	if f == nil {
		return 1<<(8*size) - 1
	}
	var x uint64
	for i := size - 1; i >= 0; i-- {
		x = x<<8 | uint64(f[int(reg)+i])
	}
	return x
}

func (s *pciSpace) cfgWrite(bdf uint16, reg uintptr, size int, x uint64) {
	if reg != cfgCommand || size != 2 {
		s.t.Errorf("configuration space of %#x: %d-byte write at %#x", bdf, size, reg)
		return
	}
	if f := s.fns[bdf]; f != nil {
		binary.LittleEndian.PutUint16(f[reg:], uint16(x))
	}
}

func (s *pciSpace) read(off uintptr, size int) uint64 {
	if size != 4 {
		s.t.Errorf("ECAM: %d-byte read at %#x", size, off)
	}
	return s.cfgRead(uint16(off>>12), off&0xfff, size)
}

func (s *pciSpace) write(off uintptr, size int, x uint64) {
	s.cfgWrite(uint16(off>>12), off&0xfff, size, x)
}

// ringDev is the device side of the split rings: it reads the queues the
// driver set up through the registers, from the physical addresses it was
// given, and checks every chain it is handed.
type ringDev struct {
	t      *testing.T
	v      *vdev
	r      *ram
	events bool // VIRTIO_F_EVENT_IDX in force
}

type seg struct {
	addr  uint64
	len   uint32
	write bool
}

func (d *ringDev) le16(phys uint64) uint16 {
	b, ok := d.r.slice(phys, 2)
	if !ok {
		d.t.Fatalf("device read at %#x outside RAM", phys)
	}
	return binary.LittleEndian.Uint16(b)
}

// pop takes the next available chain of queue n.
func (d *ringDev) pop(n int) (head uint16, segs []seg, ok bool) {
	q := &d.v.queues[n]
	if !q.ready {
		d.t.Fatalf("device: queue %d used before it was enabled", n)
	}
	availIdx := uint16(atomic.LoadUint32(d.r.word(q.driver)) >> 16)
	if availIdx == q.lastAvail {
		return 0, nil, false
	}
	if uint16(availIdx-q.lastAvail) > q.size {
		d.t.Fatalf("device: avail idx %d is %d ahead of %d, queue size %d", availIdx, availIdx-q.lastAvail, q.lastAvail, q.size)
	}
	head = d.le16(q.driver + 4 + 2*uint64(q.lastAvail%q.size))
	q.lastAvail++
	if d.events { // a device that asks for a notification at every new chain
		atomic.StoreUint32(d.r.word(q.device+4+8*uint64(q.size)), uint32(q.lastAvail))
	}
	i, seenWrite := head, false
	for steps := 0; ; steps++ {
		if i >= q.size || steps >= int(q.size) {
			d.t.Fatalf("device: chain from %d: descriptor %d, step %d", head, i, steps)
		}
		b, _ := d.r.slice(q.desc+16*uint64(i), 16)
		s := seg{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint32(b[8:]), false}
		flags := binary.LittleEndian.Uint16(b[12:])
		s.write = flags&descWrite != 0
		if !s.write && seenWrite {
			d.t.Fatalf("device: chain from %d: a readable descriptor after a writable one", head)
		}
		seenWrite = seenWrite || s.write
		segs = append(segs, s)
		if flags&descNext == 0 {
			break
		}
		i = binary.LittleEndian.Uint16(b[14:])
	}
	q.outstanding++
	return head, segs, true
}

// push returns a chain with written bytes written, and raises the
// interrupt if the driver wants one.
func (d *ringDev) push(n int, head uint16, written uint32) {
	q := &d.v.queues[n]
	e := q.device + 4 + 8*uint64(q.used%q.size)
	b, _ := d.r.slice(e, 8)
	binary.LittleEndian.PutUint32(b, uint32(head))
	binary.LittleEndian.PutUint32(b[4:], written)
	old := q.used
	q.used++
	var flags uint32
	if q.noNotify {
		flags = usedNoNotify
	}
	atomic.StoreUint32(d.r.word(q.device), uint32(q.used)<<16|flags)
	q.outstanding--
	word := atomic.LoadUint32(d.r.word(q.driver))
	want := uint16(word)&availNoInterrupt == 0
	if d.events {
		event := uint16(atomic.LoadUint32(d.r.word(q.driver + 4 + 2*uint64(q.size))))
		want = needEvent(event, q.used, old)
	}
	if want {
		q.interrupts++
		d.v.isr |= IntUsed
	} else {
		q.suppressedInterrupts++
	}
}

// setNoNotify sets or clears the used ring's NO_NOTIFY flag.
func (d *ringDev) setNoNotify(n int, on bool) {
	q := &d.v.queues[n]
	q.noNotify = on
	var flags uint32
	if on {
		flags = usedNoNotify
	}
	atomic.StoreUint32(d.r.word(q.device), uint32(q.used)<<16|flags)
}

// setAvailEvent writes avail_event.
func (d *ringDev) setAvailEvent(n int, e uint16) {
	q := &d.v.queues[n]
	atomic.StoreUint32(d.r.word(q.device+4+8*uint64(q.size)), uint32(e))
}

// checkFreeList checks that q's free list and outstanding chains together
// hold every descriptor exactly once, and that the free count is right.
func checkFreeList(t *testing.T, q *Queue) {
	t.Helper()
	owner := make([]int, q.size) // 0 none, 1 free, 2+head in a chain
	d := q.freeHead
	for i := uint16(0); i < q.numFree; i++ {
		if d >= q.size || owner[d] != 0 {
			t.Fatalf("free list: descriptor %d at position %d (out of range or seen twice)", d, i)
		}
		owner[d] = 1
		d = q.shadowNext(d)
	}
	outstanding := 0
	for h := uint16(0); h < q.size; h++ {
		n, _ := q.shadowChain(h)
		if n == 0 {
			continue
		}
		d := h
		for i := uint16(0); i < n; i++ {
			if owner[d] != 0 {
				t.Fatalf("chain from %d: descriptor %d also %d", h, d, owner[d])
			}
			owner[d] = 2 + int(h)
			d = q.shadowNext(d)
		}
		outstanding += int(n)
	}
	var lost []int
	for i, o := range owner {
		if o == 0 {
			lost = append(lost, i)
		}
	}
	if len(lost) != 0 || int(q.numFree)+outstanding != int(q.size) {
		sort.Ints(lost)
		t.Fatalf("descriptors lost %v; free %d + outstanding %d != %d", lost, q.numFree, outstanding, q.size)
	}
}
