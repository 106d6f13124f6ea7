// Package sched is yolk's cooperative scheduler of kernel tasks on every
// CPU, after "On the Design and Implementation of an Efficient Lock-Free
// Scheduler" (Negele, Friedrich, Oh, Egger), with the minimal context
// switch of "Stackful Coroutine Made Fast" (Li, Du, Hsu), and the kernel's
// locks: TWALock, the TWA spin lock of "TWA – Ticket Locks Augmented with
// a Waiting Array" (package sync/twa), and Mutex, a blocking mutex with
// the combine-and-exchange handoff of "Minimize Your Critical Path with
// Combine-and-Exchange Locks".
//
// Every thread the Go runtime creates is a task, plus one idle task per
// CPU. A task gives up its CPU only inside the kernel (Yield, Block,
// Mutex.Lock, a contended Mutex.Unlock, Exit, and YieldSlice at the end of
// a system call once it has run a Slice while others were ready), with
// one exception, Preempt: after a timer or wake-up interrupt that took it
// from application code, on its own kernel stack, if the interrupt woke a
// task for this CPU, its Slice is over, or it has used its Budget while a woken task
// waits (docs/preemption.md). Every CPU runs the same loop on two global
// lock-free FIFOs of ready tasks (package queue, one domain) with hazard
// pointers per processor: tasks that have used less than a Budget of CPU
// since they last blocked, served first, and the others, served first
// once one has waited a Slice. At most one task per CPU is inside a queue
// operation, because nothing switches or takes an interrupt inside one.
// A switch names a finalizer that the resumed task runs right after the
// switch with the previous task as argument: putting the previous task on
// the ready queue, a wait queue or a mutex queue happens there and only
// there, so no other CPU can pick a task up before its state is saved, and
// blocking re-checks its condition after the task is queued (no lost
// wake-ups). The switch itself saves only SP, BP and the return PC; the g
// slot of the CPU's kernel TLS block is pointed at the resumed task's g. A
// task may resume on another CPU than the one it left.
//
// Idle and wake-up: a CPU with nothing to run sets its bit in the idle
// mask (the paper's "working" counter, as a set of processors), looks at
// the queue once more and halts; making a task ready claims one idle CPU's
// bit and interrupts it (kick). Both sides use sequentially consistent
// atomics in opposite orders, so either the waker sees the bit or the
// idle CPU sees the task.
//
// Timers: each CPU keeps the tasks that blocked on it with a deadline in
// its own min-heap (timer.go), ordered by their latest ends (deadline plus
// timer slack); the kernel arms that CPU's one-shot timer for the
// earliest and calls ExpireTimers from its interrupt.
//
// CPU time: each task's time on a CPU is counted at its switches
// (cputime.go), for the kernel's CPU clocks and CPU-time timers.
//
// Wait queues (futex buckets, epoll) are TWA-locked lists, not the
// paper's lock-free queue: a wake-up takes the waiters with one key out of
// the middle of the list and a timed-out waiter unlinks itself from
// wherever it is, which a FIFO with operations only at its ends cannot do.
// A task's state word carries a count of its waits, so that a waker that
// lost a race (a timeout against a futex wake) cannot wake the task's next
// wait.
//
// Kernel-context: runs with interrupts off on kernel stacks under a fake g
// — asserted, not assumed: queue operations, switches and spin locks
// fail loudly (die, a fault report naming the broken invariant) when
// interrupts are on, and a switch while a spin lock is held is refused the
// same way. Interrupt handlers may make tasks ready: an interrupt reaches a
// CPU only in application code or halted in its idle loop, never inside a
// queue operation, so the handler may use the CPU's own hazard-pointer
// slot. No allocation, no write barriers (tasks link to each other by
// uintptr), no calls into the Go runtime.
package sched
