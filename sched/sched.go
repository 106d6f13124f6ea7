package sched

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/sched/queue"
)

var (
	domain queue.Domain
	ready  queue.Queue
	// nodes: one per task, one dummy, two pooled per CPU (the paper's bound).
	nodes [MaxTasks + 1 + 2*MaxCPUs]queue.Node

	// wakeVector is the interrupt vector of the wake-up IPI.
	wakeVector uint8
)

// Init sets up the ready queue for n processors and makes the calling
// context CPU 0's idle task (the boot task: it runs the rest of the boot
// and then idles). It runs once, at boot, on CPU 0 after InitCPU, before
// any other CPU starts. wake is the vector of the wake-up interrupt.
func Init(n int, wake uint8, bootStackLo, bootStackHi uintptr) *Task {
	if n < 1 || n > MaxCPUs {
		return nil
	}
	if domain.Init(n, nodes[:]) != nil || domain.InitQueue(&ready) != nil {
		return nil
	}
	ncpu, wakeVector = n, wake
	t := Alloc()
	t.SetStack(bootStackLo, bootStackHi)
	AdoptIdle(t)
	return t
}

// AdoptIdle makes the calling context, which runs on t's kernel stack, the
// calling CPU's current and idle task.
func AdoptIdle(t *Task) { adopt(This(), t) }

func adopt(c *CPU, t *Task) {
	t.setState(stRunning)
	atomic.StoreInt32(&t.oncpu, int32(c.ID+1))
	c.cur, c.idle = t.addr(), t.addr()
	atomic.StoreInt64(&c.onSince, clock.Nanotime())
	c.GSlot = uintptr(unsafe.Pointer(&t.g))
	c.KStackTop = t.KStackHi
}

// PrepareCPU sets up CPU id (interrupt controller ID irq) for a processor
// that will start on t's kernel stack, with t as its current and idle
// task. The boot CPU calls it before starting that processor, which points
// its per-CPU base at the result and then calls Idle.
func PrepareCPU(id int, irq uint64, t *Task) *CPU {
	c := &cpus[id]
	c.Self = uintptr(unsafe.Pointer(c))
	c.ID = id
	c.IRQ = irq
	c.TrapGSlot = uintptr(unsafe.Pointer(&c.TrapG))
	adopt(c, t)
	return c
}

func swtch(from, to *Context, gp uintptr)

// switchTo runs next on this CPU; the current task stops here until some CPU
// switches back to it. fin is run by next on the current task.
func switchTo(next *Task, fin uint32) {
	assertKernel()
	c := This()
	cur := taskAt(c.cur)
	if next == cur {
		// Only the idle task, with nothing ready, picks itself: it must
		// never block, wait for a mutex or exit.
		die(dieIdleBlocks)
	}
	if c.locks != 0 {
		die(dieSwitchLocked)
	}
	// Only a ready task (or this CPU's idle task) that no CPU runs may be
	// switched to; anything else means a task would run twice.
	if next.addr() != c.idle && next.st() != stReady ||
		!atomic.CompareAndSwapInt32(&next.oncpu, 0, int32(c.ID+1)) {
		die(dieRunTwice)
	}
	next.fin, next.prev = fin, cur.addr()
	if fin != finNone {
		cur.setState(stLimbo)
	}
	atomic.AddUint64(&c.switches, 1)
	c.ranSince = clock.Nanotime()
	c.account(cur, next)
	c.KStackTop = next.KStackHi
	swtch(&cur.ctx, &next.ctx, uintptr(unsafe.Pointer(&next.g)))
	FinishSwitch()
}

// FinishSwitch runs the finalizer the previous task named. Every path that
// resumes a task calls it first: switchTo, and the kernel's trampoline for a
// task's very first run. The task may resume on another CPU than the one it
// left, so nothing here trusts a CPU pointer from before the switch.
func FinishSwitch() {
	c := This()
	t := taskAt(c.cur)
	t.setState(stRunning)
	fin, prev := t.fin, taskAt(t.prev)
	t.fin, t.prev = finNone, 0
	// prev's state is saved: from now on another CPU may run it.
	atomic.StoreInt32(&prev.oncpu, 0)
	switch fin {
	case finReady:
		makeReady(prev)
	case finBlock:
		prev.commitBlock()
	case finMutex:
		prev.commitMutex()
	case finExit:
		retire(prev)
		domain.Release(&prev.item)
		prev.setState(stFree)
	}
}

// lockedReady selects the baseline ready queue, a TWA-locked list of our
// own, instead of the paper's lock-free queue: only for the benchmark that
// compares the two (kernel option yolk.readyq=locked). It is set before
// Init and never changes.
var lockedReady bool

var lockedQ struct {
	lock       TWALock
	head, tail uintptr // *Task, linked through rnext
}

// UseLockedReadyQueue makes the scheduler use the baseline ready queue. It
// must be called before Init.
func UseLockedReadyQueue() { lockedReady = true }

// enqueue puts t on the ready queue.
func enqueue(t *Task) {
	if lockedReady {
		t.rnext = 0
		lockedQ.lock.Lock()
		if lockedQ.tail != 0 {
			taskAt(lockedQ.tail).rnext = t.addr()
		} else {
			lockedQ.head = t.addr()
		}
		lockedQ.tail = t.addr()
		lockedQ.lock.Unlock()
		return
	}
	if domain.Enqueue(This().ID, &ready, &t.item) != nil {
		die(dieArena) // the arena is sized by the paper's bound: running out breaks it
	}
}

// makeReady puts t, which no CPU runs, on the ready queue and resumes an
// idle CPU, if there is one, to run it. It may run in an interrupt handler:
// interrupts reach a CPU only in application code or halted in its idle
// loop, never inside a queue operation, so the handler may use the CPU's
// own hazard-pointer slot.
func makeReady(t *Task) {
	assertKernel()
	t.setState(stReady)
	enqueue(t)
	wakeIdle()
}

// wakeIdle resumes one idle CPU other than this one, if any, with an
// interrupt. It runs after an enqueue, and an idle CPU sets its bit before
// it looks at the queue for the last time, both with sequentially
// consistent atomics: either this load sees the bit or that look sees the
// task (no lost wake-up). Clearing the bit claims the CPU, so that two
// wakers do not both interrupt it.
//
// If this CPU is itself in the mask, an interrupt has reached it halted in
// its idle loop, which looks at the queue again when the handler returns:
// it claims itself and interrupts nobody.
func wakeIdle() {
	c := This()
	self := uint64(1) << uint(c.ID)
	for {
		m := atomic.LoadUint64(&idleMask)
		if m&self != 0 {
			if atomic.AndUint64(&idleMask, ^self)&self != 0 {
				return
			}
			continue
		}
		if m == 0 {
			return
		}
		bit := m & -m
		if atomic.AndUint64(&idleMask, ^bit)&bit != 0 {
			atomic.AddUint64(&c.wakeIPIs, 1)
			kick(&cpus[bits.TrailingZeros64(bit)])
			return
		}
	}
}

// Ready makes a new task (after Prepare) runnable.
func Ready(t *Task) { makeReady(t) }

func dequeue() *Task {
	assertKernel()
	if lockedReady {
		lockedQ.lock.Lock()
		a := lockedQ.head
		if a != 0 {
			if lockedQ.head = taskAt(a).rnext; lockedQ.head == 0 {
				lockedQ.tail = 0
			}
		}
		lockedQ.lock.Unlock()
		if a == 0 {
			return nil
		}
		return taskAt(a)
	}
	it, _ := domain.Dequeue(This().ID, &ready)
	if it == nil {
		return nil
	}
	return (*Task)(unsafe.Pointer(it))
}

// Yield lets other ready tasks run; the caller continues later, on this or
// another CPU.
func Yield() {
	if next := dequeue(); next != nil {
		switchTo(next, finReady)
	}
}

// Slice is how long a task may keep its CPU while other tasks are ready.
// The scheduler is cooperative: a task gives up its CPU only when it blocks
// or yields. Without a bound, tasks that never block — two threads that pass
// a turn back and forth on two CPUs, each finding its turn come back before
// it sleeps — keep their CPUs for as long as they run, and ready tasks wait
// that long (seconds, measured with four CPUs). YieldSlice bounds that at the
// one place every such task comes back to the kernel: its system calls.
// Code that makes no system call at all needs preemption by the timer.
const Slice = 10_000_000 // ns

// YieldSlice yields if the current task has run for a Slice since it was
// switched to; it is called at the end of a system call. With nothing ready
// the slice starts over, so that a task alone on its CPU looks at the ready
// queue once per Slice, not at every system call.
func YieldSlice() {
	c := This()
	if now := clock.Nanotime(); now-c.ranSince >= Slice {
		c.ranSince = now
		Yield()
	}
}

// Preempt is the involuntary switch: the kernel calls it on the kernel
// stack of a task that an interrupt took from application code (never
// inside kernel code or a queue operation: those run with interrupts off).
// The task gives up its CPU if the interrupt made another task ready
// (woke: a timer expired), so that the task woken gets a CPU now rather
// than when the interrupted one next enters the kernel, or if it has run
// for a Slice. It continues later, like Yield.
func Preempt(woke bool) {
	c := This()
	now := clock.Nanotime()
	if !woke && now-c.ranSince < Slice-sliceSlack {
		return
	}
	c.ranSince = now
	if next := dequeue(); next != nil {
		atomic.AddUint64(&c.preempts, 1)
		switchTo(next, finReady)
	}
}

// sliceSlack is how early a slice may be cut by Preempt: the kernel's
// timer fires up to its learnt interrupt lead (at most 200 µs) before the
// deadline it was armed for.
const sliceSlack = 1_000_000 // ns

// Backlog reports whether tasks seemed to wait on the ready queue (a hint:
// see queue.Domain.Empty). The kernel asks on every return to application
// code and, if so, arms this CPU's timer for SliceEnd, so that a task that
// runs without system calls keeps its CPU for a Slice at most while others
// wait.
func Backlog() bool {
	if lockedReady {
		return atomic.LoadUintptr(&lockedQ.head) != 0
	}
	return !domain.Empty(&ready)
}

// SliceEnd is when the current task's slice on c ends.
func (c *CPU) SliceEnd() int64 { return c.ranSince + Slice }

// Exit ends the current task. Its slot is freed by the next task's finalizer.
func Exit() {
	for {
		switchTo(pickNext(), finExit)
	}
}

// pickNext is the next ready task or this CPU's idle task.
func pickNext() *Task {
	if next := dequeue(); next != nil {
		return next
	}
	return taskAt(This().idle)
}

// Idle is the idle loop of the calling task, which must be this CPU's idle
// task. When the ready queue is empty it marks the CPU idle, looks once
// more, and calls wait with this CPU's earliest timer deadline (0: none);
// wait halts until an interrupt and returns with interrupts off.
func Idle(wait func(deadline int64)) {
	c := This()
	bit := uint64(1) << uint(c.ID)
	atomic.OrUint64(&online, bit)
	for {
		if next := dequeue(); next != nil {
			switchTo(next, finNone)
			continue
		}
		if next := poll(); next != nil {
			switchTo(next, finNone)
			continue
		}
		atomic.OrUint64(&idleMask, bit)
		if next := dequeue(); next != nil {
			if atomic.AndUint64(&idleMask, ^bit)&bit == 0 {
				// A waker claimed this CPU for the task it made ready,
				// but this CPU found another one first: pass the claim
				// on, or that task could wait while a CPU halts.
				wakeIdle()
			}
			switchTo(next, finNone)
			continue
		}
		wait(c.TimerNext())
		atomic.AndUint64(&idleMask, ^bit)
	}
}

// IdlePoll is how long an idle CPU keeps looking at the ready queue
// before it halts, in ns (0, the default: it halts at once). Polling CPUs
// are not in the idle mask, so a task made ready meanwhile costs no
// wake-up interrupt and no halt and wake-up of the CPU. Set once at boot
// (kernel option yolk.idlepoll=µs). Measured under TCG (docs/smp.md): 20 µs
// makes the 4-CPU futex stress on 2 host cores 3× faster and changes
// nothing measurable at 2 CPUs, so it is off by default; it never applies
// to one CPU, where nothing can make a task ready while interrupts are off.
var IdlePoll int64

// poll looks at the ready queue until a task appears or IdlePoll passes.
func poll() *Task {
	if IdlePoll == 0 || ncpu == 1 {
		return nil
	}
	for end := clock.Nanotime() + IdlePoll; clock.Nanotime() < end; {
		pause()
		if next := dequeue(); next != nil {
			return next
		}
	}
	return nil
}

// Stats describe the scheduler for self-tests.
type Stats struct {
	Live       int    // task slots in use
	NodesInUse uint64 // queue nodes out of the arena
	NodeBound  uint64 // tasks + 1 dummy + 2 per CPU
	// NodesPeak is the most nodes ever out of the arena at once (fresh
	// nodes are taken only when no released one is left), and
	// PeakBound the bound for it: the most task slots ever used + 1 +
	// 2 per CPU.
	NodesPeak, PeakBound uint64
}

// ReadStats returns the current counters.
func ReadStats() Stats {
	s := domain.Stats()
	live := Live()
	return Stats{Live: live, NodesInUse: s.InUse, NodeBound: uint64(live + 1 + 2*NumCPU()),
		NodesPeak: s.Fresh, PeakBound: uint64(int(atomic.LoadInt32(&ntasks)) + 1 + 2*NumCPU())}
}
