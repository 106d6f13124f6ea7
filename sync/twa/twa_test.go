package twa

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"yolk/sync/twa/internal/locktest"
)

// subject adapts a Lock to locktest.Subject.
type subject[P Policy] struct {
	l     *Lock[P]
	start atomic.Uint32 // ticket of worker 0's latest Lock
}

func newSubject[P Policy](l *Lock[P]) *subject[P] {
	return &subject[P]{l: l}
}

func (s *subject[P]) Lock(w int) {
	if tx := s.l.lock(); w == 0 {
		s.start.Store(tx)
	}
}

func (s *subject[P]) Unlock(int)       { s.l.Unlock() }
func (s *subject[P]) TryLock(int) bool { return s.l.TryLock() }
func (s *subject[P]) String() string {
	return fmt.Sprintf("ticket=%d grant=%d", atomic.LoadUint32(&s.l.ticket), atomic.LoadUint32(&s.l.grant))
}

func (s *subject[P]) Depth() int { return int(s.l.depth()) }

// arrived reports whether worker w of a locktest.FIFO run has taken its
// ticket: the holder, worker 0, took start, worker w takes start+w.
func (s *subject[P]) arrived(w int) bool {
	return atomic.LoadUint32(&s.l.ticket)-s.start.Load() >= uint32(w)+1
}

// nearWrap is a ticket value a few hundred acquisitions before the uint32
// counters wrap, so that the tests cross the wrap.
const nearWrap = ^uint32(0) - 300

// depth is the number of Lock calls holding or waiting for l.
func (l *Lock[P]) depth() uint32 {
	return atomic.LoadUint32(&l.ticket) - atomic.LoadUint32(&l.grant)
}

// at returns a free lock whose ticket and grant are both t.
func at[P Policy](t uint32) *Lock[P] {
	return &Lock[P]{ticket: t, grant: t}
}

// spinEnv runs f, a test of the Spin policy, with GOMAXPROCS set to procs
// and the garbage collector off. A goroutine waiting with Spin is never
// preempted — the lock's wait path and Spin's methods are nosplit, which
// Go treats as one long unsafe point — so a stop-the-world that stopped
// the holder would wait forever for the waiters: the deadlock that makes
// Lock[Spin] unfit for ordinary goroutines. In kernel context the waiters
// run inside system calls, which a stop-the-world does not wait for.
// procs must leave every spinning goroutine a P of its own.
func spinEnv(t *testing.T, procs int, f func(t *testing.T)) {
	t.Run(fmt.Sprintf("Spin/procs=%d", procs), func(t *testing.T) {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		f(t)
	})
}

// withProcs runs f with GOMAXPROCS set to n.
func withProcs(t *testing.T, n int, f func(t *testing.T)) {
	t.Run(fmt.Sprintf("procs=%d", n), func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
		f(t)
	})
}

// yieldProcs are the GOMAXPROCS values the Yield policy is tested at: one
// (every waiter must yield for the holder to run) and the machine's.
func yieldProcs() []int {
	if n := runtime.NumCPU(); n > 1 {
		return []int{1, n}
	}
	return []int{1}
}

// spinWorkers is how many goroutines the Spin stress tests use: one per
// CPU, at most four, as kernel tasks spinning on a lock each have a CPU.
// Spin never yields, so the tests run with GOMAXPROCS = spinWorkers+1 and
// every goroutine has a thread. More spinners than CPUs would test the
// operating system's time slicing, not the lock: each handover to a
// descheduled thread costs a time slice. On a 2-CPU machine that means two
// workers and no long-term waiters in the stress tests; the Spin policy's
// long-term path is then exercised by TestFIFO (staged waiters, each on
// its own thread) and TestSpinNoAllocs, and the Yield stress tests run the
// same source of the lock logic (compiled separately: the two policies
// differ in GC shape, see Yield).
var spinWorkers = min(runtime.NumCPU(), 4)

func scale(n int) int {
	if testing.Short() {
		return max(n/5, 1)
	}
	return n
}

// TestMutualExclusion runs each policy under two loads: a deep queue (8
// goroutines, holders sometimes yielding, so most waiters are long-term)
// and two goroutines, where the lock is often free and TryLock succeeds.
func TestMutualExclusion(t *testing.T) {
	for _, procs := range yieldProcs() {
		withProcs(t, procs, func(t *testing.T) {
			t.Run("Yield/queue", func(t *testing.T) {
				locktest.MutualExclusion(t, newSubject(new(Lock[Yield])), locktest.Load{Workers: 8, Iters: scale(2000), Seed: 1, HoldYield: 8, MinDepth: 3})
			})
			t.Run("Yield/queue/wrap", func(t *testing.T) {
				locktest.MutualExclusion(t, newSubject(at[Yield](nearWrap)), locktest.Load{Workers: 8, Iters: scale(500), Seed: 2, HoldYield: 8, MinDepth: 3})
			})
			t.Run("Yield/pair", func(t *testing.T) {
				if locktest.MutualExclusion(t, newSubject(new(Lock[Yield])), locktest.Load{Workers: 2, Iters: scale(5000), Seed: 3}) == 0 {
					t.Error("no TryLock succeeded: the TryLock path was not exercised")
				}
			})
		})
	}
	spinEnv(t, spinWorkers+1, func(t *testing.T) {
		if locktest.MutualExclusion(t, newSubject(new(Lock[Spin])), locktest.Load{Workers: spinWorkers, Iters: scale(1000), Seed: 4}) == 0 {
			t.Error("no TryLock succeeded: the TryLock path was not exercised")
		}
	})
}

// TestAdmissionOrder checks FIFO admission under free-running contention:
// every acquisition — by Lock or by TryLock — records, inside its critical
// section, the ticket it was admitted with. The record must be every
// ticket exactly once, in ticket order: the grant order is the ticket
// order and no ticket is skipped or admitted twice. The counters start
// just before the uint32 wrap.
func TestAdmissionOrder(t *testing.T) {
	run := func(t *testing.T, lock func() uint32, tryLock func() (uint32, bool), unlock func(), depth func() uint32, start uint32, workers, iters int) {
		var (
			log     []uint32 // appended under the lock
			deepest uint32   // under the lock
			begin   = make(chan struct{})
			wg      sync.WaitGroup
		)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(7, uint64(w)))
				<-begin
				for range iters {
					tx, ok := uint32(0), false
					if rng.IntN(8) == 0 {
						tx, ok = tryLock()
					}
					if !ok {
						tx = lock()
					}
					log = append(log, tx)
					deepest = max(deepest, depth())
					if rng.IntN(8) == 0 {
						runtime.Gosched() // while holding: let a queue form
					}
					unlock()
					if rng.IntN(4) == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		close(begin)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(locktest.Timeout):
			t.Fatalf("not finished after %v", locktest.Timeout)
		}
		if len(log) != workers*iters {
			t.Fatalf("%d admissions recorded, want %d", len(log), workers*iters)
		}
		if workers >= 3 && deepest < 3 {
			t.Errorf("deepest queue seen was %d, want ≥ 3: long-term waiting not exercised", deepest)
		}
		for i, tx := range log {
			if want := start + uint32(i); tx != want {
				t.Fatalf("admission %d had ticket %d, want %d (tickets admitted out of order)", i, tx, want)
			}
		}
	}
	for _, procs := range yieldProcs() {
		withProcs(t, procs, func(t *testing.T) {
			l := at[Yield](nearWrap)
			run(t, l.lock, l.tryLock, l.Unlock, l.depth, nearWrap, 8, scale(1000))
		})
	}
	spinEnv(t, spinWorkers+1, func(t *testing.T) {
		l := at[Spin](nearWrap)
		run(t, l.lock, l.tryLock, l.Unlock, l.depth, nearWrap, spinWorkers, scale(2000))
	})
}

// TestFIFO checks admission in arrival order with the arrivals staged one
// at a time, so all but the first waiter are long-term waiters in the
// waiting array, for locks at fresh counters and across the wrap.
func TestFIFO(t *testing.T) {
	for _, procs := range yieldProcs() {
		withProcs(t, procs, func(t *testing.T) {
			for _, start := range []uint32{0, nearWrap + 290} {
				s := newSubject(at[Yield](start))
				for range 3 {
					locktest.FIFO(t, s, 16, s.arrived)
				}
			}
		})
	}
	const n = 6 // waiters, each on its own thread
	spinEnv(t, n+2, func(t *testing.T) {
		s := newSubject(at[Spin](nearWrap + 295))
		for range 3 {
			locktest.FIFO(t, s, n, s.arrived)
		}
	})
}

func TestTryLock(t *testing.T) {
	t.Run("Yield", func(t *testing.T) {
		s := newSubject(new(Lock[Yield]))
		locktest.TryLock(t, s, s.arrived)
	})
	spinEnv(t, 4, func(t *testing.T) {
		s := newSubject(at[Spin](^uint32(0)))
		locktest.TryLock(t, s, s.arrived)
	})
	t.Run("failed TryLock takes no ticket", func(t *testing.T) {
		var l Lock[Spin]
		l.Lock()
		for range 10 {
			if l.TryLock() {
				t.Fatal("TryLock succeeded on a held lock")
			}
		}
		if tk, g := l.ticket, l.grant; tk != 1 || g != 0 {
			t.Fatalf("after Lock and 10 failed TryLocks: ticket=%d grant=%d, want 1 0", tk, g)
		}
		l.Unlock()
		if tk, g := l.ticket, l.grant; tk != 1 || g != 1 {
			t.Fatalf("after Unlock: ticket=%d grant=%d, want 1 1", tk, g)
		}
	})
}

// TestHash checks the paper's hash: (ticket×127 XOR address) mod 4096, and
// that consecutive tickets of one lock never share a 128-byte sector.
func TestHash(t *testing.T) {
	locks := new([3]Lock[Spin])
	for i := range locks {
		l := &locks[i]
		a := uintptr(unsafe.Pointer(l))
		for tx := uint32(0); tx < 2*waitSlots; tx++ {
			got := waitSlot(unsafe.Pointer(l), tx)
			want := &waitArray.slot[(uintptr(tx)*127^a)%4096]
			if got != want {
				t.Fatalf("lock %#x ticket %d: slot %p, want %p", a, tx, got, want)
			}
			next := waitSlot(unsafe.Pointer(l), tx+1)
			if sectorOf(got) == sectorOf(next) {
				t.Fatalf("lock %#x: tickets %d and %d share a %d-byte sector", a, tx, tx+1, sector)
			}
		}
	}
	base := uintptr(unsafe.Pointer(&waitArray))
	first := uintptr(unsafe.Pointer(&waitArray.slot[0]))
	last := uintptr(unsafe.Pointer(&waitArray.slot[waitSlots-1])) + 8
	if first-base < sector || base+unsafe.Sizeof(waitArray)-last < sector || first%8 != 0 {
		t.Fatalf("waiting array slots at [%#x,%#x) in [%#x,%#x): want a %d-byte guard on each side, 8-byte alignment",
			first, last, base, base+unsafe.Sizeof(waitArray), sector)
	}
}

func sectorOf(p *uint64) uintptr { return uintptr(unsafe.Pointer(p)) / sector }

// TestUnlockNotifiesPromotedTicket checks, slot by slot, that Unlock
// increments exactly one slot of the waiting array, the one of the ticket
// it promotes to immediate successor (grant+1 after the handover), when
// that ticket has been taken; and none when it has not (no long-term
// waiter to move on). Nothing else may run in the test binary meanwhile
// (tests are sequential).
func TestUnlockNotifiesPromotedTicket(t *testing.T) {
	for _, start := range []uint32{0, 41, ^uint32(0) - 1, ^uint32(0)} {
		for waiters := uint32(0); waiters <= 2; waiters++ {
			l := at[Spin](start)
			l.Lock() // ticket start
			// Waiters' tickets start+1 .. start+waiters, taken but not
			// waited on (Unlock does not look at the waiters).
			atomic.AddUint32(&l.ticket, waiters)
			before := snapshot()
			l.Unlock() // grant start+1: promotes ticket start+2
			after := snapshot()
			var want *uint64
			if waiters == 2 {
				want = waitSlot(unsafe.Pointer(l), start+2)
			}
			for i := range after {
				d := after[i] - before[i]
				switch {
				case &waitArray.slot[i] == want && d != 1:
					t.Errorf("start %d, %d waiting: slot of ticket %d changed by %d, want 1", start, waiters, start+2, d)
				case &waitArray.slot[i] != want && d != 0:
					t.Errorf("start %d, %d waiting: slot %d changed by %d, want 0", start, waiters, i, d)
				}
			}
		}
	}
}

func snapshot() *[waitSlots]uint64 {
	var s [waitSlots]uint64
	for i := range s {
		s[i] = atomic.LoadUint64(&waitArray.slot[i])
	}
	return &s
}

// collidingLocks returns locks of which the first four share every slot of
// the waiting array (their addresses are 4096 bytes apart, so the hash
// cannot tell them apart: the paper's entrained locks) and the rest do
// not, all with ticket = grant = start so that the colliding ones also
// move in unison. It checks that the collisions are real.
func collidingLocks[P Policy](t *testing.T, start uint32) []Subject {
	const stride = 4096 / int(unsafe.Sizeof(Lock[P]{}))
	arr := new([4*stride + 8]Lock[P])
	var subjects []Subject
	for i := range 4 {
		subjects = append(subjects, newSubject(at2(&arr[i*stride], start)))
	}
	for _, i := range []int{1, 2, 5, stride + 3} {
		subjects = append(subjects, newSubject(at2(&arr[i], start)))
	}
	for tx := start; tx != start+waitSlots; tx++ {
		a := waitSlot(unsafe.Pointer(&arr[0]), tx)
		for i := 1; i < 4; i++ {
			if waitSlot(unsafe.Pointer(&arr[i*stride]), tx) != a {
				t.Fatalf("locks 0 and %d do not collide at ticket %d", i*stride, tx)
			}
		}
	}
	return subjects
}

// Subject is locktest.Subject, for brevity.
type Subject = locktest.Subject

func at2[P Policy](l *Lock[P], t uint32) *Lock[P] {
	l.ticket, l.grant = t, t
	return l
}

// TestBurstsCollidingLocks checks for lost wake-ups, TWA's failure mode:
// bursts of contention on locks whose long-term waiters share waiting-array
// slots, separated by idle periods in which nothing touches the locks, so
// that every burst starts from slots last incremented long before.
func TestBurstsCollidingLocks(t *testing.T) {
	for _, procs := range yieldProcs() {
		withProcs(t, procs, func(t *testing.T) {
			// Deep queues: most waiters are long-term.
			locktest.Bursts(t, collidingLocks[Yield](t, nearWrap), locktest.Load{Workers: 8, Iters: 200, Seed: 11, HoldYield: 8, MinDepth: 3}, scale(25), time.Millisecond)
			if procs > 1 {
				// Two colliding locks at a high handover rate, processors
				// running in parallel: a waiter often becomes long-term
				// just as the holder releases, the race that the order of
				// the waiter's loads and of Unlock's stores decides.
				locktest.Bursts(t, collidingLocks[Yield](t, 0)[:2], locktest.Load{Workers: 6, Iters: 2000, Seed: 13}, scale(15), time.Millisecond)
			}
		})
	}
	spinEnv(t, spinWorkers+1, func(t *testing.T) {
		locktest.Bursts(t, collidingLocks[Spin](t, nearWrap), locktest.Load{Workers: spinWorkers, Iters: 200, Seed: 12}, scale(25), time.Millisecond)
	})
}
