package nvme

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/mmio"
)

// Register access; hosted tests replace them with a model.
var (
	read32  = mmio.Read32
	write32 = mmio.Write32
)

// Info is what the controller is.
type Info struct {
	Serial   [20]byte // SN, ASCII, space-padded
	Model    [40]byte // MN
	Firmware [8]byte  // FR
	Version  uint32   // VS: major<<16 | minor<<8 | tertiary
	MQES     uint32   // CAP.MQES+1: entries a queue may have
	Stride   uint32   // doorbell stride in bytes (4 << CAP.DSTRD)
	ReadyTO  int64    // CAP.TO in ns: the bound on reset and enable
	MDTS     uint32   // the largest transfer in bytes (0: no limit)
	// MaxTransfer is what one RW command moves (MDTS and the bounce
	// pages); MaxDirect what one RWPhys command moves (MDTS and the
	// PRP list page).
	MaxTransfer, MaxDirect uint32
	VWC                    bool   // a volatile write cache: Flush matters
	ONCS                   uint16 // optional NVM commands (bit 2: Dataset Management)
	NN                     uint32 // namespaces the controller has
	Queues                 int    // I/O queue pairs in use
	Granted                int    // queue pairs Set Features granted
}

// Namespace is one namespace in use.
type Namespace struct {
	ID        uint32
	Blocks    uint64 // NSZE, in logical blocks
	BlockSize uint32 // 512 or 4096
	Sectors   uint64 // the size in 512-byte sectors
	ReadOnly  bool   // NSATTR: write protected
}

// Stats are a controller's counters.
type Stats struct {
	Commands, Errors, Timeouts, Aborts, Late, Interrupts, Polled, Stray uint64
}

// queue is a submission and completion queue pair and its command
// slots. Done, Status and Result are per slot: Done is 1 once the
// controller answered (Status the completion's status field without the
// phase bit, Result its DW0). Atomic where the comments say.
type queue struct {
	id             uint16
	entries        uint16
	slots          uint8
	sq, cq         uintptr
	sqPhys, cqPhys uint64
	tail, head     uint16 // the SQ tail and CQ head the driver wrote last
	phase          uint32 // the phase bit new completion entries carry

	free uint32 // slots no command holds, a bit each
	busy uint32 // slots whose command the controller has
	lost uint32 // slots whose command timed out and is still the controller's
	// abandoned are lost slots their owner released: the command's
	// completion frees them.
	abandoned uint32
	freeSeq   uint32 // bumped when a slot comes back (atomic)
	Done      [Slots]uint32
	Status    [Slots]uint32
	Result    [Slots]uint32
	sent      [Slots]int64 // when each slot's command was sent (its owner's)

	prp      [Slots]uintptr // each slot's PRP list page
	prpPhys  [Slots]uint64
	data     [Slots][DataPages]uintptr // each slot's bounce pages (I/O queues)
	dataPhys [Slots][DataPages]uint64
}

// Ctrl is one NVMe controller. Pointer-free; its zero value is no
// controller (Open).
type Ctrl[E Env] struct {
	env    E
	regs   uintptr
	stride uintptr
	info   Info
	ns     [MaxNamespaces]Namespace
	nns    int
	q      [MaxQueues + 1]queue
	nq     int32  // I/O queues live (atomic: Interrupt reads it)
	failed uint32 // 1: every request ends in EIO (atomic)
	idle   uint32 // never changes: quiesce sleeps on it
	// Timeout bounds each command (ns): DefaultTimeout after Open.
	Timeout int64
	// Name is the controller's name for the console (nvme0).
	Name [8]byte

	Stats Stats
}

func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func (c *Ctrl[E]) read64(off uintptr) uint64 {
	return uint64(read32(c.regs+off)) | uint64(read32(c.regs+off+4))<<32
}

func (c *Ctrl[E]) write64(off uintptr, v uint64) {
	write32(c.regs+off, uint32(v))
	write32(c.regs+off+4, uint32(v>>32))
}

// sqDoorbell and cqDoorbell are queue q's doorbells (§3.1.24, 3.1.25).
func (c *Ctrl[E]) sqDoorbell(q uint16) uintptr { return c.regs + regDB + 2*uintptr(q)*c.stride }
func (c *Ctrl[E]) cqDoorbell(q uint16) uintptr {
	return c.regs + regDB + (2*uintptr(q)+1)*c.stride
}

// waitReady spins until CSTS.RDY reads want, CSTS.CFS sets, or CAP.TO
// passes (the controller is being reset or enabled: nothing to block
// on).
func (c *Ctrl[E]) waitReady(want uint32) Error {
	deadline := c.env.Now() + c.info.ReadyTO
	for {
		s := read32(c.regs + regCSTS)
		if s != 0xffffffff && s&cstsCFS != 0 {
			return ErrFatal
		}
		if s&cstsRDY == want {
			return OK
		}
		if c.env.Now() >= deadline {
			if want != 0 {
				return ErrEnableTime
			}
			return ErrResetTime
		}
	}
}

// Open resets and enables the controller whose registers are at regs,
// identifies it and its namespaces and creates up to cpus I/O queue
// pairs (at most MaxQueues), with memory from m: the admin queue, and a
// pair of queue pages, Slots PRP list pages and Slots*DataPages bounce
// pages for each I/O queue (about 2.2 MiB a queue). Before tasks run
// the environment's Wait polls. On an error the controller is left
// disabled.
func Open[E Env, M Mem](c *Ctrl[E], env E, regs uintptr, m M, cpus int) Error {
	*c = Ctrl[E]{} // cleared in place: a literal with fields may be built on the stack first
	c.env, c.regs, c.Timeout = env, regs, DefaultTimeout
	in := &c.info
	capv := c.read64(regCAP)
	in.MQES = uint32(capv&0xffff) + 1
	in.Stride = 4 << (capv >> 32 & 0xf)
	c.stride = uintptr(in.Stride)
	in.ReadyTO = int64(capv>>24&0xff) * 500e6
	if in.ReadyTO == 0 {
		in.ReadyTO = 500e6
	}
	in.Version = read32(regs + regVS)
	switch {
	case capv>>37&1 == 0:
		return ErrNoNVM
	case capv>>48&0xf != 0:
		return ErrPageSize
	case in.MQES < 2:
		return ErrQueueSize
	}
	// Reset (§7.6.1): clear CC.EN and wait for CSTS.RDY to follow.
	if read32(regs+regCC)&ccEnable != 0 || read32(regs+regCSTS)&cstsRDY != 0 {
		write32(regs+regCC, 0)
		if e := c.waitReady(0); e != OK {
			return e
		}
	}
	aq := &c.q[0]
	if !initQueue(aq, 0, adminEntries, AdminSlots, m, 0) {
		return ErrMemory
	}
	write32(regs+regAQA, uint32(aq.entries-1)<<16|uint32(aq.entries-1))
	c.write64(regASQ, aq.sqPhys)
	c.write64(regACQ, aq.cqPhys)
	write32(regs+regINTMC, 1) // pin-based: unmasked
	write32(regs+regCC, ccIOCQES|ccIOSQES|ccEnable)
	if e := c.waitReady(cstsRDY); e != OK {
		write32(regs+regCC, 0)
		return e
	}
	if e := c.identify(); e != OK {
		c.disable()
		return e
	}
	if e := createQueues(c, m, cpus); e != OK {
		c.disable()
		return e
	}
	return OK
}

// initQueue sets up queue pair q (id, entries, slots) in pages from m,
// with data bounce pages for each slot. (A function with M a type
// parameter, not a method taking a Mem: an interface argument would be
// a conversion, which allocates.)
func initQueue[M Mem](q *queue, id, entries uint16, slots uint8, m M, data int) bool {
	*q = queue{}
	q.id, q.entries, q.slots, q.phase = id, entries, slots, 1
	if q.sq, q.sqPhys = m.Page(); q.sq == 0 {
		return false
	}
	if q.cq, q.cqPhys = m.Page(); q.cq == 0 {
		return false
	}
	for s := 0; s < int(slots); s++ {
		if q.prp[s], q.prpPhys[s] = m.Page(); q.prp[s] == 0 {
			return false
		}
		for i := 0; i < data; i++ {
			if q.data[s][i], q.dataPhys[s][i] = m.Page(); q.data[s][i] == 0 {
				return false
			}
		}
	}
	q.free = 1<<slots - 1
	return true
}

// disable clears CC.EN: the controller drops its queues and stops its
// DMA (§7.6.1).
func (c *Ctrl[E]) disable() {
	write32(c.regs+regCC, 0)
	c.waitReady(0)
}

// admin runs an admin command in slot 0's pages (Open's, one at a time)
// and returns its status and DW0.
func (c *Ctrl[E]) admin(cdw0 uint32, nsid uint32, prp1 uint64, cdw10, cdw11 uint32) (uint32, uint32, Errno) {
	q := &c.q[0]
	s := c.get(q)
	var cmd command
	cmd.w[0] = cdw0
	cmd.w[1] = nsid
	cmd.w[6], cmd.w[7] = uint32(prp1), uint32(prp1>>32)
	cmd.w[10], cmd.w[11] = cdw10, cdw11
	e := c.do(q, s, &cmd)
	st, res := atomic.LoadUint32(&q.Status[s]), atomic.LoadUint32(&q.Result[s])
	c.release(q, s)
	return st, res, e
}

// identify reads Identify Controller and the namespaces' Identify
// Namespace (§5.15) into slot 0's PRP page, which Open's admin commands
// use as their data buffer.
func (c *Ctrl[E]) identify() Error {
	aq := &c.q[0]
	buf, phys := aq.prp[AdminSlots-1], aq.prpPhys[AdminSlots-1] // the last slot's list page: admin commands here need no list
	if _, _, e := c.admin(opIdentify, 0, phys, cnsController, 0); e != 0 {
		return ErrIdentify
	}
	in := &c.info
	copyIn(in.Serial[:], buf+4)
	copyIn(in.Model[:], buf+24)
	copyIn(in.Firmware[:], buf+64)
	if mdts := *at[uint8](buf + 77); mdts != 0 && mdts < 20 {
		in.MDTS = pageSize << mdts
	}
	in.ONCS = *at[uint16](buf + 520)
	in.VWC = *at[uint8](buf + 525)&1 != 0
	in.NN = *at[uint32](buf + 516)
	in.MaxTransfer, in.MaxDirect = DataPages*pageSize, (prpEntries+1)*pageSize
	if in.MDTS != 0 {
		in.MaxTransfer, in.MaxDirect = min(in.MaxTransfer, in.MDTS), min(in.MaxDirect, in.MDTS)
	}
	for id := uint32(1); id <= in.NN && id <= 64 && c.nns < MaxNamespaces; id++ {
		if _, _, e := c.admin(opIdentify, id, phys, cnsNamespace, 0); e != 0 {
			continue
		}
		nsze := *at[uint64](buf)
		flbas := *at[uint8](buf + 26) & 0xf
		lbaf := *at[uint32](buf + 128 + 4*uintptr(flbas))
		ms, lbads := lbaf&0xffff, lbaf>>16&0xff
		if nsze == 0 || ms != 0 || (lbads != 9 && lbads != 12) {
			continue // inactive, or a format this driver does not read
		}
		ro := *at[uint8](buf + 99)&1 != 0
		c.ns[c.nns] = Namespace{ID: id, Blocks: nsze, BlockSize: 1 << lbads, Sectors: nsze << (lbads - 9), ReadOnly: ro}
		c.nns++
	}
	if c.nns == 0 {
		return ErrNoNamespace
	}
	return OK
}

// createQueues asks for cpus I/O queue pairs (Set Features Number of
// Queues, §5.21.1.7) and creates those granted, a completion queue
// before its submission queue (§5.3, §5.4): pin-based interrupts on
// vector 0 for every completion queue.
func createQueues[E Env, M Mem](c *Ctrl[E], m M, cpus int) Error {
	want := uint32(max(1, min(cpus, MaxQueues)))
	in := &c.info
	st, res, e := c.admin(opSetFeatures, 0, 0, featNumQueues, (want-1)<<16|(want-1))
	n := want
	if e == 0 && st == 0 {
		n = min(want, res&0xffff+1, res>>16+1)
		in.Granted = int(min(res&0xffff, res>>16)) + 1
	} else {
		n = 1 // a controller that refuses the feature still has one pair
	}
	entries := uint16(min(ioEntries, in.MQES))
	slots := uint8(min(Slots, int(entries)-1))
	for i := uint16(1); i <= uint16(n); i++ {
		q := &c.q[i]
		if !initQueue(q, i, entries, slots, m, DataPages) {
			break
		}
		size := uint32(entries-1) << 16
		if st, _, e := c.admin(opCreateCQ, 0, q.cqPhys, size|uint32(i), 1|2); e != 0 || st != 0 {
			break // physically contiguous, interrupts enabled, vector 0
		}
		if st, _, e := c.admin(opCreateSQ, 0, q.sqPhys, size|uint32(i), uint32(i)<<16|1); e != 0 || st != 0 {
			c.admin(opDeleteCQ, 0, 0, uint32(i), 0)
			break
		}
		atomic.StoreInt32(&c.nq, int32(i))
	}
	if c.nq == 0 {
		return ErrNoQueues
	}
	in.Queues = int(c.nq)
	return OK
}

// Info is what the controller is; Namespaces its namespaces in use.
func (c *Ctrl[E]) Info() *Info                { return &c.info }
func (c *Ctrl[E]) Namespaces() []Namespace    { return c.ns[:c.nns] }
func (c *Ctrl[E]) Namespace(i int) *Namespace { return &c.ns[i] }

// Failed reports that the controller failed: every request ends in EIO.
func (c *Ctrl[E]) Failed() bool { return atomic.LoadUint32(&c.failed) != 0 }

func bytesAt(a uintptr, n int) []byte { return unsafe.Slice(at[byte](a), n) }

// copyIn fills dst from the memory at a, a byte at a time (a copy from
// bytesAt here trips Go 1.26's compiler: "disjointTypes" in lower).
func copyIn(dst []byte, a uintptr) {
	for i := range dst {
		dst[i] = *at[byte](a + uintptr(i))
	}
}
