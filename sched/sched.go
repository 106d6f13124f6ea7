package sched

import (
	"sync/atomic"
	"unsafe"

	"yolk/sched/queue"
)

var (
	domain queue.Domain
	ready  queue.Queue
	// nodes: one per task, one dummy, two pooled per CPU (the paper's bound).
	nodes [MaxTasks + 1 + 2*MaxCPUs]queue.Node
)

// Init sets up the ready queue for ncpus processors and makes the calling
// context CPU 0's current task (the boot task, which later idles). It runs
// once, at boot, before the Go runtime starts; the clock is drivers/tsc.
func Init(ncpus int, bootStackLo, bootStackHi uintptr) *Task {
	if err := domain.Init(ncpus, nodes[:]); err != nil {
		return nil
	}
	if err := domain.InitQueue(&ready); err != nil {
		return nil
	}
	t := Alloc()
	t.SetStack(bootStackLo, bootStackHi)
	atomic.StoreUint32(&t.state, stRunning)
	c := This()
	c.cur, c.idle = t.addr(), t.addr()
	c.GSlot = uintptr(unsafe.Pointer(&t.g))
	c.KStackTop = bootStackHi
	return t
}

// G returns the address of t's g, for the kernel's TLS setup.
func (t *Task) G() uintptr { return uintptr(unsafe.Pointer(&t.g)) }

func swtch(from, to *Context, gp uintptr)

// switchTo runs next on this CPU; the current task stops here until some CPU
// switches back to it. fin is run by next on the current task.
func switchTo(next *Task, fin uint32) {
	c := This()
	cur := taskAt(c.cur)
	if next == cur {
		atomic.StoreUint32(&cur.state, stRunning)
		return
	}
	// Invariant: only a ready task (or this CPU's idle task) may be switched
	// to; anything else means a task would run twice.
	if next.addr() != c.idle && atomic.LoadUint32(&next.state) != stReady {
		die()
	}
	next.fin, next.prev = fin, cur.addr()
	if fin != finNone {
		atomic.StoreUint32(&cur.state, stLimbo)
	}
	c.cur = next.addr()
	c.KStackTop = next.KStackHi
	swtch(&cur.ctx, &next.ctx, uintptr(unsafe.Pointer(&next.g)))
	FinishSwitch()
}

// FinishSwitch runs the finalizer the previous task named. Every path that
// resumes a task calls it first: switchTo, and the kernel's trampoline for a
// task's very first run.
func FinishSwitch() {
	c := This()
	t := taskAt(c.cur)
	atomic.StoreUint32(&t.state, stRunning)
	fin, prev := t.fin, taskAt(t.prev)
	t.fin, t.prev = finNone, 0
	switch fin {
	case finReady:
		makeReady(prev)
	case finBlock:
		prev.commitBlock()
	case finExit:
		domain.Release(&prev.item)
		atomic.StoreUint32(&prev.state, stFree)
	}
}

// makeReady puts t, which no CPU runs, on the ready queue.
func makeReady(t *Task) {
	atomic.StoreUint32(&t.state, stReady)
	if domain.Enqueue(This().ID, &ready, &t.item) != nil {
		die() // the arena is sized by the paper's bound: running out breaks it
	}
}

// Ready makes a new task (after Prepare) runnable.
func Ready(t *Task) { makeReady(t) }

func dequeue() *Task {
	it, _ := domain.Dequeue(This().ID, &ready)
	if it == nil {
		return nil
	}
	return (*Task)(unsafe.Pointer(it))
}

// Yield lets other ready tasks run; the caller continues later.
func Yield() {
	PollTimers()
	if next := dequeue(); next != nil {
		switchTo(next, finReady)
	}
}

// Exit ends the current task. Its slot is freed by the next task's finalizer.
func Exit() {
	for {
		switchTo(pickNext(), finExit)
	}
}

// pickNext is the next ready task or this CPU's idle task.
func pickNext() *Task {
	PollTimers()
	if next := dequeue(); next != nil {
		return next
	}
	return taskAt(This().idle)
}

// Idle is the idle loop of the calling task, which must be this CPU's idle
// task. wait arms a wake-up at deadline (0: none) and halts until an
// interrupt; it returns with interrupts off.
func Idle(wait func(deadline int64)) {
	for {
		PollTimers()
		if next := dequeue(); next != nil {
			switchTo(next, finNone)
			continue
		}
		wait(nextDeadline())
	}
}

// Stats describe the scheduler for self-tests.
type Stats struct {
	Live       int    // task slots in use
	NodesInUse uint64 // queue nodes out of the arena
	NodeBound  uint64 // tasks + 1 dummy + 2 per CPU
}

// ReadStats returns the current counters.
func ReadStats() Stats {
	s := domain.Stats()
	live := Live()
	return Stats{Live: live, NodesInUse: s.InUse, NodeBound: uint64(live + 1 + 2*NumCPU())}
}
