package sched

import (
	"sync/atomic"
	"unsafe"

	"yolk/sched/queue"
)

// MaxTasks bounds the number of tasks alive at once.
const MaxTasks = 512

// Task states: the low 32 bits of Task.state. The high 32 bits count the
// task's waits (Block, Mutex.Lock), so that a waker that lost a race with
// another cannot wake a later wait of the same task: it compares and swaps
// the whole word, state and count together.
const (
	stFree    uint32 = iota // slot unused
	stRunning               // on a CPU
	stReady                 // on the ready queue, or being handed over
	stBlocked               // on a wait queue, a mutex queue and/or a timer heap
	stLimbo                 // switched away, its finalizer not yet run
)

// Finalizers a switch can name; the resumed task runs them on the previous
// task right after the switch.
const (
	finNone  uint32 = iota
	finReady        // put the previous task on the ready queue
	finBlock        // put it on its wait queue / timer, re-check its condition
	finMutex        // queue it on the mutex it waits for, unless that is free
	finExit         // retire it
)

// Task is a kernel thread of control.
type Task struct {
	item queue.Item // first: *Item converts back to *Task
	ctx  Context
	g    G

	KStackLo, KStackHi uintptr // kernel stack, set by the kernel
	UserFS             uintptr // user FS base (TLS), restored on return to user code
	TID                int32
	Kernel             bool // the kernel's own task, not one of the program's threads (set by its creator)

	state uint64 // atomic: wait count << 32 | state
	oncpu int32  // atomic: 1 + the CPU running the task, 0 if none
	fin   uint32 // finalizer named by the task that switched to this one
	prev  uintptr
	rnext uintptr // baseline ready queue link (lockedReady only)
	// used is the CPU time the task has had since it last blocked (added
	// up when it is switched away): Slice or more puts it on the spent
	// ready queue (queueFor).
	used int64
	// readyAt (atomic) is when the task last went on qSpent.
	readyAt int64

	// Blocking. wq, key, cond*, deadline and mx are set by the task itself
	// before it switches away; its finalizer publishes them.
	wq       uintptr // *WaitQueue
	key      uintptr // wake-up key (e.g. futex address)
	condAddr uintptr // block only while *condAddr == condVal
	condVal  uint32
	woken    Woken   // why the last wait ended
	intrAddr uintptr // interruptible wait: ends once *intrAddr&^intrMask != 0 (0: not interruptible)
	intrMask uint64
	deadline int64   // ns; 0 = none
	latest   int64   // deadline plus the wait's timer slack: the heap's order
	mx       uintptr // *Mutex being waited for
	mxHanded bool    // the mutex was handed over by an Unlock
	wnext    uintptr // wait-queue / mutex-queue links
	wprev    uintptr

	// Timer heap membership (timer.go), changed under the heap's lock.
	tcpu  int32   // atomic: 1 + the CPU whose heap holds the task, 0 if none
	tidx  int32   // index in that heap
	tseq  uint32  // the wait (seq) the entry is for
	tnext uintptr // list of tasks ExpireTimers woke

	// cpuTime is the CPU time the task used before its current run, in ns
	// (atomic; cputime.go).
	cpuTime int64
	// nvcsw and nivcsw count the task's switches away: it blocked, or
	// it was preempted or yielded with work left (atomic; cputime.go).
	nvcsw, nivcsw uint64
}

var tasks [MaxTasks]Task

// ntasks is one past the highest slot ever used.
var ntasks int32

var nextTID int32 = 1

func taskAt(a uintptr) *Task { return (*Task)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func wordAt(a uintptr) *uintptr { return (*uintptr)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func (t *Task) addr() uintptr { return uintptr(unsafe.Pointer(t)) }

// Index is t's slot number.
func (t *Task) Index() int {
	return int((t.addr() - uintptr(unsafe.Pointer(&tasks[0]))) / unsafe.Sizeof(Task{}))
}

// TaskAt returns slot i, for the kernel's per-task tables.
func TaskAt(i int) *Task { return &tasks[uint(i)%MaxTasks] }

// st is t's state without the wait count.
func (t *Task) st() uint32 { return uint32(atomic.LoadUint64(&t.state)) }

// seq is the number of t's current (or last) wait.
func (t *Task) seq() uint32 { return uint32(atomic.LoadUint64(&t.state) >> 32) }

// setState sets t's state, keeping the wait count. Only whoever owns t may
// (the CPU running it or switching it, or the winner of a wake-up): wakers
// only ever compare-and-swap from stBlocked.
func (t *Task) setState(s uint32) {
	atomic.StoreUint64(&t.state, atomic.LoadUint64(&t.state)&^0xffffffff|uint64(s))
}

// blockState is setState(stBlocked) for commitBlock, which then reads the
// futex word and the signal word, while a waker writes one of them and
// then reads the state: the state is written with an atomic swap, so that
// it is visible before those loads. Go's atomic store is enough for that
// on amd64 (XCHG) and on Arm's cores (STLR, then LDAR), but not under
// QEMU's TCG emulating arm64 on an x86 host, where it can wait in the
// host's store buffer while the loads read (sync/twa's UnlockSlot has the
// measurement): a signal sent then found the task not yet blocked and
// itself not yet pending, and was lost for the wait (pause, sigsuspend
// and sigtimedwait, which have no wait queue whose lock orders them).
func (t *Task) blockState() {
	atomic.SwapUint64(&t.state, atomic.LoadUint64(&t.state)&^0xffffffff|uint64(stBlocked))
}

// newWait starts a new wait of the running task t.
func (t *Task) newWait() {
	atomic.StoreUint64(&t.state, (atomic.LoadUint64(&t.state)>>32+1)<<32|uint64(stRunning))
}

// casState moves t from state from to state to within wait seq.
func (t *Task) casState(seq, from, to uint32) bool {
	return atomic.CompareAndSwapUint64(&t.state, uint64(seq)<<32|uint64(from), uint64(seq)<<32|uint64(to))
}

// Alloc takes a free task slot and gives it a fresh TID. The caller sets its
// kernel stack (if KStackHi is 0: slots keep their stack when reused), then
// Prepare and Ready. It returns nil if all slots are in use.
func Alloc() *Task {
	for i := range tasks {
		t := &tasks[i]
		if t.casState(t.seq(), stFree, stLimbo) {
			for {
				n := atomic.LoadInt32(&ntasks)
				if int32(i) < n || atomic.CompareAndSwapInt32(&ntasks, n, int32(i)+1) {
					break
				}
			}
			t.TID = atomic.AddInt32(&nextTID, 1) - 1
			t.UserFS, t.Kernel = 0, false
			t.fin, t.prev = finNone, 0
			t.wq, t.key, t.condAddr, t.deadline, t.latest, t.mx = 0, 0, 0, 0, 0, 0
			t.woken, t.intrAddr = WakeUp, 0
			t.used = 0
			atomic.StoreInt64(&t.cpuTime, 0)
			atomic.StoreUint64(&t.nvcsw, 0)
			atomic.StoreUint64(&t.nivcsw, 0)
			return t
		}
	}
	return nil
}

// SetStack gives t the kernel stack [lo, hi).
func (t *Task) SetStack(lo, hi uintptr) {
	t.KStackLo, t.KStackHi = lo, hi
	t.g.SetStack(lo, hi)
}

// G returns the address of t's g, for the kernel's TLS setup.
func (t *Task) G() uintptr { return uintptr(unsafe.Pointer(&t.g)) }

// Current returns the task running on this CPU.
func Current() *Task { return taskAt(This().cur) }

// FindTID returns the live task with thread ID tid, or nil; never a CPU's
// idle task nor the kernel's own (Kernel): tgkill, thread clocks and
// SIGEV_THREAD_ID timers say ESRCH/EINVAL for them, as Linux for a TID
// outside the process. The task may exit at any time after; callers only use the
// result for per-slot state that a new task in the slot resets.
func FindTID(tid int32) *Task {
	for i := int32(0); i < atomic.LoadInt32(&ntasks); i++ {
		if t := &tasks[i]; t.TID == tid && t.Alive() && !t.Kernel {
			return t
		}
	}
	return nil
}

// Alive reports whether t's slot holds a task other than a CPU's idle
// task.
func (t *Task) Alive() bool {
	if t.st() == stFree {
		return false
	}
	for i := 0; i < ncpu; i++ {
		if cpus[i].idle == t.addr() {
			return false
		}
	}
	return true
}

// RunningOn is the CPU running t, or -1.
func (t *Task) RunningOn() int { return int(atomic.LoadInt32(&t.oncpu)) - 1 }

// Live counts tasks that are not free.
func Live() int {
	n := 0
	for i := int32(0); i < atomic.LoadInt32(&ntasks); i++ {
		if tasks[i].st() != stFree {
			n++
		}
	}
	return n
}
