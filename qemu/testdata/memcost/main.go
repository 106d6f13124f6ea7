// Command memcost measures what memory and signals cost a Go program, in
// Go's benchmark format, for comparing yolk with Linux in one QEMU
// (qemu/linuxref -program ./qemu/testdata/memcost) and yolk with an
// earlier yolk (docs/tcg.md, docs/preemption.md):
//
//   - Copy/SIZE: copy() between two slices of SIZE bytes, over and over;
//     above 64 KiB, under QEMU's TCG, its speed depends on how large the
//     emulated TLB has grown (docs/tcg.md).
//   - Fault: a fresh page's first write (the page fault, a zeroed frame).
//   - Signal: what one SIGURG, sent by another thread 100 µs after the
//     last, costs the thread it interrupts (its lost work, not the
//     sender's time).
//   - CopyBesideGC: a 128 MiB copy (memmove: no safe point inside) while
//     another goroutine runs collections back to back, whose mark phase
//     signals the copying thread until the copy ends (docs/preemption.md,
//     "Signal storms").
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var sink uint64

func report(name string, r testing.BenchmarkResult, bytes int64) {
	mbs := ""
	if bytes > 0 && r.T > 0 {
		mbs = fmt.Sprintf("\t%8.2f MB/s", float64(bytes)*float64(r.N)/r.T.Seconds()/1e6)
	}
	fmt.Printf("Benchmark%s-%d\t%8d\t%10d ns/op%s\n", name, runtime.GOMAXPROCS(0), r.N, r.NsPerOp(), mbs)
}

func benchCopy(size int) func(b *testing.B) {
	return func(b *testing.B) {
		src, dst := make([]byte, size), make([]byte, size)
		copy(dst, src)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			copy(dst, src)
		}
	}
}

func benchFault(b *testing.B) {
	const chunk = 64 << 20
	var mem []byte
	off := chunk
	for i := 0; i < b.N; i++ {
		if off == chunk {
			b.StopTimer()
			mem, off = nil, 0
			runtime.GC()
			m, err := syscall.Mmap(-1, 0, chunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err != nil {
				b.Fatal(err)
			}
			mem = m
			b.StartTimer()
		}
		mem[off] = 1
		off += 4096
	}
}

// spin counts work units on a thread of its own until stop.
func spin(stop *atomic.Bool, tid *atomic.Int32, out chan<- uint64) {
	runtime.LockOSThread()
	tid.Store(int32(syscall.Gettid()))
	var n, x uint64 = 0, 1
	for !stop.Load() {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		n++
	}
	sink += x
	out <- n
}

// spinFor runs spin for d, signalling it every gap if gap > 0, and returns
// its work units and the signals sent.
func spinFor(d, gap time.Duration) (units uint64, sent int) {
	var stop atomic.Bool
	var tid atomic.Int32
	out := make(chan uint64)
	go spin(&stop, &tid, out)
	for tid.Load() == 0 {
		runtime.Gosched()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid := syscall.Getpid()
	end := time.Now().Add(d)
	next := time.Now()
	for now := time.Now(); now.Before(end); now = time.Now() {
		if gap > 0 && !now.Before(next) {
			syscall.Tgkill(pid, int(tid.Load()), syscall.SIGURG)
			sent++
			next = next.Add(gap)
		}
	}
	stop.Store(true)
	return <-out, sent
}

// signalCost is the spinner's lost time per signal over rounds of d each.
func signalCost(d time.Duration, rounds int) time.Duration {
	var lost time.Duration
	var sent int
	for r := 0; r < rounds; r++ {
		base, _ := spinFor(d, 0)
		with, n := spinFor(d, 100*time.Microsecond)
		lost += time.Duration((1 - float64(with)/float64(base)) * float64(d))
		sent += n
	}
	return lost / time.Duration(sent)
}

func benchCopyBesideGC(b *testing.B) {
	src, dst := make([]byte, 128<<20), make([]byte, 128<<20)
	copy(dst, src)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			for !stop.Load() {
				runtime.GC()
			}
			close(done)
		}()
		time.Sleep(time.Millisecond)
		b.StartTimer()
		copy(dst, src)
		b.StopTimer()
		stop.Store(true)
		<-done
		b.StartTimer()
	}
}

func main() {
	testing.Init()
	rounds := flag.Int("signal-rounds", 3, "rounds of the signal measurement (2 × 1 s each)")
	flag.Parse()
	flag.Set("test.benchtime", "1s")
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20, 128 << 20} {
		report(fmt.Sprintf("Copy/%dKiB", size>>10), testing.Benchmark(benchCopy(size)), int64(size))
	}
	report("Fault", testing.Benchmark(benchFault), 0)
	c := signalCost(time.Second, *rounds)
	fmt.Printf("BenchmarkSignal-%d\t%8d\t%10d ns/op\n", runtime.GOMAXPROCS(0), *rounds, c.Nanoseconds())
	flag.Set("test.benchtime", "3x")
	report("CopyBesideGC/128MiB", testing.Benchmark(benchCopyBesideGC), 128<<20)
}
