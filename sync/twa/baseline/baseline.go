// Package baseline holds the spin locks that TWA (package yolk/sync/twa)
// is measured against: as in the TWA paper, the classic ticket lock and
// the MCS queue lock, and the test-and-test-and-set lock the kernel used
// before it took TWA. They are baselines for tests and benchmarks, not
// locks for production use; they take the same waiting policies as
// twa.Lock (twa.Yield for goroutines, twa.Spin for kernel context) so that
// comparisons differ only in the algorithm.
//
// Ticket and MCS grant the lock in FIFO order of arrival and give mutual
// exclusion and starvation freedom under fair scheduling; TTAS gives
// mutual exclusion only. None parks a waiter. Ticket is 8 bytes and all
// its waiters poll one word (global spinning); so is TTAS (4 bytes), whose
// waiters also all race for the word at each release. MCS is one pointer per lock plus one node per acquisition, and every
// waiter polls its own node (local spinning). MCS stores Go pointers
// (atomic.Pointer, with write barriers), so unlike twa.Lock[twa.Spin] it
// is not fit for kernel context whatever the policy.
package baseline
