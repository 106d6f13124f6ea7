package virtioblk

import (
	"sync"
	"testing"
)

// The driver against the model device: what a request costs the driver
// and the model's goroutine (no device latency beyond the model's
// polling). Go's benchmark format; compare runs with benchstat.

func BenchmarkSequential64K(b *testing.B) {
	for _, write := range []bool{false, true} {
		name := "read"
		if write {
			name = "write"
		}
		b.Run(name, func(b *testing.B) {
			m := newModel(b, 1<<16, allFeatures, nil)
			buf := make([]byte, MaxData)
			b.SetBytes(MaxData)
			for i := 0; i < b.N; i++ {
				s := uint64(i%256) * MaxData / Sector
				if e := m.k.RW(s, addr(buf), MaxData, write); e != 0 {
					b.Fatal(e)
				}
			}
		})
	}
}

func BenchmarkRandom4K(b *testing.B) {
	for _, depth := range []int{1, 32} {
		b.Run(map[int]string{1: "qd1", 32: "qd32"}[depth], func(b *testing.B) {
			m := newModel(b, 1<<16, allFeatures, nil)
			b.SetBytes(4096)
			var wg sync.WaitGroup
			per := b.N/depth + 1
			for g := 0; g < depth; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					buf := make([]byte, 4096)
					x := uint64(g*7919 + 1)
					for i := 0; i < per; i++ {
						x = x*6364136223846793005 + 1442695040888963407
						if e := m.k.RW((x>>33)%(1<<13)*8, addr(buf), 4096, false); e != 0 {
							b.Error(e)
							return
						}
					}
				}(g)
			}
			wg.Wait()
		})
	}
}
