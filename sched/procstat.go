package sched

import "sync/atomic"

// What the kernel's /proc and /sys files read of the scheduler
// (kernel/procsnap): each a racy read of one word, as Linux's
// /proc readers take them.

// IdleTask is c's idle task: its CPU time (CPUTime) is the time c has
// been idle, halted or looking for work.
func (c *CPU) IdleTask() *Task { return taskAt(c.idle) }

// Runnable reports whether t is running or ready to run (Linux's 'R'),
// not waiting.
func (t *Task) Runnable() bool { return t.st() != stBlocked }

// LastTID is the last thread ID given out (idle tasks' included).
func LastTID() int32 { return atomic.LoadInt32(&nextTID) - 1 }

// ExitedCPUTime is the CPU time of the tasks that have exited.
func ExitedCPUTime() int64 { return atomic.LoadInt64(&exited) }
