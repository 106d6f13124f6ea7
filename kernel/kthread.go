package kernel

import "yolk/sched"

// The kernel's own task: the committer, which every second commits each
// disk's journal transaction older than 5 s (Linux's jbd2 thread), so
// that work no fsync covered is durable within about 6 s of the call.
// It starts at boot after the first task when a disk is mounted
// read-write with a journal. It is not one of the program's threads:
// sched.Task.Kernel keeps it out of /proc's task list and of the
// threads a process-wide signal may go to, and it blocks every signal.

func kthreadPC() uintptr

// startCommitter creates and readies the committer if a disk needs it.
func startCommitter() {
	if !dsk.Journaled() {
		return
	}
	t := sched.Alloc()
	if t == nil {
		klog("disk: no task for the journal's committer: transactions commit only at fsync, sync and when full\n")
		return
	}
	t.Kernel = true // at once: Alloc made the slot live
	if kernelStack(t) == 0 {
		outOfMemory()
	}
	sigInit(t, t)
	sigs.Mask[t.Index()] = ^uint64(0)
	timerSlackInit(t, nil)
	t.Prepare(t.KStackHi, kthreadPC())
	sched.Ready(t)
}

// kthreadReturned stops the machine: a kernel task's body returned.
func kthreadReturned() { fatal("kthread: a kernel task's body returned") }

// kthreadMain is the committer's body (entered from kthread, the
// assembly its first switch returns to).
func kthreadMain() {
	sched.FinishSwitch()
	for {
		sched.Block(nil, 0, 0, 0, nanotime()+1e9)
		dsk.CommitOld()
	}
}
