package main

import (
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"yolk/arch/amd64"
)

func init() {
	tests = append(tests, test{"TestAVXState", testAVXState})
}

// Read and written by avx_amd64.s.
var (
	ymmSigs   uint64
	ymmFxOnly uint32
)

func ymmSpin(out *[16][4]uint64, want, limit uint64) (seen uint64)
func ymmClobberPCs() (handler, restorer uintptr)

// ymmWant is Y i's quadword q as ymmSpin loads it.
func ymmWant(i, q int) uint64 { return uint64(0x3000000000000001+i) + uint64(q)<<60 }

// testAVXState: a CPU with AVX gives it to the program (XGETBV says the
// kernel saves its state, as Linux's does), /proc/cpuinfo says so, and
// the whole of Y0-Y15 comes back from a signal handler that changes every
// bit of them, delivered at a timer interrupt while the thread spins in
// assembly: the kernel saves the interrupted registers with XSAVE and
// puts them in the frame as Linux's (the XSAVE magic numbers), and
// rt_sigreturn restores them. A frame without the XSAVE magic gives the
// FXSAVE image alone: X0-X15 come back, the upper halves are reset to 0
// (Linux's "fx_only"). Runs on the host's Linux too.
func testAVXState(t *T) {
	_, _, c1, _ := amd64.Cpuid(1, 0)
	if c1&(1<<28) == 0 || c1&(1<<26) == 0 {
		t.Logf("this CPU has no AVX (or no XSAVE): nothing to check")
		return
	}
	if !cpu.X86.HasAVX {
		t.Fatalf("the CPU has AVX and XSAVE, but XGETBV says the kernel does not save AVX's state: the program cannot use AVX")
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err != nil {
		t.Errorf("/proc/cpuinfo: %v", err)
	} else if !strings.Contains(string(b), " avx ") {
		t.Errorf("/proc/cpuinfo's flags do not list avx")
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer ownHandler(t, unix.SIGUSR2, ymmClobberPCs)()
	// A timer every 2 ms to this thread: its signals come at the timer's
	// interrupt, in the middle of the spin.
	id, e := timerCreate(unix.CLOCK_MONOTONIC, &sigevent{notify: sigevThreadID, signo: int32(unix.SIGUSR2), tid: int32(unix.Gettid())})
	if e != 0 {
		t.Fatalf("timer_create(SIGEV_THREAD_ID): %v", e)
	}
	defer timerDelete(id)
	every := itimerspec{Interval: unix.Timespec{Nsec: 2e6}, Value: unix.Timespec{Nsec: 2e6}}
	if e := timerSettime(id, 0, &every, nil); e != 0 {
		t.Fatalf("timer_settime: %v", e)
	}
	const signals = 20
	for _, fxOnly := range []bool{false, true} {
		ymmFxOnly = 0
		if fxOnly {
			ymmFxOnly = 1
		}
		var out [16][4]uint64
		start := ymmSigs
		seen := ymmSpin(&out, start+signals, 1<<30) - start
		if seen < signals {
			t.Errorf("fx_only=%v: %d of %d timer signals arrived during the spin", fxOnly, seen, signals)
		}
		bad := 0
		for i := range out {
			for q := range out[i] {
				want := ymmWant(i, q)
				if fxOnly && q >= 2 {
					want = 0
				}
				if out[i][q] != want && bad < 8 {
					t.Errorf("fx_only=%v: after %d handlers Y%d quadword %d is %#x, want %#x", fxOnly, seen, i, q, out[i][q], want)
					bad++
				}
			}
		}
		t.Logf("fx_only=%v: %d signals in the spin, Y0-Y15 as expected: %v", fxOnly, seen, bad == 0)
	}
	timerSettime(id, 0, &itimerspec{}, nil)
}
