package queue

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Benchmarks of one Enqueue+Dequeue pair, the ready-queue work of a task
// switch. Run with -cpu 1,2: GOMAXPROCS goroutines each play one processor,
// enqueue the item they hold and dequeue the one at the front. Baselines in
// the same shape: a ring buffer under sync.Mutex and a buffered channel.

func BenchmarkPair(b *testing.B) {
	np := runtime.GOMAXPROCS(0)
	f := newFixture(b, np, 1, np, 0)
	q := &f.queues[0]
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		p := int(next.Add(1)) - 1
		it := &f.items[p].Item
		for pb.Next() {
			if err := f.d.Enqueue(p, q, it); err != nil {
				b.Error(err)
				return
			}
			var err error
			if it, err = f.d.Dequeue(p, q); it == nil || err != nil {
				b.Errorf("Dequeue = %v, %v", it, err)
				return
			}
		}
	})
	b.StopTimer()
	st := f.d.Stats()
	b.ReportMetric(float64(st.Exchanges)/float64(b.N), "exchanges/op")
	if st.InUse > uint64(bound(np, 1, np)) {
		b.Fatalf("%d nodes in use, bound %d", st.InUse, bound(np, 1, np))
	}
}

type mutexRing struct {
	mu         sync.Mutex
	buf        []*titem
	head, size int
}

func (r *mutexRing) put(x *titem) {
	r.mu.Lock()
	r.buf[(r.head+r.size)%len(r.buf)] = x
	r.size++
	r.mu.Unlock()
}

func (r *mutexRing) get() *titem {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.size == 0 {
		return nil
	}
	x := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return x
}

func BenchmarkPairMutex(b *testing.B) {
	np := runtime.GOMAXPROCS(0)
	items := make([]titem, np)
	r := &mutexRing{buf: make([]*titem, np)}
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		it := &items[next.Add(1)-1]
		for pb.Next() {
			r.put(it)
			if it = r.get(); it == nil {
				b.Error("empty")
				return
			}
		}
	})
}

func BenchmarkPairChan(b *testing.B) {
	np := runtime.GOMAXPROCS(0)
	items := make([]titem, np)
	c := make(chan *titem, np)
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		it := &items[next.Add(1)-1]
		for pb.Next() {
			c <- it
			it = <-c
		}
	})
}
