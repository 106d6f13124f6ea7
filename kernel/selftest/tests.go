package main

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	tests = []test{
		{"TestBoot", testBoot},
		{"TestMemoryReserveCommit", testMemoryReserveCommit},
		{"TestMemoryPartialUnmap", testMemoryPartialUnmap},
		{"TestMemoryDontNeedZeroes", testMemoryDontNeed},
		{"TestMemoryBSSDemandPaged", testBSSDemandPaged},
		{"TestTimerSleepAccuracy", testSleepAccuracy},
		{"TestTimersChannels", testTimersChannels},
		{"TestFutexTimeout", testFutexTimeout},
		{"TestVDSOClock", testVDSO},
		{"TestGoroutines10k", testGoroutines10k},
		{"TestGCUnderPressure", testGC},
		{"TestUnknownSyscallENOSYS", testENOSYS},
		{"TestSchedInvariants", testSchedInvariants},
		{"TestPanicRecover", testPanicRecover},
		{"TestNilDereferencePanics", testNilDeref},
		{"TestCryptoRand", testCryptoRand},
	}
	benches = []bench{
		{"BenchmarkSyscallGetpid", benchSyscall, false},
		{"BenchmarkTimeNow", benchTimeNow, false},
		{"BenchmarkChanPingPong", benchPingPong, false},
		{"BenchmarkSchedYield", benchYield, false},
		{"BenchmarkTaskSwitchMinimal", func(b *testing.B) { benchSwitch(b, false) }, true},
		{"BenchmarkTaskSwitchSaveAll", func(b *testing.B) { benchSwitch(b, true) }, true},
	}
}

// kernelStats mirrors the kernel's sysYolkStats layout.
type kernelStats struct {
	FramesAll, FramesFree, PagesMapped int64
	Tasks                              int64
	NodesInUse, NodeBound              int64
	TSCHz, LAPICHz                     int64
	Syscalls                           int64
}

const (
	sysYolkStats    = 0x1000
	sysYolkSwitch   = 0x1001
	sysYolkUnmapped = 0x1002
)

func stats(t *T) kernelStats {
	var s kernelStats
	if _, _, e := syscall.Syscall(sysYolkStats, uintptr(unsafe.Pointer(&s)), 0, 0); e != 0 {
		t.Fatalf("stats syscall: %v", e)
	}
	return s
}

func testBoot(t *T) {
	if len(os.Args) < 1 || os.Args[0] != "yolk" {
		t.Errorf("os.Args = %q, want argv[0] yolk", os.Args)
	}
	if g := os.Getenv("GODEBUG"); g == "" {
		t.Errorf("GODEBUG not set by the kernel")
	}
	if n := runtime.NumCPU(); n < 1 {
		t.Errorf("NumCPU = %d", n)
	}
	s := stats(t)
	t.Logf("NumCPU=%d RAM=%d MiB free=%d MiB TSC=%d MHz LAPIC=%d MHz", runtime.NumCPU(),
		s.FramesAll*4096>>20, s.FramesFree*4096>>20, s.TSCHz/1e6, s.LAPICHz/1e6)
}

func mmap(t *T, addr, n uintptr, prot, flags int) uintptr {
	p, _, e := syscall.Syscall6(syscall.SYS_MMAP, addr, n, uintptr(prot), uintptr(flags|unix.MAP_ANON|unix.MAP_PRIVATE), ^uintptr(0), 0)
	if e != 0 {
		t.Fatalf("mmap(%#x, %d, %d, %#x): %v", addr, n, prot, flags, e)
	}
	return p
}

func bytesAt(p, n uintptr) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

func testMemoryReserveCommit(t *T) {
	const size = 256 << 20 // twice the guest's RAM: reserving costs no memory
	before := stats(t)
	base := mmap(t, 0, size, unix.PROT_NONE, 0)
	mid := stats(t)
	if mid.FramesFree < before.FramesFree-4 {
		t.Errorf("reserving %d MiB took %d frames", size>>20, before.FramesFree-mid.FramesFree)
	}
	// Commit 1 MiB in the middle and touch every page.
	c := base + 64<<20
	if p := mmap(t, c, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_FIXED); p != c {
		t.Fatalf("MAP_FIXED returned %#x, want %#x", p, c)
	}
	b := bytesAt(c, 1<<20)
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 0 {
			t.Fatalf("fresh page not zero at +%d", i)
		}
		b[i] = byte(i >> 12)
	}
	after := stats(t)
	if got := after.PagesMapped - mid.PagesMapped; got != 256 {
		t.Errorf("touching 256 committed pages backed %d", got)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, base, size, 0); e != 0 {
		t.Fatalf("munmap: %v", e)
	}
	if end := stats(t); end.PagesMapped != mid.PagesMapped {
		t.Errorf("munmap left %d pages backed", end.PagesMapped-mid.PagesMapped)
	}
}

func testMemoryPartialUnmap(t *T) {
	p := mmap(t, 0, 16*4096, unix.PROT_READ|unix.PROT_WRITE, 0)
	b := bytesAt(p, 16*4096)
	for i := range b {
		b[i] = 0xAA
	}
	// Unmap pages 4..7; the rest must keep its contents.
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, p+4*4096, 4*4096, 0); e != 0 {
		t.Fatalf("partial munmap: %v", e)
	}
	for _, off := range []uintptr{0, 3 * 4096, 8 * 4096, 15 * 4096} {
		if b[off] != 0xAA {
			t.Errorf("byte at +%#x lost after partial munmap", off)
		}
	}
	// The hole is free again: a fixed mapping there is fresh and zero.
	q := mmap(t, p+4*4096, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_FIXED)
	if bytesAt(q, 1)[0] != 0 {
		t.Errorf("remapped hole not zero")
	}
	syscall.Syscall(syscall.SYS_MUNMAP, p, 16*4096, 0)
}

func testMemoryDontNeed(t *T) {
	p := mmap(t, 0, 8*4096, unix.PROT_READ|unix.PROT_WRITE, 0)
	b := bytesAt(p, 8*4096)
	for i := range b {
		b[i] = 0x55
	}
	before := stats(t)
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, p, 8*4096, unix.MADV_DONTNEED); e != 0 {
		t.Fatalf("madvise: %v", e)
	}
	after := stats(t)
	if freed := after.FramesFree - before.FramesFree; freed != 8 {
		t.Errorf("MADV_DONTNEED freed %d frames, want 8", freed)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d = %#x after MADV_DONTNEED, want 0", i, b[i])
		}
	}
	syscall.Syscall(syscall.SYS_MUNMAP, p, 8*4096, 0)
}

func testSleepAccuracy(t *T) {
	for _, d := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		// time.Sleep (runtime timers: futex/epoll timeouts) and nanosleep.
		start := time.Now()
		time.Sleep(d)
		got := time.Since(start)
		ts := unix.NsecToTimespec(int64(d))
		start2 := time.Now()
		if err := unix.Nanosleep(&ts, nil); err != nil {
			t.Errorf("nanosleep: %v", err)
		}
		got2 := time.Since(start2)
		t.Logf("sleep %v: time.Sleep %v, nanosleep %v", d, got, got2)
		if got < d || got2 < d {
			t.Errorf("sleep %v returned early: %v / %v", d, got, got2)
		}
		if d == time.Millisecond && (got > 20*time.Millisecond || got2 > 20*time.Millisecond) {
			t.Errorf("1ms sleep took %v / %v, want < 20ms", got, got2)
		}
	}
}

func testTimersChannels(t *T) {
	select {
	case <-time.After(5 * time.Millisecond):
	case <-time.After(2 * time.Second):
		t.Errorf("time.After(5ms) lost to time.After(2s)")
	}
	tk := time.NewTicker(2 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 5; i++ {
		<-tk.C
	}
	tk.Stop()
	if el := time.Since(start); el < 10*time.Millisecond {
		t.Errorf("5 ticks of 2ms in %v", el)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("ctx.Err() = %v", ctx.Err())
	}
}

func testFutexTimeout(t *T) {
	var word uint32
	ts := unix.NsecToTimespec(int64(5 * time.Millisecond))
	start := time.Now()
	_, _, e := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&word)), 0|128, 0, uintptr(unsafe.Pointer(&ts)), 0, 0)
	el := time.Since(start)
	if e != syscall.ETIMEDOUT {
		t.Errorf("futex wait = %v, want ETIMEDOUT", e)
	}
	if el < 5*time.Millisecond {
		t.Errorf("futex timed out early: %v", el)
	}
	// A changed word must not block.
	if _, _, e := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&word)), 0|128, 1, uintptr(unsafe.Pointer(&ts)), 0, 0); e != syscall.EAGAIN {
		t.Errorf("futex wait on changed word = %v, want EAGAIN", e)
	}
	t.Logf("5ms futex timeout took %v", el)
}

func testGoroutines10k(t *T) {
	const n = 10000
	var wg sync.WaitGroup
	var sum atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		ping, pong := make(chan int), make(chan int)
		go func() {
			defer wg.Done()
			for v := range ping {
				pong <- v + 1
			}
			close(pong)
		}()
		go func(i int) {
			ping <- i
			sum.Add(int64(<-pong))
			close(ping)
		}(i)
	}
	wg.Wait()
	if want := int64(n*(n-1)/2 + n); sum.Load() != want {
		t.Errorf("sum = %d, want %d", sum.Load(), want)
	}
}

var sink []byte

func testGC(t *T) {
	s := stats(t)
	ram := s.FramesAll * 4096
	var ms runtime.MemStats
	total := int64(0)
	for total < 4*ram {
		sink = make([]byte, 1<<20)
		sink[0] = 1
		total += 1 << 20
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("allocated %d MiB in total on %d MiB of RAM; HeapSys %d MiB, NumGC %d",
		total>>20, ram>>20, ms.HeapSys>>20, ms.NumGC)
	if ms.NumGC == 0 {
		t.Errorf("no garbage collection ran")
	}
	if after := stats(t); after.FramesFree < s.FramesAll/8 {
		t.Errorf("only %d MiB free after GC", after.FramesFree*4096>>20)
	}
}

func testENOSYS(t *T) {
	before, _, _ := syscall.Syscall(sysYolkUnmapped, 0, 0, 0)
	_, _, e := syscall.Syscall(syscall.SYS_ACCT, 0, 0, 0)
	if e != syscall.ENOSYS {
		t.Errorf("acct() = %v, want ENOSYS", e)
	}
	if after, _, _ := syscall.Syscall(sysYolkUnmapped, 0, 0, 0); after != before+1 {
		t.Errorf("ENOSYS counter %d -> %d", before, after)
	}
}

func testSchedInvariants(t *T) {
	// Stress the scheduler with blocking goroutines on locked threads, so
	// that tasks block and wake through futexes on the ready queue.
	const workers = 8
	var wg sync.WaitGroup
	var counter atomic.Int64
	ch := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for v := range ch {
				counter.Add(int64(v))
			}
		}()
	}
	for i := 1; i <= 1000; i++ {
		ch <- i
	}
	close(ch)
	wg.Wait()
	if counter.Load() != 500500 {
		t.Errorf("sum %d, want 500500: a task was lost or ran twice", counter.Load())
	}
	s := stats(t)
	t.Logf("tasks=%d queue nodes in use=%d bound=%d", s.Tasks, s.NodesInUse, s.NodeBound)
	if s.NodesInUse > s.NodeBound {
		t.Errorf("queue nodes %d exceed tasks+1+2×CPUs = %d", s.NodesInUse, s.NodeBound)
	}
}

func testPanicRecover(t *T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recover() = %v", r)
		}
	}()
	var m map[string]int
	func() {
		defer func() { recover() }()
		m["x"] = 1 // nil map write panics
	}()
	panic("boom")
}

func testCryptoRand(t *T) {
	a, b := make([]byte, 32), make([]byte, 32)
	rand.Read(a)
	rand.Read(b)
	if string(a) == string(b) {
		t.Errorf("crypto/rand returned the same 32 bytes twice")
	}
}

var nilPtr *int

func testNilDeref(t *T) {
	for i := 0; i < 3; i++ { // more than once: sigreturn must leave a sane state
		func() {
			defer func() {
				r := recover()
				err, ok := r.(runtime.Error)
				if !ok || !strings.Contains(err.Error(), "nil pointer dereference") {
					t.Errorf("recover() = %v, want a nil pointer dereference runtime.Error", r)
				}
			}()
			*nilPtr = 1
		}()
	}
}

// bigBSS is 8 MiB of BSS the program has not touched before the test.
var bigBSS [8 << 20]byte

func testBSSDemandPaged(t *T) {
	before := stats(t)
	for i := 0; i < 1<<20; i += 4096 {
		if bigBSS[i] != 0 {
			t.Fatalf("fresh BSS byte %d = %#x", i, bigBSS[i])
		}
		bigBSS[i] = byte(i>>12) | 1
	}
	after := stats(t)
	if used := before.FramesFree - after.FramesFree; used < 256 {
		t.Errorf("touching 256 untouched BSS pages used %d frames: BSS is not demand-paged", used)
	}
	for i := 0; i < 1<<20; i += 4096 {
		if bigBSS[i] != byte(i>>12)|1 {
			t.Fatalf("BSS byte %d lost its value", i)
		}
	}
	t.Logf("256 pages touched, %d frames taken", before.FramesFree-after.FramesFree)
}

// testVDSO checks that time.Now uses the kernel's vDSO (no system calls)
// and agrees with the clock_gettime system call.
func testVDSO(t *T) {
	before := stats(t)
	prev := time.Now()
	for i := 0; i < 10000; i++ {
		now := time.Now()
		if now.Before(prev) {
			t.Fatalf("time went backwards: %v after %v", now, prev)
		}
		prev = now
	}
	after := stats(t)
	// The two stats calls themselves, and sysmon's sleeps, are all the
	// system calls there may be.
	if n := after.Syscalls - before.Syscalls; n > 100 {
		t.Errorf("10000 time.Now calls made %d system calls: the vDSO is not used", n)
	}
	var ts unix.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, unix.CLOCK_REALTIME, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		t.Fatalf("clock_gettime: %v", e)
	}
	if d := time.Since(time.Unix(ts.Sec, ts.Nsec)); d < 0 || d > 50*time.Millisecond {
		t.Errorf("time.Now (vDSO) is %v ahead of the clock_gettime system call", d)
	}
	t.Logf("10000 time.Now calls, %d system calls", after.Syscalls-before.Syscalls)
}
