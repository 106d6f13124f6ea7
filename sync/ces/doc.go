// Package ces provides Mutex, RWMutex, Cond and Semaphore for goroutines
// with combine-and-exchange handoff, after the paper "Minimize Your Critical
// Path with Combine-and-Exchange Locks" (König, Eppel, Becker): when a
// contended primitive is released, the goroutine that now owns it runs next
// on the releasing goroutine's processor, and the releasing goroutine moves
// to where other processors can pick it up. Critical sections of a
// contended lock thus follow one another on one processor without waiting
// in a run queue (no queuing delay), while the code after them spreads over
// the other processors. DispatchMutex is the classic alternative (wake the
// next owner, keep running), kept for comparison.
//
// # Guarantees
//
//   - FIFO and no barging. Once a goroutine waits, a released primitive is
//     never left free for a newcomer: ownership passes directly to the head
//     of the queue, and Lock, RLock, Acquire and the Try variants of a
//     primitive with waiters queue behind them (or fail). Waiters are
//     admitted in the order they queued. RWMutex is fair both ways: a writer
//     waits only for those who queued before it, and when a writer leaves,
//     the run of readers at the head of the queue is admitted together.
//     Semaphore grants permits in queue order; a large request at the head
//     is not overtaken.
//   - Exchange. A contended Mutex.Unlock, a writer's Unlock or last RUnlock
//     that admits waiters, a Semaphore.Release that admits waiters, and a
//     Cond.Signal that finds the mutex free make exactly one new owner run
//     next on the caller's processor and put the caller on the global run
//     queue. Further admitted waiters (readers, semaphore waiters) are made
//     runnable without the exchange (dispatched).
//   - Cond.Signal and Broadcast move waiters onto the mutex queue (or make
//     the first of them the owner if the mutex is free); a signalled waiter
//     is never woken only to block again on the mutex.
//   - No inline nesting: a handoff never runs the next owner on the
//     releasing goroutine's stack, so chains of handoffs do not grow any
//     stack.
//   - Progress: blocking, starvation-free. A waiter parks until ownership
//     is handed to it, and it is admitted after exactly the waiters queued
//     ahead of it (for RWMutex readers, the run of readers it belongs to),
//     so every Lock, RLock, Acquire and Wait returns provided every holder
//     eventually releases. Nothing is lock-free: all operations, including
//     the Try variants and Unlock, take the test-and-set guard, which is
//     held for a few instructions and spun on, yielding the processor
//     after a few attempts. A contended Unlock does not wait for anything
//     but the guard, yet returns only once some processor resumes the
//     unlocking goroutine from the global run queue (the exchange).
//   - Abortability: none. A waiter cannot time out or be cancelled;
//     TryLock and TryAcquire are the only ways not to wait (sync/cqs
//     provides context-cancellable waiting).
//
// # Mechanism
//
// Each primitive keeps its state in one atomic word whose lowest bit is a
// test-and-set guard protecting the rest of the word and an intrusive FIFO
// of waiter nodes (the paper's design). Uncontended operations are one
// compare-and-swap. The queue logic decides ownership under the guard and
// returns the waiters to resume; it never blocks. Blocking and resuming are
// separate (waiter.go, handoff.go), so a kernel-level variant can keep the
// queue logic and replace the handoff.
//
// A waiter parks by receiving from its own one-slot channel. The runtime
// parks the goroutine on the channel (gopark). The releaser sends on that
// channel: for a parked receiver the runtime's send path calls goready,
// which puts the goroutine into the releasing P's runnext slot (the
// goroutine that P runs next, ahead of its local run queue) and wakes an
// idle P if there is one. The releaser then calls runtime.Gosched, which
// puts the releasing goroutine on the global run queue and enters the
// scheduler; the scheduler takes runnext before the local and global
// queues. That is the exchange: channel send plus Gosched. The package uses
// no go:linkname, no unsafe and no runtime internals; a DispatchMutex
// handoff is the same channel send without the Gosched.
//
// Alternatives considered, all within what the linker allows without
// -checklinkname=0 (the runtime's "push" linknames): sync.Mutex's
// starvation mode (runtime semrelease with handoff) readies the waiter into
// runnext and then calls goyield, which puts the releaser on the tail of
// the same P's local run queue: the waiter still runs next, but the
// releaser stays queued on this P unless another P steals it, and it is
// reachable only through sync.runtime_Semrelease. runtime.goyield is
// linkable too and would give that same-P variant. runtime.gopark and
// runtime.goready are linkable and would save the channel's lock, but need
// the runtime's private wait-reason values and a commit callback that runs
// on the system stack, where the race detector has no context. There is no
// allowed hook that puts another goroutine on the global run queue or onto
// a chosen P.
//
// # Costs
//
// Uncontended Lock and Unlock: one compare-and-swap each. A contended Lock
// takes a waiter from a sync.Pool, the guard, and a channel receive that
// parks. A contended Unlock takes the guard, sends on the channel (the
// runtime's channel lock and goready), and passes through the scheduler
// once (Gosched: global run queue lock and schedule): on the releasing P
// the releaser is switched out and the new owner in. The releaser resumes
// only when some P takes it from the global run queue, behind whatever is
// queued there; that is the paper's stated trade-off (the critical path
// goes first, the code after a critical section waits).
//
// # Where Go's scheduler makes the guarantee approximate
//
//   - Every 61st schedule (by the P's schedule tick) the scheduler takes
//     the global run queue before runnext. If a handoff meets that tick, the
//     P runs the global queue's head, which may be the releaser itself,
//     before the new owner. Measured: the new owner ran first in about
//     98.5 % of handoffs on one P (TestExchangeRunsWaiterFirst), and ran
//     next on the releaser's P in 96-99 % of forced handoffs at two Ps
//     (TestExchangeRunsWaiterNextProcs2) and 99.5 % and more of the
//     contended handoffs of the locality workload (TestLocality).
//   - An idle P looking for work steals a busy P's runnext goroutine after
//     backing off about 3 µs. If the releasing P's thread is descheduled by
//     the OS between the send and the Gosched, the new owner may run on
//     another P.
//   - A goroutine taken from runnext inherits the time slice of the one it
//     replaces, so a long chain of handoffs on one P shares one 10 ms slice;
//     when it expires, the runtime preempts whichever goroutine runs (under
//     saturation, a lock holder) and queues it on the global run queue.
//   - A processor is a Go P, not a CPU: the OS may move the P's thread
//     between CPUs. "Where other processors can pick it up" is the global
//     run queue: an idle P is woken for it, but busy Ps look there only when
//     their local queue is empty or on the 61st tick.
//   - A waiter that is granted ownership between queuing and parking is
//     already running on its own P; it finds the token in its channel and
//     does not park. The releaser detects this (the token is still
//     buffered) and does not yield.
//   - Under the race detector the runtime randomises scheduling on
//     purpose: half of the readied goroutines go to the tail of the P's
//     local run queue instead of runnext, so the new owner runs next only
//     if that queue is otherwise empty (measured in TestLocality: 61-81 %
//     of handoffs under -race, 99.5 % and more without).
//   - "Moved to where other processors can pick it up" is a promise about
//     the queue, not about which P runs the releaser: with nothing else to
//     run, the releasing P itself takes it back from the global run queue
//     after the new owner blocks (TestExchangeRunsWaiterNextProcs2 logs how
//     often the other P took it: rarely, at 2 Ps with one idle).
//   - When several waiters are admitted at once, each readying replaces the
//     P's runnext slot and pushes the previous occupant to the tail of the
//     P's local run queue, from which other Ps steal; the exchanged waiter
//     is readied last so that it is the one in runnext.
//
// # What it does not do
//
// It does not spin before parking (the paper's primitives never busy-wait;
// only the guard spins, for a few instructions, then yields). It is not
// reentrant, has no timeouts or cancellation (see sync/cqs), and its values
// must not be copied after first use. Cond works only with a *Mutex.
package ces
