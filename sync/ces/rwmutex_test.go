package ces

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (rw *RWMutex) queued() int {
	v := guard64(&rw.state)
	n := rw.q.len()
	rw.state.Store(v &^ guardBit)
	return n
}

// Readers and writers exclude each other, writers exclude writers, and
// readers do share the lock.
func TestRWMutexExclusion(t *testing.T) {
	withProcs(t, []int{1, 2}, func(t *testing.T) {
		var rw RWMutex
		const G = 48
		iters := scale(1500)
		var readers, writers atomic.Int32
		var maxReaders atomic.Int32
		shared := 0
		var wg sync.WaitGroup
		for g := range G {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(4, uint64(g)))
				for range iters {
					if r.IntN(4) == 0 {
						rw.Lock()
						if w, rd := writers.Add(1), readers.Load(); w != 1 || rd != 0 {
							t.Errorf("writer inside with %d writers, %d readers", w, rd)
						}
						shared++
						if r.IntN(4) == 0 {
							runtime.Gosched()
						}
						writers.Add(-1)
						rw.Unlock()
					} else {
						rw.RLock()
						n := readers.Add(1)
						if writers.Load() != 0 {
							t.Errorf("reader inside with a writer")
						}
						if n > maxReaders.Load() {
							maxReaders.Store(n) // racy max, only a hint
						}
						_ = shared
						runtime.Gosched()
						readers.Add(-1)
						rw.RUnlock()
					}
				}
			}()
		}
		waitOrDump(t, &wg, 30*time.Second, "rw exclusion")
		if maxReaders.Load() < 2 {
			t.Errorf("readers never overlapped (max %d)", maxReaders.Load())
		}
		if !rw.TryLock() {
			t.Fatal("RWMutex not free at the end")
		}
		rw.Unlock()
	})
}

// Writer non-starvation: while readers hold the lock and more readers keep
// arriving, a queued writer is admitted as soon as the readers that were
// inside before it leave; readers arriving after it wait behind it.
func TestRWMutexWriterNotStarved(t *testing.T) {
	withProcs(t, []int{1, 2}, func(t *testing.T) {
		var rw RWMutex
		rw.RLock() // the test is an early reader
		var events []string
		var mu sync.Mutex
		log := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }

		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw.Lock()
			log("W")
			rw.Unlock()
		}()
		waitFor(t, 5*time.Second, "writer to queue", func() bool { return rw.queued() == 1 })
		if rw.TryRLock() {
			t.Fatal("TryRLock succeeded with a writer queued")
		}
		// A steady stream of late readers.
		stop := make(chan struct{})
		var once sync.Once
		defer once.Do(func() { close(stop) }) // on failure too
		var late atomic.Int32
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					rw.RLock()
					late.Add(1)
					if j == 0 {
						log("R" + itoa(i))
					}
					rw.RUnlock()
				}
			}()
		}
		waitFor(t, 5*time.Second, "late readers to queue", func() bool { return rw.queued() == 9 })
		if late.Load() != 0 {
			t.Fatal("a reader arriving after a queued writer got in first")
		}
		rw.RUnlock()
		waitFor(t, 5*time.Second, "writer to run", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(events) > 0
		})
		once.Do(func() { close(stop) })
		waitOrDump(t, &wg, 10*time.Second, "writer starvation")
		if events[0] != "W" {
			t.Fatalf("events %v: writer not first", events)
		}
	})
}

// Admission order: with a writer holding the lock and the queue
// r1 r2 w2 r3, Unlock admits r1 and r2 together, then w2, then r3.
func TestRWMutexReaderBatch(t *testing.T) {
	var rw RWMutex
	rw.Lock()
	var inside atomic.Int32
	var mu sync.Mutex
	var trace []string
	log := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
	bothIn := make(chan struct{})
	var wg sync.WaitGroup
	reader := func(name string, wait bool) {
		defer wg.Done()
		rw.RLock()
		log(name)
		if inside.Add(1) == 2 {
			close(bothIn)
		}
		if wait {
			<-bothIn // r1 and r2 must hold the lock at the same time
		}
		inside.Add(-1)
		rw.RUnlock()
	}
	start := func(f func()) {
		n := rw.queued()
		wg.Add(1)
		go f()
		waitFor(t, 5*time.Second, "queue", func() bool { return rw.queued() == n+1 })
	}
	start(func() { reader("r1", true) })
	start(func() { reader("r2", true) })
	start(func() {
		defer wg.Done()
		rw.Lock()
		log("w2")
		if inside.Load() != 0 {
			t.Error("writer with readers inside")
		}
		rw.Unlock()
	})
	start(func() { reader("r3", false) })
	rw.Unlock()
	waitOrDump(t, &wg, 10*time.Second, "reader batch")
	got := trace[0] + trace[1] + "," + trace[2] + "," + trace[3]
	if got != "r1r2,w2,r3" && got != "r2r1,w2,r3" {
		t.Fatalf("admission trace %v", trace)
	}
}

func TestRWMutexMisuse(t *testing.T) {
	mustPanic(t, "RUnlock of unlocked", func() { new(RWMutex).RUnlock() })
	mustPanic(t, "Unlock of unlocked", func() { new(RWMutex).Unlock() })
	var rw RWMutex
	l := rw.RLocker()
	l.Lock()
	if rw.TryLock() {
		t.Fatal("TryLock with a reader inside")
	}
	if !rw.TryRLock() {
		t.Fatal("TryRLock with only readers inside")
	}
	rw.RUnlock()
	l.Unlock()
	if !rw.TryLock() {
		t.Fatal("TryLock on a free RWMutex")
	}
	if rw.TryRLock() {
		t.Fatal("TryRLock with a writer inside")
	}
	rw.Unlock()
}

// Bursts separated by idle periods, readers and writers mixed.
func TestRWMutexBurstsNoLostWakeup(t *testing.T) {
	withProcs(t, []int{1, 2}, func(t *testing.T) {
		var rw RWMutex
		r := rand.New(rand.NewPCG(5, 5))
		for round := range scale(150) {
			n := 2 + r.IntN(40)
			var wg sync.WaitGroup
			writes := 0
			want := 0
			for i := range n {
				write := r.IntN(3) == 0
				if write {
					want += 5
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 5 {
						if write {
							rw.Lock()
							writes++
							rw.Unlock()
						} else {
							rw.RLock()
							_ = i
							rw.RUnlock()
						}
					}
				}()
			}
			waitOrDump(t, &wg, 10*time.Second, "rw burst "+itoa(round))
			if writes != want {
				t.Fatalf("round %d: %d writes, want %d", round, writes, want)
			}
			if rw.state.Load() != 0 {
				t.Fatalf("round %d: idle RWMutex state %#x", round, rw.state.Load())
			}
			time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
		}
	})
}
