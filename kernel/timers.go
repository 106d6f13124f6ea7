package kernel

import (
	"yolk/kernel/abi"
	"yolk/kernel/signal"
	"yolk/kernel/timer"
	"yolk/sched"
)

// POSIX and interval timers, CPU clocks and timer slack are package
// timer; the system calls (syscall.go), the timer interrupt (time.go) and
// signal delivery (signal.go) call into it. tenv is what the kernel
// supplies to it (timer.Env): the clock, the signals' pending bits, the
// thread a process's signal goes to and sending a signal.

type tenv struct{}

func (tenv) Now() int64                 { return nanotime() }
func (tenv) WallBase() int64            { return wallBase }
func (tenv) Monotonic() int64           { return monotonic() }
func (tenv) Pending(slot, sig int) bool { return sigs.Has(slot, sig) }
func (tenv) Discard(slot, sig int)      { sigs.Discard(slot, sig) }
func (tenv) Target(sig int) *sched.Task { return processTarget(sig) }
func (tenv) Send(t *sched.Task, sig int, posix bool) {
	from := signal.FromKernel
	if posix {
		from = signal.FromTimer
	}
	sendSignalFrom(t, sig, from)
}

var timers timer.Timers[tenv]

func timerSlackInit(t, parent *sched.Task)                 { timers.SlackInit(t, parent) }
func threadSlack() int64                                   { return timers.ThreadSlack() }
func pollSlack(timeout int64) int64                        { return timers.PollSlack(timeout) }
func cpuClock(id int32, get bool) (*sched.Task, abi.Errno) { return timer.CPUClock(id, get) }
func cpuTime(t *sched.Task, now int64) int64               { return timer.CPUTime(t, now) }

// processTarget is the thread a signal for the process goes to, as Linux
// picks it: the running one unless it blocks the signal, else the first
// that does not block it of: those that run, those blocked in a wait
// the signal ends (blockIntr), the others; if all block it, the first.
func processTarget(sig int) *sched.Task {
	cur := sched.Current()
	if cur.Alive() && sigs.Mask[cur.Index()]&signal.Bit(sig) == 0 {
		return cur
	}
	var first, waiting, other *sched.Task
	for i := 0; i < sched.MaxTasks; i++ {
		u := sched.TaskAt(i)
		if !u.Alive() || u.Kernel {
			continue
		}
		if first == nil {
			first = u
		}
		switch {
		case sigs.Mask[i]&signal.Bit(sig) != 0:
		case u.RunningOn() >= 0:
			return u
		case u.BlockedInterruptibly():
			if waiting == nil {
				waiting = u
			}
		case other == nil:
			other = u
		}
	}
	switch {
	case waiting != nil:
		return waiting
	case other != nil:
		return other
	}
	return first
}
func timerClockGetres(id int32, p uintptr) abi.Errno { return timer.ClockGetres(id, p) }
