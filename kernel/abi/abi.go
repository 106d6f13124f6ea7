// Package abi is what the kernel and the programs it runs agree on beyond
// Linux's own numbering: the error numbers the kernel returns, yolk's
// private system calls (used by the self-tests) and the layouts they copy
// out, and the Linux system-call names by number (for strace and the
// ENOSYS log).
//
// A leaf: it imports only golang.org/x/sys/unix. It holds constants,
// types, read-only tables, the name lookup (SysName) and the TestCalls
// switch. Kernel context: the kernel calls SysName inside system calls,
// so nothing here allocates, stores Go pointers or calls the runtime. The kernel and the
// guest self-tests both import it, so a layout is declared once.
package abi

import "golang.org/x/sys/unix"

// Errno is a Linux error number; system calls return its negation.
type Errno uintptr

const (
	EPERM        = Errno(unix.EPERM)
	ENOENT       = Errno(unix.ENOENT)
	ESRCH        = Errno(unix.ESRCH)
	EINTR        = Errno(unix.EINTR)
	ECHILD       = Errno(unix.ECHILD)
	EAGAIN       = Errno(unix.EAGAIN)
	EBADF        = Errno(unix.EBADF)
	EACCES       = Errno(unix.EACCES)
	ENOMEM       = Errno(unix.ENOMEM)
	EFAULT       = Errno(unix.EFAULT)
	EEXIST       = Errno(unix.EEXIST)
	ENODEV       = Errno(unix.ENODEV)
	ENOTDIR      = Errno(unix.ENOTDIR)
	EINVAL       = Errno(unix.EINVAL)
	EMFILE       = Errno(unix.EMFILE)
	ESPIPE       = Errno(unix.ESPIPE)
	EPIPE        = Errno(unix.EPIPE)
	ENAMETOOLONG = Errno(unix.ENAMETOOLONG)
	ENOSYS       = Errno(unix.ENOSYS)
	ETIMEDOUT    = Errno(unix.ETIMEDOUT)
	EOPNOTSUPP   = Errno(unix.EOPNOTSUPP)
	ENOLCK       = Errno(unix.ENOLCK)
	EOVERFLOW    = Errno(unix.EOVERFLOW)
)

// TestCalls enables yolk's own system calls (below). An image that wants
// them sets it before it makes one — the self-test image, in its init;
// in every other image they are unknown calls (ENOSYS), since one stops
// the machine on request and another spins in the kernel with interrupts
// off. The one variable of this package: the kernel only reads it.
var TestCalls bool

// yolk's own system calls, outside Linux's numbering. The self-test image
// uses them to read the kernel's counters and to run kernel-side halves
// of tests and benchmarks (kernel/sys_yolk.go).
const (
	SysStats    = 0x1000 // copy Stats to a0
	SysSwitch   = 0x1001 // a0 task-switch round trips, a1 != 0: save-everything variant; returns ns
	SysUnmapped = 0x1002 // number of system calls answered ENOSYS so far
	SysCrash    = 0x1003 // a0 crash mode, a1 1+CPU (0: any): fault in kernel context
	SysNumCPU   = 0x1004 // number of CPUs the kernel brought up
	SysCPUStats = 0x1005 // copy a1 CPUs' CPUStats to a0; returns the CPU count
	SysLockTest = 0x1006 // a0 lock kind, a1 sections (<0: -µs), a2 work, a3 *LockTestOut
	SysFrameOf  = 0x1007 // the physical frame behind user or BSS page a0
	SysTrace    = 0x1008 // a0 = 0: scheduler trace off, 1: on (emptied), 2: copy up to a2 sched.TraceEvents to a1; returns how many
	SysTaskInfo = 0x1009 // copy the TaskInfo of thread a0 to a1; ESRCH if none
	// SysKStackTest maps the kernel stack of the last task slot with
	// this CPU's frames running out after a0 and copies KStackTestOut
	// to a1.
	SysKStackTest = 0x100a
	// 0x100b was SysProcRender, /proc's files before /proc was mounted.
)

// KStackTestOut is what SysKStackTest copies out (kernel/mm's KStackTest):
// 1 or 0 in the flags.
type KStackTestOut struct {
	WasMapped    int64 // the slot's stack was mapped before the call
	OK           int64 // AllocKStack succeeded
	Mapped       int64 // pages of the slot's stack mapped after it
	Taken, Freed int64 // frames the allocator gave it; of them, given back
	TableAdded   int64 // it added the page table that maps the slot
}

// TaskInfo is what SysTaskInfo copies out: the kernel's view of a thread,
// for a self-test's report of a wait that did not end. Racy: each field
// is read once, not all at one instant.
type TaskInfo struct {
	State     uint32 // 0 free, 1 running, 2 ready, 3 blocked (others: internal)
	Seq       uint32 // the thread's wait count
	OnCPU     int32  // 1 + the CPU running it, 0 if none
	Queued    uint32 // 1: on the list of the wait queue it last waited on
	Woken     uint32 // why its last wait ended: 0 woken, 1 timeout, 2 signal
	Pipe      int32  // the pipe whose wait queue that is, -1 if none
	Key       uint64
	CondAddr  uint64
	CondVal   uint32
	CondNow   uint32 // the word at CondAddr now, if it is a pipe's (kernel) counter
	Interrupt uint64 // 1: the wait was interruptible
	IntrMask  uint64 // the signal mask it waited with
	Pending   uint64 // the thread's pending signals now
	Mask      uint64 // its signal mask now
	Deadline  int64  // monotonic ns, 0: none
	Now       int64  // monotonic ns when read
	Latest    int64  // the deadline plus the wait's timer slack
}

// Stats is what SysStats copies out.
type Stats struct {
	FramesAll, FramesFree, PagesMapped int64
	Tasks                              int64
	NodesInUse, NodeBound              int64
	TSCHz, LAPICHz                     int64 // the clock's counter and the per-CPU timer (amd64: TSC, LAPIC; arm64: both CNTFRQ)
	Syscalls                           int64
	CPUs                               int64
	Shootdowns, ShootdownIPIs          int64 // TLB shootdowns; interrupts they sent
	ShootdownLazy                      int64 // idle CPUs marked stale instead
	NodesPeak, PeakBound               int64 // most queue nodes ever out, and its bound
	TSCSynced                          int64 // 1: the CPUs' counters are synchronised (amd64: verified, vDSO on; arm64: architectural)
	Preempts                           int64 // involuntary switches, all CPUs
	SpentFirst                         int64 // CPU-bound tasks run ahead of woken ones by the scheduler's starvation bound, all CPUs
	Signals                            int64 // asynchronous signals delivered
	ConsoleIRQs, ConsoleWaits          int64 // serial receive interrupts; console reads that blocked
	Sockets, SocketPages               int64 // socket slots in use (alive, or closed and still named); pages their rings hold
	PageTables                         int64 // the boot page tables' address (in the image, yet never the program's)
	ImageEnd                           int64 // the end of the image (its BSS); the frame pool's identity aliases are above
	TimerExpiries, TimerOverruns       int64 // POSIX and interval timers' expiries; of them, overruns (signal still pending, or periods passed unseen)
	TableFrames                        int64 // page tables in use below the boot's (user half, kernel stacks)
	FilePages, PipePages               int64 // pages file data holds (index pages included); pages pipes' buffers hold
	BSSFaulted                         int64 // BSS pages given back at boot and touched since (the program's or the kernel's globals)
}

// CPUStats is one CPU's counters (SysCPUStats).
type CPUStats struct {
	Switches, WakeIPIs, TimerIRQs, Shootdowns uint64
	LockHalts, LockKicks                      uint64 // spin-lock waits that halted; interrupts that ended them
	PreemptIPIs                               uint64 // interrupts sent to preempt another CPU's task for a woken one
}

// Kernel locks SysLockTest can exercise.
const (
	LockTWA      = iota // sched.TWALock: the kernel's spin lock
	LockTicket          // the classic ticket lock (baseline)
	LockTTAS            // test-and-test-and-set (baseline: the old kernel lock)
	LockTWASpin         // the TWA lock whose waiters never halt (baseline)
	LockCES             // sched.Mutex: the kernel's blocking mutex, CES handoff
	LockDispatch        // sched.Mutex with Dispatch: wake the waiter and continue
	NumLockKinds
)

// LockTestOut is what one SysLockTest call reports.
type LockTestOut struct {
	Done       int64  // critical sections this call ran
	NS         int64  // time in the call
	Violations int64  // sections that saw another owner inside
	Waited     int64  // mutex acquisitions handed over by a contended Unlock
	SameCPU    int64  // of those, the new owner resumed on the unlocker's CPU
	HandoffNS  int64  // their total time from the Unlock to the new owner running
	Counter    uint64 // the shared counter after the call
}
