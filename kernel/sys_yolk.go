package kernel

import (
	"sync/atomic"
	"unsafe"
	"yolk/boot"

	"yolk/drivers/clock"
	"yolk/kernel/abi"
	"yolk/kernel/calllog"
	"yolk/kernel/mm"
	"yolk/kernel/testcall"
	"yolk/sched"
)

// yolk's private system calls (kernel/abi): the kernel's counters for the
// self-tests, and the kernel-side halves of the self-tests and benchmarks.
// Those that need nothing of the kernel's state are package testcall's
// (its Env is callEnv, calls.go).

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
		Syscalls:   int64(calllog.Calls()),
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
	st.Signals = int64(atomic.LoadUint64(&sigs.Delivered))
	st.ConsoleIRQs = int64(atomic.LoadUint64(&conIn.IRQs))
	st.ConsoleWaits = int64(atomic.LoadUint64(&conIn.Waits))
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
		return testcall.CPUStats[callEnv](a0, int(a1))
	case abi.SysLockTest:
		return 0, testcall.LockTest(int(a0), int(a1), int(a2), a3)
	case abi.SysFrameOf:
		return mm.FrameOf(a0), 0
	case abi.SysTrace:
		return testcall.Trace(int(a0), a1, int(a2))
	case abi.SysUnmapped:
		return uintptr(calllog.Unimplemented()), 0
	case abi.SysNumCPU:
		return uintptr(sched.NumCPU()), 0
	case abi.SysNICInject:
		return 0, nicDev.Inject(a0, a1)
	case abi.SysTaskInfo:
		return 0, sysTaskInfo(int32(a0), a1)
	case abi.SysKStackTest:
		return 0, testcall.KStackTest(int(a0), a1)
	}
	return 0, abi.ENOSYS
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
		IntrMask: w.IntrMask, Pending: atomic.LoadUint64(&sigs.Pending[i]), Mask: sigs.Mask[i],
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
