package sched

import (
	"sync/atomic"
	"unsafe"

	"yolk/sched/queue"
)

// MaxTasks bounds the number of tasks alive at once.
const MaxTasks = 256

// Task states.
const (
	stFree    uint32 = iota // slot unused
	stRunning               // on a CPU
	stReady                 // on the ready queue, or about to be
	stBlocked               // on a wait queue and/or waiting for its deadline
	stLimbo                 // switched away, its finalizer not yet run
)

// Finalizers a switch can name; the resumed task runs them on the previous
// task right after the switch.
const (
	finNone  uint32 = iota
	finReady        // put the previous task on the ready queue
	finBlock        // put it on its wait queue / timer, re-check its condition
	finExit         // retire it
)

// Context is what the minimal switch saves.
type Context struct {
	SP, BP uintptr
}

// Task is a kernel thread of control.
type Task struct {
	item queue.Item // first: *Item converts back to *Task
	ctx  Context
	g    G

	KStackLo, KStackHi uintptr // kernel stack, set by the kernel
	UserFS             uintptr // user FS base (TLS), restored on return to user code
	TID                int32

	state uint32 // atomic
	fin   uint32 // finalizer named by the task that switched to this one
	prev  uintptr

	// Blocking. wq, cond* and deadline are set by the task itself before it
	// switches away; the finalizer publishes them.
	wq       uintptr // *WaitQueue
	key      uintptr // wake-up key (e.g. futex address)
	condAddr uintptr // block only while *condAddr == condVal
	condVal  uint32
	deadline int64 // ns; 0 = none
	wakeAt   int64 // atomic: deadline once published
	timedOut bool
	wnext    uintptr // wait-queue links
	wprev    uintptr
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

// Alloc takes a free task slot and gives it a fresh TID. The caller sets its
// kernel stack (if KStackHi is 0: slots keep their stack when reused), then
// Prepare and Ready. It returns nil if all slots are in use.
func Alloc() *Task {
	for i := range tasks {
		t := &tasks[i]
		if atomic.CompareAndSwapUint32(&t.state, stFree, stLimbo) {
			for {
				n := atomic.LoadInt32(&ntasks)
				if int32(i) < n || atomic.CompareAndSwapInt32(&ntasks, n, int32(i)+1) {
					break
				}
			}
			t.TID = atomic.AddInt32(&nextTID, 1) - 1
			t.UserFS = 0
			t.fin, t.prev = finNone, 0
			t.wq, t.key, t.condAddr, t.deadline = 0, 0, 0, 0
			t.timedOut = false
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

// Prepare makes t's first switch "return" to pc with SP at sp (a trampoline
// that calls FinishSwitch first). sp must leave room below it.
func (t *Task) Prepare(sp, pc uintptr) {
	sp -= 8
	*wordAt(sp) = pc
	t.ctx = Context{SP: sp}
}

// Current returns the task running on this CPU.
func Current() *Task { return taskAt(This().cur) }

// Live counts tasks that are not free.
func Live() int {
	n := 0
	for i := int32(0); i < atomic.LoadInt32(&ntasks); i++ {
		if atomic.LoadUint32(&tasks[i].state) != stFree {
			n++
		}
	}
	return n
}
