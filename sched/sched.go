package sched

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/sched/queue"
)

// The ready queues: two of the paper's lock-free FIFOs in one domain.
// ready[qWoken] holds tasks that have used less than a Budget of CPU
// since they last blocked (woken from a wait, new, or switched away
// early); ready[qSpent] holds tasks that have used more (CPU-bound:
// preempted, or yielding at the end of a slice). dequeue serves qWoken
// first, so a task that blocked does not wait behind a CPU-bound one's
// slice, and qSpent first once its front task has waited a Slice, so
// woken tasks cannot starve it.
const nReadyQueues = 2

var (
	domain queue.Domain
	ready  [nReadyQueues]queue.Queue // qWoken, qSpent
	// nodes: one per task, a dummy per queue, two pooled per CPU (the
	// paper's bound).
	nodes [MaxTasks + nReadyQueues + 2*MaxCPUs]queue.Node

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
	if domain.Init(n, nodes[:]) != nil || domain.InitQueue(&ready[qWoken]) != nil || domain.InitQueue(&ready[qSpent]) != nil {
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
	atomic.StoreInt64(&c.spentAt, math.MaxInt64)
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
	now := clock.Nanotime()
	if atomic.LoadUint32(&traceOn) != 0 {
		trace(TraceEvent{At: now, Ev: TraceSwitch, Why: c.why, Q: c.tookQ, From: cur.TID, To: next.TID,
			FromUsed: cur.used + now - c.switchedAt, ToUsed: next.used})
	}
	// A task from qSpent gets a budget of this dispatch before the
	// budget preempts it (dequeue).
	c.usedBefore = 0
	if c.tookQ == qSpent {
		c.usedBefore = next.used
	}
	c.wokenRun = next.used < spentAfter
	c.why, c.tookQ = WhyBlock, noQueue
	// cur's CPU time since it last blocked decides its ready queue.
	switch fin {
	case finReady:
		cur.used += now - c.switchedAt
		atomic.AddUint64(&cur.nivcsw, 1)
	case finBlock, finMutex:
		cur.used = 0
		atomic.AddUint64(&cur.nvcsw, 1)
	}
	c.switchedAt, c.ranSince, c.alone = now, now, false
	spentAt := int64(math.MaxInt64)
	if next.addr() != c.idle {
		spentAt = now + spentAfter - next.used + c.usedBefore
	}
	atomic.StoreInt64(&c.spentAt, spentAt)
	if atomic.LoadUint32(&c.preemptKicked) != 0 {
		atomic.StoreUint32(&c.preemptKicked, 0)
	}
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

// lockedReady selects the baseline ready queues, TWA-locked lists of our
// own, instead of the paper's lock-free queue: only for the benchmark that
// compares the two (kernel option yolk.readyq=locked). It is set before
// Init and never changes. The policy (two queues, woken first) is the same.
var lockedReady bool

var lockedQ struct {
	lock TWALock
	q    [nReadyQueues]struct{ head, tail uintptr } // *Task, linked through rnext
}

// UseLockedReadyQueue makes the scheduler use the baseline ready queue. It
// must be called before Init.
func UseLockedReadyQueue() { lockedReady = true }

// Ready queue indices (ready, lockedQ.q; i&1 keeps an index in range
// without a bounds check).
const (
	qWoken = iota
	qSpent
)

// Budget is how much CPU time a task may use after it blocked and still
// count as woken: ahead of CPU-bound tasks on the ready queues, and not
// preempted for a woken task. A task that has used it is spent: it goes
// on qSpent, and gives up its CPU for a woken task at its next timer
// interrupt or system call (Preempt, YieldSlice). So a woken task waits
// at most about a Budget for a CPU-bound one, not a Slice.
const Budget = 1_000_000 // ns

// budgetSlack is how early Preempt may find the budget used: the kernel's
// timer fires up to its learnt interrupt lead (at most 200 µs) early.
const budgetSlack = 250_000 // ns

// spentAfter is the CPU time after which a task is spent.
const spentAfter = Budget - budgetSlack

// queueFor is the ready queue t, which no CPU runs, goes on.
func queueFor(t *Task) int {
	if t.used >= spentAfter {
		return qSpent
	}
	return qWoken
}

// curSpent reports whether c's current task has used its Budget by now
// (in this dispatch, if it came from qSpent).
func (c *CPU) curSpent(now int64) bool {
	return taskAt(c.cur).used-c.usedBefore+now-c.switchedAt >= spentAfter
}

// enqueue puts t on ready queue i.
func enqueue(t *Task, i int) {
	if lockedReady {
		q := &lockedQ.q[i&1]
		t.rnext = 0
		lockedQ.lock.Lock()
		if q.tail != 0 {
			taskAt(q.tail).rnext = t.addr()
		} else {
			q.head = t.addr()
		}
		q.tail = t.addr()
		lockedQ.lock.Unlock()
		return
	}
	if domain.Enqueue(This().ID, &ready[i&1], &t.item) != nil {
		die(dieArena) // the arena is sized by the paper's bound: running out breaks it
	}
}

// makeReady puts t, which no CPU runs, on the ready queue and resumes an
// idle CPU, if there is one, to run it. It may run in an interrupt handler:
// interrupts reach a CPU only in application code or halted in its idle
// loop, never inside a queue operation, so the handler may use the CPU's
// own hazard-pointer slot.
//
// A woken task that finds no idle CPU interrupts another CPU whose task has
// used its Budget (preemptSpent), rather than wait for one to come to the
// kernel.
func makeReady(t *Task) {
	if q := queueReady(t); !wakeIdle() && q == qWoken {
		preemptSpent()
	}
}

// queueReady puts t, which no CPU runs, on its ready queue and returns
// which: makeReady without resuming or interrupting another CPU.
func queueReady(t *Task) int {
	assertKernel()
	t.setState(stReady)
	q := queueFor(t)
	if q == qSpent {
		atomic.StoreInt64(&t.readyAt, clock.Nanotime())
	}
	enqueue(t, q)
	if atomic.LoadUint32(&traceOn) != 0 {
		trace(TraceEvent{Ev: TraceReady, Q: uint8(q), To: t.TID, ToUsed: t.used})
	}
	return q
}

// preemptSpent interrupts one other CPU whose current task has used its
// Budget and that no earlier wake-up has interrupted yet (two tasks woken
// back to back take two CPUs, as on Linux): the kernel
// treats the wake-up interrupt, when it takes application code, like its
// timer's, and Preempt there switches to the woken task. A CPU in the
// kernel takes the interrupt on its way back to application code, where
// it would have looked itself. This CPU is never picked: it looks at the
// end of its system call (YieldSlice) or interrupt (Preempt).
func preemptSpent() {
	if ncpu == 1 {
		return
	}
	c := This()
	now := clock.Nanotime()
	on := atomic.LoadUint64(&online)
	for i := 1; i < ncpu; i++ {
		id := (c.ID + i) % ncpu
		o := &cpus[id]
		if on&(1<<uint(id)) == 0 || now < atomic.LoadInt64(&o.spentAt) {
			continue
		}
		// A CPU already kicked (for an earlier woken task, still on its
		// way to switch) is left for that one: look for another.
		if atomic.CompareAndSwapUint32(&o.preemptKicked, 0, 1) {
			atomic.AddUint64(&c.preemptIPIs, 1)
			kick(o)
			return
		}
	}
}

// wakeIdle resumes one idle CPU other than this one, if any, with an
// interrupt, and reports whether it found one (this one included). It
// runs after an enqueue, and an idle CPU sets its bit before it looks at
// the queue for the last time, both with sequentially
// consistent atomics: either this load sees the bit or that look sees the
// task (no lost wake-up). Clearing the bit claims the CPU, so that two
// wakers do not both interrupt it.
//
// If this CPU is itself in the mask, an interrupt has reached it halted in
// its idle loop, which looks at the queue again when the handler returns:
// it claims itself and interrupts nobody.
func wakeIdle() bool {
	c := This()
	self := uint64(1) << uint(c.ID)
	for {
		m := atomic.LoadUint64(&idleMask)
		if m&self != 0 {
			if atomic.AndUint64(&idleMask, ^self)&self != 0 {
				return true
			}
			continue
		}
		if m == 0 {
			return false
		}
		bit := m & -m
		if atomic.AndUint64(&idleMask, ^bit)&bit != 0 {
			atomic.OrUint64(&claimedMask, bit)
			atomic.AddUint64(&c.wakeIPIs, 1)
			kick(&cpus[bits.TrailingZeros64(bit)])
			return true
		}
	}
}

// Ready makes a new task (after Prepare) runnable.
func Ready(t *Task) { makeReady(t) }

// dequeue takes the next ready task: from qWoken, unless the task at the
// front of qSpent has waited there a Slice. Every CPU with a task to take
// comes here at least once a Slice (a switch, or its slice timer: userSync),
// so the front of qSpent waits at most about two Slices.
//
// A task taken from qSpent runs a Budget of this dispatch before the
// budget preempts it for a woken task (switchTo sets CPU.usedBefore). It
// keeps its used, so a wake-up that preempts it sooner still sends it to
// qSpent, behind the woken tasks. Otherwise a task that went over its
// budget once — in a host stall while it ran, which its CPU time counts —
// is preempted again at once each time it is dispatched (at its next
// system call or interrupt) while a woken task waits, and goes back to
// the end of qSpent, a slice-long wait per system call (a 1 ms sleep came
// back up to 1.05 s late; docs/preemption.md).
//
// curWoken: the caller's task, which yields or is preempted, was a woken
// one when it was switched to (CPU.wokenRun), so a task taken from qSpent
// first runs ahead of a woken one even when qWoken is empty; CPU.spentFirst
// counts that too (a host stall at a woken task's start ends its slice).
func dequeue(curWoken bool) *Task {
	assertKernel()
	c := This()
	first := qWoken
	if h := front(qSpent); h != nil && clock.Nanotime()-atomic.LoadInt64(&h.readyAt) >= Slice {
		first = qSpent
	}
	t := take(first)
	if t == nil {
		first = qWoken + qSpent - first
		t = take(first)
	} else if first == qSpent && (curWoken || front(qWoken) != nil) {
		atomic.AddUint64(&c.spentFirst, 1)
	}
	if t == nil {
		return nil
	}
	c.tookQ = uint8(first)
	return t
}

// front is the task at the front of ready queue i, or nil: a hint (see
// queue.Domain.Front), for dequeue's look at how long it has waited.
func front(i int) *Task {
	if lockedReady {
		if a := atomic.LoadUintptr(&lockedQ.q[i&1].head); a != 0 {
			return taskAt(a)
		}
		return nil
	}
	if it := domain.Front(&ready[i&1]); it != nil {
		return (*Task)(unsafe.Pointer(it))
	}
	return nil
}

// take removes the task at the front of ready queue i, or returns nil.
func take(i int) *Task {
	if lockedReady {
		q := &lockedQ.q[i&1]
		lockedQ.lock.Lock()
		a := q.head
		if a != 0 {
			if q.head = taskAt(a).rnext; q.head == 0 {
				q.tail = 0
			}
		}
		lockedQ.lock.Unlock()
		if a == 0 {
			return nil
		}
		return taskAt(a)
	}
	it, _ := domain.Dequeue(This().ID, &ready[i&1])
	if it == nil {
		return nil
	}
	return (*Task)(unsafe.Pointer(it))
}

// empty reports whether ready queue i looked empty (a hint).
func empty(i int) bool {
	if lockedReady {
		return atomic.LoadUintptr(&lockedQ.q[i&1].head) == 0
	}
	return domain.Empty(&ready[i&1])
}

// Yield lets other ready tasks run; the caller continues later, on this or
// another CPU.
func Yield() {
	c := This()
	if next := dequeue(c.wokenRun); next != nil {
		c.why = WhyYield
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
// switched to, or has used its Budget while a woken task waits; it is
// called at the end of a system call. With nothing ready it returns
// without reading the clock (under QEMU's TCG an RDTSC costs 140 ns, a
// fifth of a system call), marking the task alone: when it next finds
// a task waiting, a slice that ended meanwhile starts over (restart), so
// that it does not give way at once for a task some other CPU is about
// to take. With a task waiting but a Yield that finds none (another CPU
// took it) the slice starts over.
func YieldSlice() {
	if empty(qWoken) && empty(qSpent) {
		This().alone = true
		return
	}
	c := This()
	now := clock.Nanotime()
	c.restart(now)
	if now-c.ranSince >= Slice {
		c.ranSince = now
		Yield()
	} else if wokenUncovered() && c.curSpent(now) {
		yieldWoken(WhySysBudget)
	}
}

// yieldWoken switches to a task from qWoken, if there is one: giving up
// the CPU for a woken task never hands it to another CPU-bound one.
func yieldWoken(why uint8) {
	if next := take(qWoken); next != nil {
		c := This()
		atomic.AddUint64(&c.preempts, 1)
		c.why, c.tookQ = why, qWoken
		switchTo(next, finReady)
	}
}

// Preempt is the involuntary switch: the kernel calls it on the kernel
// stack of a task that a timer or wake-up interrupt took from application
// code (never inside kernel code or a queue operation: those run with
// interrupts off). The task gives up its CPU to the next ready task if it
// has run for a Slice; to a woken task (qWoken), if the interrupt woke one
// for this CPU (woke: ExpireTimers), so that it gets a CPU now rather than
// when the interrupted one next enters the kernel, or if the task has used
// its Budget. It continues later, like Yield.
func Preempt(woke bool) {
	c := This()
	now := clock.Nanotime()
	c.restart(now)
	if atomic.LoadUint32(&c.preemptKicked) != 0 {
		atomic.StoreUint32(&c.preemptKicked, 0)
	}
	if now-c.ranSince >= Slice-sliceSlack {
		c.ranSince = now
		if next := dequeue(c.wokenRun); next != nil {
			// The starvation bound took a CPU-bound task ahead of the
			// woken ones: the one this interrupt woke for this CPU
			// had no other CPU interrupted for it (ExpireTimers).
			if woke && c.tookQ == qSpent {
				preemptSpent()
			}
			atomic.AddUint64(&c.preempts, 1)
			c.why = WhySlice
			switchTo(next, finReady)
		}
	} else if woke {
		yieldWoken(WhyWoke)
	} else if c.curSpent(now) && wokenUncovered() {
		yieldWoken(WhyBudget)
	}
}

// restart starts the slice of a task that was alone on its CPU
// (YieldSlice) anew if a Slice has passed since it began: the slice
// starts over at most once per Slice, as when YieldSlice read the clock
// at every call. Not more often: the queues are empty for a moment at
// every switch on another CPU (the next task is taken before the last
// one is queued again), and a task whose system calls fell in those
// moments would otherwise never give way.
func (c *CPU) restart(now int64) {
	if c.alone {
		c.alone = false
		if now-c.ranSince >= Slice {
			c.ranSince = now
		}
	}
}

// wokenUncovered reports whether woken tasks wait and no CPU claimed by a
// waker (claimedMask) is still on its way to the queues. The mask does
// not say for which task: while any claim is out, the woken tasks are
// left to the claimed CPUs, as on Linux, where a woken task goes to an
// idle CPU and the waker keeps its own; taking one here instead would
// move the CPU-bound task to the claimed CPU, off a CPU for as long as
// that one takes to wake (tens of µs under emulation). A claimed CPU that
// leaves woken tasks behind preempts a spent one (Idle), so they wait a
// CPU's wake-up longer at most, not a slice.
func wokenUncovered() bool {
	return !empty(qWoken) && atomic.LoadUint64(&claimedMask) == 0
}

// sliceSlack is how early a slice may be cut by Preempt: the kernel's
// timer fires up to its learnt interrupt lead (at most 200 µs) before the
// deadline it was armed for.
const sliceSlack = 1_000_000 // ns

// PreemptAt is when c's current task should be interrupted for Preempt, 0
// if never: the end of its slice if tasks seem to wait on the ready queues
// (a hint: see queue.Domain.Empty), or earlier, the end of its Budget, if
// a woken task does. The kernel asks on every return to application code
// and arms this CPU's timer for it, so that a task that runs without
// system calls keeps its CPU for a Slice at most while others wait, and
// for about a Budget while a woken task does.
func (c *CPU) PreemptAt() int64 {
	// A CPU on its way back to application code is not on its way to
	// the queues: a claim of it still out is stale (the waker set it
	// after this CPU had looked, wakeIdle's two steps), and would keep
	// every CPU-bound task from giving way. Pass it on.
	if self := uint64(1) << uint(c.ID); atomic.LoadUint64(&claimedMask)&self != 0 &&
		atomic.AndUint64(&claimedMask, ^self)&self != 0 && !empty(qWoken) {
		preemptSpent()
	}
	uncovered := wokenUncovered()
	if !uncovered && empty(qSpent) && empty(qWoken) {
		return 0
	}
	if c.alone {
		c.restart(clock.Nanotime())
	}
	if uncovered {
		return min(c.ranSince+Slice, c.switchedAt+Budget-taskAt(c.cur).used+c.usedBefore)
	}
	return c.ranSince + Slice
}

// Exit ends the current task. Its slot is freed by the next task's finalizer.
func Exit() {
	for {
		switchTo(pickNext(), finExit)
	}
}

// pickNext is the next ready task or this CPU's idle task.
func pickNext() *Task {
	if next := dequeue(false); next != nil {
		return next
	}
	return taskAt(This().idle)
}

// Idle is the idle loop of the calling task, which must be this CPU's idle
// task. When the ready queue is empty it marks the CPU idle, looks once
// more, and calls wait with the time this CPU's timer is due (TimerNext;
// 0: none); wait halts until an interrupt and returns with interrupts off.
func Idle(wait func(deadline int64)) {
	c := This()
	bit := uint64(1) << uint(c.ID)
	atomic.OrUint64(&online, bit)
	for {
		next := dequeue(false)
		if atomic.LoadUint64(&claimedMask)&bit != 0 && atomic.AndUint64(&claimedMask, ^bit)&bit != 0 && next != nil && !empty(qWoken) {
			// Claimed for a woken task, this CPU took one task and
			// woken ones are left with no CPU on its way: the
			// CPU-bound tasks that left them to this one must not.
			// (With none taken, this CPU looks again before halting.)
			preemptSpent()
		}
		if next != nil {
			switchTo(next, finNone)
			continue
		}
		if next := poll(); next != nil {
			switchTo(next, finNone)
			continue
		}
		atomic.OrUint64(&idleMask, bit)
		if next := dequeue(false); next != nil {
			if atomic.AndUint64(&idleMask, ^bit)&bit == 0 {
				// A waker claimed this CPU for the task it made ready,
				// but this CPU found another one first: pass the claim
				// on, or that task could wait while a CPU halts.
				atomic.AndUint64(&claimedMask, ^bit)
				if (!empty(qWoken) || !empty(qSpent)) && !wakeIdle() && !empty(qWoken) {
					preemptSpent()
				}
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
		if next := dequeue(false); next != nil {
			return next
		}
	}
	return nil
}

// Stats describe the scheduler for self-tests.
type Stats struct {
	Live       int    // task slots in use
	NodesInUse uint64 // queue nodes out of the arena
	NodeBound  uint64 // tasks + 1 dummy per ready queue + 2 per CPU
	// NodesPeak is the most nodes ever out of the arena at once (fresh
	// nodes are taken only when no released one is left), and
	// PeakBound the bound for it: the most task slots ever used + 1 per
	// ready queue + 2 per CPU.
	NodesPeak, PeakBound uint64
}

// ReadStats returns the current counters.
func ReadStats() Stats {
	s := domain.Stats()
	live := Live()
	return Stats{Live: live, NodesInUse: s.InUse, NodeBound: uint64(live + nReadyQueues + 2*NumCPU()),
		NodesPeak: s.Fresh, PeakBound: uint64(int(atomic.LoadInt32(&ntasks)) + nReadyQueues + 2*NumCPU())}
}
