package main

// The soak test: the system-call fuzzer, futex stress, GC pressure and
// signals together for a long time, then the invariants. Not in the
// default run: make soak sets YOLK_SOAK (docs in README.md).

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"yolk/netsvc"
)

// testSoak runs for $YOLK_SOAK (a Go duration) at whatever CPUs the
// machine has (make soak: 4):
//
//   - the fuzzer, rounds of soakFuzzCalls calls with a new seed each
//     (its canaries, text hash and refused addresses checked every round,
//     its blocking-unmap phase included);
//   - futex stress: soakRing goroutines on their own threads pass a token
//     around a ring of unbuffered channels, and half as many contend for
//     one sync.Mutex around a counter in bursts: every hand-off is a futex
//     wait and wake;
//   - GC pressure: two goroutines allocate and drop pointer-rich garbage,
//     a third forces a collection every 100 ms;
//   - signals: SIGUSR1 by kill and SIGUSR2 by tgkill to a running thread,
//     every millisecond, into os/signal.
//
// At the end, with every goroutine done: the ring and the mutex counted
// every pass (no lost wake-up: a stall of 30 s fails), signals arrived,
// and fuzzInvariants between a snapshot before and after: tasks against
// the runtime's threads (none lost or left over), the scheduler's node
// bounds, the frames back (after a collection and FreeOSMemory).
func testSoak(t *T) {
	s := os.Getenv("YOLK_SOAK")
	if s == "" {
		t.Skipf("YOLK_SOAK is not set (make soak sets it)")
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("YOLK_SOAK=%q: %v", s, err)
	}
	netsvc.Offline(func() { soak(t, d) })
}

const (
	soakFuzzCalls = 5_000
	soakRing      = 8
)

func soak(t *T, d time.Duration) {
	before := fuzzSnapshot(t)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	var fuzzRounds atomic.Int64
	run(func() {
		for seed := uint64(1); time.Now().Before(end); seed++ {
			syscallFuzz(t, soakFuzzCalls, seed, false)
			fuzzRounds.Add(1)
		}
	})

	// Futex stress: a token ring and a contended mutex.
	var passes, locked atomic.Int64
	ring := make([]chan int, soakRing)
	for i := range ring {
		ring[i] = make(chan int)
	}
	var mu sync.Mutex
	counter := 0
	for i := 0; i < soakRing; i++ {
		run(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// At the end, the holder sends -(its index+1) around the
			// ring instead of the token: each passes it on and
			// leaves, the one before the holder last.
			next := (i + 1) % soakRing
			for v := range ring[i] {
				passes.Add(1)
				if v >= 0 && time.Now().After(end) {
					v = -(i + 1)
				}
				if v < 0 {
					if next != -v-1 {
						ring[next] <- v
					}
					return
				}
				ring[next] <- v + 1
			}
		})
		if i%2 == 0 { // half as many on the mutex, resting between bursts: the other loads must run too
			run(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for time.Now().Before(end) {
					for j := 0; j < 100; j++ {
						mu.Lock()
						counter++
						mu.Unlock()
					}
					locked.Add(100)
					time.Sleep(100 * time.Microsecond)
				}
			})
		}
	}
	ring[0] <- 0
	var stalled atomic.Bool
	run(func() { // the ring's watchdog: a lost wake-up stops it
		last, since := passes.Load(), time.Now()
		for time.Now().Before(end) {
			time.Sleep(time.Second)
			if p := passes.Load(); p != last {
				last, since = p, time.Now()
			} else if time.Since(since) > 30*time.Second {
				stalled.Store(true)
				t.Errorf("the futex ring stalled for 30 s at %d passes", p)
				return
			}
		}
	})

	// GC pressure.
	var collections atomic.Int64
	for g := 0; g < 2; g++ {
		run(func() {
			var keep [][]*[64]int
			for i := 0; time.Now().Before(end); i++ {
				b := make([]*[64]int, 256)
				for j := range b {
					b[j] = new([64]int)
				}
				keep = append(keep, b)
				if len(keep) > 64 {
					keep = keep[32:]
				}
				if i%16 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			runtime.KeepAlive(keep)
		})
	}
	run(func() {
		for time.Now().Before(end) {
			time.Sleep(100 * time.Millisecond)
			runtime.GC()
			collections.Add(1)
		}
	})

	// Signals.
	c := make(chan os.Signal, 64)
	signal.Notify(c, syscall.SIGUSR1, syscall.SIGUSR2)
	var sent, got atomic.Int64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-c:
				got.Add(1)
			case <-done:
				return
			}
		}
	}()
	run(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := 0; time.Now().Before(end); i++ {
			if i%2 == 0 {
				syscall.Kill(syscall.Getpid(), syscall.SIGUSR1)
			} else {
				unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGUSR2)
			}
			sent.Add(1)
			time.Sleep(time.Millisecond)
		}
	})

	wg.Wait()
	time.Sleep(100 * time.Millisecond) // the last signals arrive
	signal.Stop(c)
	close(done)
	mu.Lock()
	if int64(counter) != locked.Load() {
		t.Errorf("mutex counter %d, want %d", counter, locked.Load())
	}
	mu.Unlock()
	if got.Load() == 0 || got.Load() > sent.Load() {
		t.Errorf("signals: %d sent, %d received", sent.Load(), got.Load())
	}
	if fuzzRounds.Load() == 0 || collections.Load() == 0 || stalled.Load() {
		t.Errorf("fuzz rounds %d, collections %d, ring stalled %v", fuzzRounds.Load(), collections.Load(), stalled.Load())
	}
	after := fuzzSnapshot(t)
	fuzzInvariants(t, before, after)
	t.Logf("%v: %d fuzz rounds of %d calls, %d ring passes, %d mutex sections, %d collections, %d of %d signals received; tasks %d then %d, nodes peak %d (bound %d), free frames %d then %d",
		time.Since(start).Round(time.Second), fuzzRounds.Load(), soakFuzzCalls, passes.Load(), locked.Load(), collections.Load(),
		got.Load(), sent.Load(), before.Tasks, after.Tasks, after.NodesPeak, after.PeakBound, before.FramesFree, after.FramesFree)
}
