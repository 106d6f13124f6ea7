package kernel

import (
	"yolk/drivers/clock"
	"yolk/kernel/mm"
	"yolk/sched"
)

// Time: a monotonic clock from the CPU's free-running counter
// (drivers/clock; calibrated per arch, time_$GOARCH.go), the wall clock
// read at boot, and on each CPU a one-shot timer for the earliest deadline,
// plus its timer slack (kernel/timer), of the tasks that blocked there
// (sched's per-CPU timer heap).

var wallBase int64 // Unix ns at clock 0

// nanotime is monotonic nanoseconds since boot.
func nanotime() int64 { return clock.Nanotime() }

// walltime is Unix nanoseconds.
func walltime() int64 { return wallBase + nanotime() }

// timerState is one CPU's wake-up timer. The one-shot interrupt arrives
// some latency after the time it was armed for (tens of microseconds under
// emulation, a few on hardware), so it is armed lead nanoseconds before
// the deadline, and it expires the tasks due within lead of its arrival: a
// task woken early waits out the rest of its sleep itself (sched.Block),
// so sleepers wake at their deadline, not one interrupt latency after it.
type timerState struct {
	armed   int64 // the time the timer is armed for (sched's TimerNext), 0 if none
	armedAt int64 // when the interrupt was programmed to arrive
	lead    int64 // running median of the observed lateness, ns
	fired   uint64
	arms    uint64 // times the timer was programmed (yolk.syscallstats=1)
	tlbNext int64  // when this CPU's TLB is next refreshed (refreshTLB)
}

// tlbRefresh is how often a CPU running application code drops its TLB
// (refreshTLB): userSync arms the timer for it.
const tlbRefresh = 50_000_000

// refreshTLB drops this CPU's translations at tlbNext. The kernel has one
// address space, so nothing else flushes a CPU's whole TLB; under QEMU's
// TCG that keeps the emulated TLB at its smallest (256 entries): QEMU
// resizes it only when it is flushed whole, doubling it when more than
// 70 % of it was filled since the last flush (and shrinking it when less
// than 30 % was). Without this a copy of 1 MiB ran at a tenth of the
// speed of one of 64 KiB, amd64 and arm64 alike (docs/tcg.md). On
// hardware it costs a busy CPU a timer interrupt and a TLB refill every
// 50 ms.
func (ts *timerState) refreshTLB(now int64) {
	if now >= ts.tlbNext {
		mm.RefreshTLB()
		ts.tlbNext = now + tlbRefresh
	}
}

const (
	leadStep = 2_000   // ns the median estimate moves per wake-up
	leadMax  = 200_000 // ns: the most CPU time one wake-up may spend polling
)

// arm programs this CPU's timer for deadline.
func (ts *timerState) arm(deadline int64) {
	at := deadline - ts.lead
	ts.armed, ts.armedAt = deadline, at
	ts.arms++
	timerProgram(at)
}

// timerSync arms this CPU's timer for its heap's next time (TimerNext: the
// earliest deadline plus its timer slack) unless it is armed for that or
// an earlier one (an earlier one, since cancelled, only costs an
// interrupt that finds nothing due and re-arms). The kernel calls
// it on its way back to application code and before halting.
func timerSync() {
	c := sched.This()
	ts := &percpu[c.ID].timer
	ts.armBy(c.TimerNext())
	ts.armBy(timers.MonoNext()) // kernel/timer
}

// armBy arms the timer for deadline n unless it is 0 or the timer is
// armed for n or earlier.
func (ts *timerState) armBy(n int64) {
	if n != 0 && (ts.armed == 0 || n < ts.armed) {
		ts.arm(n)
	}
}

// userSync is timerSync on the way back to application code: if tasks
// wait on the ready queues, the timer is armed for the end of the current
// task's slice or budget too (sched's PreemptAt), so that its interrupt
// preempts the task (preemptUser) should it not enter the kernel by then;
// and for the earliest a CPU-time timer of the task could expire
// (kernel/timer), so that a thread that never enters the kernel gets its
// SIGPROF.
//
// It runs at the end of every system call, so it makes one armBy of the
// earliest time (under QEMU's TCG every call and return costs a lookup of
// translated code: five armBy calls were a quarter of getpid).
func userSync() {
	c := sched.This()
	ts := &percpu[c.ID].timer
	n := max(ts.tlbNext, 1) // 0: never refreshed yet, so at once
	n = earliest(n, c.TimerNext())
	n = earliest(n, timers.MonoNext())
	n = earliest(n, c.PreemptAt())
	n = earliest(n, timers.Deadline())
	ts.armBy(n)
}

// earliest is the earlier of deadlines a and b, either of which may be 0
// (none).
func earliest(a, b int64) int64 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// timerInterrupt is the vecTimer handler: wake the tasks that are due and
// re-arm for the next. fromUser: the interrupt took application code; it
// then reports whether preemptUser is to switch this CPU to a task it
// woke, else whether it woke any (sched.ExpireTimers).
func timerInterrupt(fromUser bool) bool {
	ts := &percpu[sched.This().ID].timer
	now := nanotime()
	if ts.armed != 0 {
		ts.learn(now - ts.armedAt)
	}
	ts.armed = 0
	ts.fired++
	ts.refreshTLB(now + ts.lead) // armed lead early, as the timers
	next, woke := sched.ExpireTimers(now+ts.lead, fromUser)
	timers.Check(now + ts.lead)
	if next != 0 {
		ts.arm(next)
	}
	return woke
}

// learn moves the lead toward the median of the observed lateness, within
// [0, leadMax].
func (ts *timerState) learn(late int64) {
	switch {
	case late > ts.lead && ts.lead < leadMax:
		ts.lead += leadStep
	case late < ts.lead && ts.lead >= leadStep:
		ts.lead -= leadStep
	}
}

func median3(m [3]uint64) uint64 {
	if m[0] > m[1] {
		m[0], m[1] = m[1], m[0]
	}
	if m[1] > m[2] {
		m[1], m[2] = m[2], m[1]
	}
	if m[0] > m[1] {
		m[0], m[1] = m[1], m[0]
	}
	return m[1]
}
