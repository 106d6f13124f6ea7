package kernel

import (
	"sync/atomic"
	"unsafe"
	"yolk/boot"

	"yolk/drivers/clock"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
	"yolk/sync/twa"
	"yolk/sync/twa/baseline"
)

// yolk's private system calls (kernel/abi): the kernel's counters for the
// self-tests, and the kernel-side halves of the self-tests and benchmarks.
// They run kernel-context code, such as the kernel's own locks inside the
// kernel, on as many CPUs as the guest program has threads in those calls.

var lockTest struct {
	twa      sched.TWALock
	twaSpin  twa.Lock[twa.Spin] // the TWA lock whose waiters never halt (baseline)
	ticket   baseline.Ticket[twa.Spin]
	ttas     baseline.TTAS[twa.Spin]
	mutex    [2]sched.Mutex // CES, dispatch
	counter  uint64         // guarded by the lock under test
	owner    int32          // atomic: TID inside the critical section
	dispInit uint32
}

// sysLockTest runs critical sections of lock kind: n of them if n > 0 (it
// stops early after maxLockTestNS, and says how many it ran), or for -n
// microseconds if n < 0 (at most 10⁶ either way). Each reads the shared counter, marks its
// owner, spins work PAUSEs, checks it is still the owner, and writes the
// counter back incremented: without mutual exclusion increments get lost
// and owners collide.
// maxLockTestNS bounds a counted sysLockTest call: its sections run with
// interrupts off, and with more vCPUs than host cores a FIFO spin lock's
// handover can take milliseconds, so 100 sections could keep a CPU from
// answering a TLB shootdown for its 5 s deadline.
const maxLockTestNS = 50e6

func sysLockTest(kind, n int, work int, out uintptr) abi.Errno {
	// At most a million sections or a second a call: the sections run
	// with interrupts off, and -n is bounded before it is multiplied.
	if kind < 0 || kind >= abi.NumLockKinds || work < 0 || work > 1e6 || n > 1e6 || n < -1e6 ||
		!mm.UserW(out, unsafe.Sizeof(abi.LockTestOut{})) {
		return abi.EINVAL
	}
	if atomic.CompareAndSwapUint32(&lockTest.dispInit, 0, 1) {
		lockTest.mutex[1].Dispatch = true
	}
	me := sched.Current().TID
	var r abi.LockTestOut
	start := clock.Nanotime()
	end := start - int64(n)*1000
	if n > 0 {
		end = start + maxLockTestNS
	}
	for (n < 0 || r.Done < int64(n)) && clock.Nanotime() < end {
		waited := false
		switch kind {
		case abi.LockTWA:
			lockTest.twa.Lock()
		case abi.LockTicket:
			lockTest.ticket.Lock()
		case abi.LockTTAS:
			lockTest.ttas.Lock()
		case abi.LockTWASpin:
			lockTest.twaSpin.Lock()
		default:
			m := &lockTest.mutex[kind-abi.LockCES]
			if waited = m.Lock(); waited {
				r.Waited++
				r.HandoffNS += clock.Nanotime() - m.HandoffAt
				if sched.This().ID+1 == int(m.HandoffCPU) {
					r.SameCPU++
				}
			}
		}
		v := lockTest.counter
		atomic.StoreInt32(&lockTest.owner, me)
		for i := 0; i < work; i++ {
			sched.Pause()
		}
		if atomic.LoadInt32(&lockTest.owner) != me {
			r.Violations++
		}
		lockTest.counter = v + 1
		switch kind {
		case abi.LockTWA:
			lockTest.twa.Unlock()
		case abi.LockTicket:
			lockTest.ticket.Unlock()
		case abi.LockTTAS:
			lockTest.ttas.Unlock()
		case abi.LockTWASpin:
			lockTest.twaSpin.Unlock()
		default:
			lockTest.mutex[kind-abi.LockCES].Unlock()
		}
		r.Done++
	}
	r.NS = clock.Nanotime() - start
	r.Counter = atomic.LoadUint64(&lockTest.counter)
	return mm.Put(out, r)
}

func sysCPUStats(p uintptr, n int) (uintptr, abi.Errno) {
	n = min(n, sched.NumCPU())
	const size = unsafe.Sizeof(abi.CPUStats{})
	if n < 0 || !mm.UserW(p, uintptr(n)*size) {
		return 0, abi.EFAULT
	}
	for i := 0; i < n; i++ {
		c := sched.CPUAt(i)
		if e := mm.Put(p+uintptr(i)*size, abi.CPUStats{Switches: c.Switches(), WakeIPIs: c.WakeIPIs(),
			TimerIRQs: atomic.LoadUint64(&percpu[i].timer.fired), Shootdowns: mm.CPUShootdowns(i), PreemptIPIs: c.PreemptIPIs(),
			LockHalts: c.LockHalts(), LockKicks: c.LockKicks()}); e != 0 {
			return 0, e
		}
	}
	return uintptr(sched.NumCPU()), 0
}

var crashMode uint32

// sysCrash faults in kernel context as mode says, on CPU cpu1-1 (cpu1 0:
// any); on another CPU it returns EAGAIN, for the caller to try again from
// another thread.
func sysCrash(mode, cpu1 int) abi.Errno {
	if cpu1 > 0 && sched.This().ID != cpu1-1 {
		return abi.EAGAIN
	}
	switch mode {
	case crashFault:
		crashKernel()
	case crashConsole:
		conAcquire()
		crashKernel()
	case crashTrapStack, crashTrapNest:
		atomic.StoreUint32(&crashMode, uint32(mode))
		breakpoint()
	}
	return abi.EINVAL
}

// crashKernel writes to an address nothing maps, from kernel context: the
// page fault ends in the fault report.
//
//go:noinline
func crashKernel() {
	*at[uint64](0xffffa00000000000) = 1
}

// breakpointTrap is the #BP handler for the trap-stack crash modes.
func breakpointTrap(r *Regs) {
	switch atomic.LoadUint32(&crashMode) {
	case crashTrapStack:
		eatStack(0)
	case crashTrapNest:
		breakpoint() // again, one nesting level deeper each time
	}
	fault(r, "")
}

// eatStack recurses with 1 KiB frames until the stack check stops it.
//
//go:noinline
func eatStack(depth int) int {
	var buf [1024]byte
	buf[depth%len(buf)] = byte(depth)
	return eatStack(depth+1) + int(buf[(depth+7)%len(buf)])
}

func breakpoint()

// benchPartner is the kernel task the switch benchmark bounces to; one
// benchmark runs at a time (benchMu), since they share it and its stack.
var (
	benchPartner uintptr
	benchMu      sched.Mutex
)

func sysSwitchBench(n int, all bool) (uintptr, abi.Errno) {
	if n < 0 {
		return 0, abi.EINVAL
	}
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchPartner == 0 {
		t := sched.Alloc()
		if t == nil {
			return 0, abi.EAGAIN
		}
		if kernelStack(t) == 0 {
			oomKill()
		}
		benchPartner = uintptr(unsafe.Pointer(t))
	}
	return uintptr(sched.SwitchBench(at[sched.Task](benchPartner), n, all)), 0
}

func sysStats(p uintptr) abi.Errno {
	if !mm.UserW(p, unsafe.Sizeof(abi.Stats{})) {
		return abi.EFAULT
	}
	s := sched.ReadStats()
	m := mm.ReadStats()
	st := abi.Stats{
		FramesAll: m.FramesAll, FramesFree: m.FramesFree, PagesMapped: m.PagesMapped, TableFrames: m.TableFrames, BSSFaulted: m.BSSFaulted,
		Tasks: int64(s.Live), NodesInUse: int64(s.NodesInUse), NodeBound: int64(s.NodeBound),
		TSCHz: int64(clock.Hz()), LAPICHz: int64(timerHz()),
		Syscalls:   int64(atomic.LoadUint64(&nsyscalls)),
		CPUs:       int64(sched.NumCPU()),
		Shootdowns: int64(m.Shootdowns), ShootdownIPIs: int64(m.ShootdownIPIs),
		ShootdownLazy: int64(m.ShootdownLazy),
		NodesPeak:     int64(s.NodesPeak), PeakBound: int64(s.PeakBound),
	}
	st.FilePages, st.PipePages = vfs.Pages()
	if clockSynced() {
		st.TSCSynced = 1
	}
	for i := 0; i < sched.NumCPU(); i++ {
		st.Preempts += int64(sched.CPUAt(i).Preempts())
		st.SpentFirst += int64(sched.CPUAt(i).SpentFirst())
	}
	st.Signals = int64(atomic.LoadUint64(&sigDelivered))
	st.ConsoleIRQs = int64(atomic.LoadUint64(&conIn.irqs))
	st.ConsoleWaits = int64(atomic.LoadUint64(&conIn.waits))
	st.TimerExpiries = int64(timers.Fired())
	st.TimerOverruns = int64(timers.Overruns())
	socks, pages := sockets.Usage()
	st.Sockets, st.SocketPages = int64(socks), int64(pages)
	st.PageTables = int64(boot.PageTableRoot())
	st.ImageEnd = int64(imageEnd())
	return mm.Put(p, st)
}

// Crash modes of abi.SysCrash: ways to stop the machine from kernel
// context, for the tests of the fault report.
const (
	crashFault     = iota // a page fault in kernel code
	crashConsole          // the same while this CPU holds the console lock
	crashTrapStack        // a trap handler that outgrows its slice of the trap stack
	crashTrapNest         // traps nested deeper than the trap stack has slices
)

// sysYolk dispatches yolk's private calls, for an image that asked for
// them (abi.TestCalls, which the self-test image sets): one of them stops
// the machine on request, another spins in the kernel for up to a second,
// so in every other image they are unknown calls (ENOSYS, logged once).
func sysYolk(nr, a0, a1, a2, a3 uintptr) (uintptr, abi.Errno) {
	if !abi.TestCalls {
		logENOSYS(nr)
		return 0, abi.ENOSYS
	}
	switch nr {
	case abi.SysStats:
		return 0, sysStats(a0)
	case abi.SysSwitch:
		return sysSwitchBench(int(a0), a1 != 0)
	case abi.SysCrash:
		return 0, sysCrash(int(a0), int(a1))
	case abi.SysCPUStats:
		return sysCPUStats(a0, int(a1))
	case abi.SysLockTest:
		return 0, sysLockTest(int(a0), int(a1), int(a2), a3)
	case abi.SysFrameOf:
		return mm.FrameOf(a0), 0
	case abi.SysTrace:
		return sysTrace(int(a0), a1, int(a2))
	case abi.SysUnmapped:
		return uintptr(atomic.LoadUint64(&enosysN)), 0
	case abi.SysNumCPU:
		return uintptr(sched.NumCPU()), 0
	case abi.SysNICInject:
		return 0, sysNICInject(a0, a1)
	case abi.SysTaskInfo:
		return 0, sysTaskInfo(int32(a0), a1)
	case abi.SysKStackTest:
		return 0, sysKStackTest(int(a0), a1)
	case abi.SysProcRender:
		return sysProcRender(a0, a1, a2, a3) // procsnap.go
	}
	return 0, abi.ENOSYS
}

// sysKStackTest maps the kernel stack of the last task slot, which no
// task has unless MaxTasks are alive, with this CPU's frames running out
// after n (mm.KStackTest), and copies out what that left.
func sysKStackTest(n int, out uintptr) abi.Errno {
	if n < 0 || n > 64 {
		return abi.EINVAL
	}
	if !mm.UserW(out, unsafe.Sizeof(abi.KStackTestOut{})) {
		return abi.EFAULT
	}
	return mm.Put(out, mm.KStackTest(sched.MaxTasks-1, n))
}

// sysTrace turns the scheduler's trace on or off, or copies up to n of
// its events to p (sched/trace.go).
func sysTrace(op int, p uintptr, n int) (uintptr, abi.Errno) {
	switch op {
	case 0, 1:
		sched.SetTrace(op == 1)
		return 0, 0
	case 2:
	default:
		return 0, abi.EINVAL
	}
	const size = unsafe.Sizeof(sched.TraceEvent{})
	if n < 0 || n > 1<<20 || !mm.UserW(p, uintptr(n)*size) {
		return 0, abi.EFAULT
	}
	i, e := 0, abi.Errno(0)
	sched.TraceRead(func(ev *sched.TraceEvent) {
		if i < n && e == 0 {
			e = mm.Put(p+uintptr(i)*size, *ev)
			i++
		}
	})
	return uintptr(i), e
}

// sysTaskInfo copies the kernel's view of thread tid to p (abi.TaskInfo).
func sysTaskInfo(tid int32, p uintptr) abi.Errno {
	if !mm.UserW(p, unsafe.Sizeof(abi.TaskInfo{})) {
		return abi.EFAULT
	}
	t := sched.FindTID(tid)
	if t == nil {
		return abi.ESRCH
	}
	w := t.Info()
	i := t.Index()
	r := abi.TaskInfo{
		State: w.State, Seq: w.Seq, OnCPU: w.OnCPU, Woken: uint32(w.Woken), Pipe: -1,
		Key: uint64(w.Key), CondAddr: uint64(w.CondAddr), CondVal: w.CondVal,
		IntrMask: w.IntrMask, Pending: atomic.LoadUint64(&sigPending[i]), Mask: sigMask[i],
		Deadline: w.Deadline, Now: clock.Nanotime(), Latest: w.Latest,
	}
	if w.Queued {
		r.Queued = 1
	}
	if w.IntrAddr != 0 {
		r.Interrupt = 1
	}
	base, size := uintptr(unsafe.Pointer(&pipeWQ[0])), unsafe.Sizeof(pipeWQ[0])
	if w.Wq >= base && w.Wq < base+uintptr(len(pipeWQ))*size {
		r.Pipe = int32((w.Wq - base) / size)
		if c := vfs.PipeSeqAddr(int(r.Pipe)); c == w.CondAddr {
			r.CondNow = atomic.LoadUint32((*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&c))))
		}
	}
	return mm.CopyOut(p, (*[unsafe.Sizeof(abi.TaskInfo{})]byte)(unsafe.Pointer(&r))[:])
}
