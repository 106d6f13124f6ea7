package main

import (
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	benches = append(benches, bench{"BenchmarkSignalEINTR", benchSignalEINTR, false})
}

// benchSignalEINTR: one op is a SIGURG (the runtime's own handler) sent
// with tgkill to a thread blocked in epoll_pwait, until that call returns
// EINTR: p50-ns and max-ns from the tgkill to the return, seen by the
// blocked thread. Before each op the sender lets the thread block for 1 ms
// (not timed); a signal that still came first (the wait's 100 ms timeout
// ends it) is counted as missed, and the op is made again.
func benchSignalEINTR(b *testing.B) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		panic(err) // (b.Fatal panics in testing.Benchmark anyway)
	}
	defer unix.Close(ep)
	type ret struct {
		at  time.Time
		err syscall.Errno
	}
	start, done, tidc := make(chan struct{}), make(chan ret), make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tidc <- unix.Gettid()
		var ev [1]unix.EpollEvent
		for range start {
			_, _, e := syscall.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&ev[0])), 1, 100, 0, 0)
			done <- ret{time.Now(), e}
		}
	}()
	tid := <-tidc
	lat := make([]time.Duration, 0, b.N)
	missed := 0
	b.ResetTimer()
	for len(lat) < b.N && missed < b.N+100 {
		start <- struct{}{}
		b.StopTimer()
		time.Sleep(time.Millisecond)
		b.StartTimer()
		t0 := time.Now()
		unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
		r := <-done
		if r.err == unix.EINTR {
			lat = append(lat, r.at.Sub(t0))
		} else {
			missed++
		}
	}
	b.StopTimer()
	close(start)
	if len(lat) == 0 {
		lat = append(lat, -1) // none interrupted: the metrics say so
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
	b.ReportMetric(float64(missed), "missed")
}
