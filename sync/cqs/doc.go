// Package cqs implements the CancellableQueueSynchronizer of "CQS: A
// Formally-Verified Framework for Fair and Abortable Synchronization"
// (Koval, Khalanskiy, Alistarh, PLDI 2023) for goroutines, and the
// primitives the paper builds on it: Mutex, Semaphore, Barrier,
// CountDownLatch, and blocking pools (QueuePool, StackPool). Waiting is
// aborted through a context.Context.
//
// # The framework
//
// A Queue is an infinite array of cells, emulated by a linked list of
// segments of SegmentSize cells, with one Fetch-and-Add counter for Suspend
// and one for Resume. Suspend claims the next cell and parks there; Resume
// claims the next cell and wakes whoever is there. Resume may come first
// (elimination): in Async mode it leaves its value in the cell, in Sync
// mode it waits a bounded time for the Suspend and otherwise breaks the
// cell, and both operations restart. Cancellation is Simple (a Resume that
// meets a cancelled waiter fails) or Smart (the cancelled waiter
// de-registers itself through Handlers.OnCancellation and Resume skips its
// cell; when it was the last waiter, the cell becomes REFUSE and the
// Resume bound for it gives its value to Handlers.CompleteRefusedResume).
// Segments whose cells are all cancelled are unlinked in O(1), so memory
// stays bounded by the live waiters, however many are cancelled.
//
// How a waiter blocks is a separate policy (Waiting, Parker): the default
// GoroutineWaiting parks a goroutine on a one-element channel; a kernel
// variant can plug in another park/unpark without touching the queue.
//
// # Guarantees
//
//   - Fairness: waiters are resumed in the order in which they claimed
//     their cells (FIFO); a primitive never lets a newcomer take a permit,
//     lock or element while a goroutine is waiting for it (TryAcquire,
//     TryLock do not barge).
//   - Abortability: a waiter whose ctx is done returns ctx.Err() and the
//     primitive is left as if it had never waited (Barrier: its arrival
//     stands). If a hand-over races with the cancellation, exactly one
//     wins: either the waiter gets the value and succeeds, or the value
//     goes to the next waiter or back to the primitive; nothing is lost or
//     delivered twice.
//   - Progress: Suspend and Async Resume are lock-free (Fetch-and-Add
//     on the contended path, CAS on the cell). A Sync Resume waits a
//     bounded time for its Suspend, and, when it meets a waiter cancelled
//     at that very moment, until that waiter's cancellation handler has
//     run (the one blocking step). Put never waits; QueuePool.Take waits a
//     bounded time for a late Put before both restart; StackPool.Take may
//     spin while a refused element is pushed back.
//   - Linearizability: Semaphore (with TryAcquire), Mutex and
//     CountDownLatch are meant to be linearizable, a cancelled operation
//     counting as a no-op (Sync resumption exists for TryAcquire's sake);
//     the pools as bags, not as queues or stacks (as the paper notes).
//     This package's tests check random histories against sequential
//     specifications, with seeded yields and sleeps injected at the
//     algorithm's race points, and force the named races
//     deterministically; the paper's Iris proofs cover safety, not
//     linearizability, and nothing here is proven. The semaphore's
//     cancellation handler differs from the paper's for this reason: the
//     paper's puts a refused permit back at once, and the injected yields
//     showed a TryAcquire failing after a Release had returned with no
//     permit held (a later Release can take the refused cell while the
//     earlier one's permit is still on its way); here the refused Release
//     puts its permit back itself (see permitHandlers).
//
// # Costs
//
// Each suspension that actually parks allocates a waiter node (48 bytes)
// and, with GoroutineWaiting, a channel (96 bytes); a Suspend that finds
// its value already there or its ctx already done allocates nothing.
// Every SegmentSize suspensions allocate a segment (544 bytes). Values
// handed through the queue are stored as interface values (boxed unless
// pointer-shaped). A Put into a QueuePool stores the element inline in its
// own segments; a Put into a StackPool allocates a stack node.
//
// What it may not do: a Queue must be initialised with Init and not be
// copied; primitives must be created with their New functions. A Barrier is
// used once.
package cqs
