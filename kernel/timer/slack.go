package timer

import (
	"yolk/kernel/abi"
	"yolk/sched"
)

// Timer slack, as Linux's. A timed wait the application makes —
// nanosleep, clock_nanosleep, a futex wait, rt_sigtimedwait, and a
// socket's timeout (which Linux keeps on its coarser jiffy timers) — may
// end up to its thread's timer slack after its deadline, never before:
// the CPU's timer is armed for the latest end, and an interrupt that
// comes earlier for another task takes it along once its deadline has
// passed (sched.BlockIntr). epoll_pwait's slack also grows
// with its timeout (PollSlack). The slack is 50 µs, Linux's default,
// unless the thread sets its own with prctl(PR_SET_TIMERSLACK); a new
// thread starts with its creator's, which is also the default that
// PR_SET_TIMERSLACK 0 brings back (Linux's default_timer_slack_ns).
//
// Why it matters: a sleep shorter than the slack — the Go runtime's
// usleep(3) before it steals another P's next goroutine — halts its CPU
// until the timer, as on Linux, instead of costing a timer interrupt at
// once; and sleeps that end close together share one interrupt.

const defaultTimerSlack = 50_000 // ns

// slack is the threads' timer slack, per task slot: their own and the
// one PR_SET_TIMERSLACK 0 brings back (ns).
type slack struct {
	timerSlack        [sched.MaxTasks]uint64 // ns, the task's own slot
	timerSlackDefault [sched.MaxTasks]uint64
}

// SlackInit gives task t its creator's slack as its slack and its
// default (parent nil: the first task, Linux's default).
func (x *slack) SlackInit(t, parent *sched.Task) {
	s := uint64(defaultTimerSlack)
	if parent != nil {
		s = x.timerSlack[parent.Index()]
	}
	x.timerSlack[t.Index()], x.timerSlackDefault[t.Index()] = s, s
}

// ThreadSlack is the calling thread's timer slack for a wait (a slack
// beyond int64, which prctl may set, is as good as unbounded).
func (x *slack) ThreadSlack() int64 {
	return int64(min(x.timerSlack[sched.Current().Index()], 1<<63-1))
}

// PollSlack is the slack of a poll, select or epoll wait of timeout ns, as
// Linux's select_estimate_accuracy: 0.1 % of the timeout, at most 100 ms,
// at least the thread's timer slack.
func (x *slack) PollSlack(timeout int64) int64 {
	return max(min(timeout/1000, 100e6), x.ThreadSlack())
}

// prctl options (linux/prctl.h).
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// Prctl serves prctl's timer-slack options; the others are EINVAL.
func (x *slack) Prctl(option int, arg2 uintptr) (uintptr, abi.Errno) {
	i := sched.Current().Index()
	switch option {
	case prSetTimerSlack: // kept as given, read back as given (Linux's unsigned long)
		s := uint64(arg2)
		if s == 0 {
			s = x.timerSlackDefault[i]
		}
		x.timerSlack[i] = s
		return 0, 0
	case prGetTimerSlack:
		return uintptr(x.timerSlack[i]), 0
	}
	return 0, abi.EINVAL
}
