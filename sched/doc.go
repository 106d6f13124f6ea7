// Package sched is yolk's cooperative scheduler of kernel tasks, after "On the
// Design and Implementation of an Efficient Lock-Free Scheduler" (Negele,
// Friedrich, Oh, Egger) with the minimal context switch of "Stackful
// Coroutine Made Fast" (Li, Du, Hsu).
//
// Every thread the Go runtime creates is a task, plus one idle task per CPU.
// A task gives up its CPU only inside the kernel (Yield, Block, Exit); ready
// tasks wait on one global lock-free FIFO (package queue) with hazard
// pointers per processor. A switch names a finalizer that the resumed task
// runs right after the switch with the previous task as argument: putting the
// previous task on the ready queue or on a wait queue happens there and only
// there, so no other CPU can pick a task up before its state is saved, and
// blocking re-checks its condition after the task is queued (no lost
// wake-ups). The switch itself saves only SP, BP and the return PC; the g
// slot of the CPU's kernel TLS block is pointed at the resumed task's g.
//
// Kernel-context: runs with interrupts off on kernel stacks under a fake g;
// no allocation, no write barriers (tasks link to each other by uintptr), no
// calls into the Go runtime.
package sched
