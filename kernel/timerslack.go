package kernel

import (
	"yolk/kernel/abi"
	"yolk/sched"
)

// Timer slack, as Linux's. A timed wait the application makes —
// nanosleep, clock_nanosleep, a futex wait, rt_sigtimedwait, a socket's
// timeout — may end up to its thread's timer slack after its deadline,
// never before: the CPU's timer is armed for the latest end, and an
// interrupt that comes earlier for another task takes it along once its
// deadline has passed (sched.BlockIntr). epoll_pwait's slack also grows
// with its timeout (pollSlack). The slack is 50 µs, Linux's default,
// unless the thread sets its own with prctl(PR_SET_TIMERSLACK); a new
// thread starts with its creator's, which is also the default that
// PR_SET_TIMERSLACK 0 brings back (Linux's default_timer_slack_ns).
//
// Why it matters: a sleep shorter than the slack — the Go runtime's
// usleep(3) before it steals another P's next goroutine — halts its CPU
// until the timer, as on Linux, instead of costing a timer interrupt at
// once; and sleeps that end close together share one interrupt.

const defaultTimerSlack = 50_000 // ns

var (
	timerSlack        [sched.MaxTasks]int64 // ns, the task's own slot
	timerSlackDefault [sched.MaxTasks]int64
)

// timerSlackInit gives task t its creator's slack as its slack and its
// default (parent nil: the first task, Linux's default).
func timerSlackInit(t, parent *sched.Task) {
	s := int64(defaultTimerSlack)
	if parent != nil {
		s = timerSlack[parent.Index()]
	}
	timerSlack[t.Index()], timerSlackDefault[t.Index()] = s, s
}

// pollSlack is the slack of a poll, select or epoll wait of timeout ns, as
// Linux's select_estimate_accuracy: 0.1 % of the timeout, at most 100 ms,
// at least the thread's timer slack.
func pollSlack(timeout int64) int64 {
	return max(min(timeout/1000, 100e6), timerSlack[sched.Current().Index()])
}

// prctl options (linux/prctl.h).
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// sysPrctl serves the timer-slack options; the others are EINVAL.
func sysPrctl(option int, arg2 uintptr) (uintptr, abi.Errno) {
	i := sched.Current().Index()
	switch option {
	case prSetTimerSlack:
		s := int64(arg2)
		if arg2 == 0 {
			s = timerSlackDefault[i]
		} else if s < 0 {
			s = 1<<63 - 1 // an unsigned long beyond int64: as good as unbounded
		}
		timerSlack[i] = s
		return 0, 0
	case prGetTimerSlack:
		return uintptr(timerSlack[i]), 0
	}
	return 0, abi.EINVAL
}
