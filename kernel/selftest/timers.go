package main

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Time: sleeps, timers and channels, futex timeouts, the vDSO clock.

// testSleepAccuracy reports requested against actual sleep, as the median
// and the extremes of several samples, for time.Sleep (the runtime's timers:
// futex and epoll timeouts, whose epoll timeout is in whole milliseconds)
// and nanosleep (the kernel's timer alone). No sample may end early; every
// 1 ms sample must end within 50 ms — 100 ms with more than two CPUs,
// which under emulation on CI's 2 host cores are oversubscribed, so that a
// woken CPU can wait a host time slice. This is a sanity bound: lost
// wake-ups have their own test (TestSMPIdleWakeup), and the accuracy
// itself is a benchmark (BenchmarkNanosleep).
func testSleepAccuracy(t *T) {
	for _, d := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		n := 9
		if d >= 10*time.Millisecond {
			n = 3
		}
		var slept, napped []time.Duration
		ts := unix.NsecToTimespec(int64(d))
		for range n {
			start := time.Now()
			time.Sleep(d)
			slept = append(slept, time.Since(start))
			start = time.Now()
			if err := nanosleepOut(ts); err != nil {
				t.Errorf("nanosleep: %v", err)
			}
			napped = append(napped, time.Since(start))
		}
		slices.Sort(slept)
		slices.Sort(napped)
		t.Logf("sleep %v (%d samples, min/median/max): time.Sleep %v/%v/%v, nanosleep %v/%v/%v", d, n,
			slept[0], slept[n/2], slept[n-1], napped[0], napped[n/2], napped[n-1])
		if slept[0] < d || napped[0] < d {
			t.Errorf("sleep %v returned early: time.Sleep %v, nanosleep %v", d, slept[0], napped[0])
		}
		bound := 50 * time.Millisecond
		if runtime.NumCPU() > 2 {
			bound = 100 * time.Millisecond
		}
		if d == time.Millisecond && (slept[n-1] > bound || napped[n-1] > bound) {
			t.Errorf("1ms sleep took up to %v / %v, want < %v", slept[n-1], napped[n-1], bound)
		}
	}
}

func testTimersChannels(t *T) {
	select {
	case <-time.After(5 * time.Millisecond):
	case <-time.After(2 * time.Second):
		t.Errorf("time.After(5ms) lost to time.After(2s)")
	}
	start := time.Now() // before the ticker: its ticks count from its creation
	tk := time.NewTicker(2 * time.Millisecond)
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
	e := syscall.EINTR
	for e == syscall.EINTR {
		// A signal with a handler (the runtime's SIGURG) ends the wait
		// early, as on Linux: wait out the rest.
		left := unix.NsecToTimespec(int64(max(5*time.Millisecond-time.Since(start), time.Microsecond)))
		_, _, e = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&word)), 0|128, 0, uintptr(unsafe.Pointer(&left)), 0, 0)
	}
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
	// system calls there may be — unless the kernel turned the vDSO off
	// because it could not verify that the CPUs' TSCs agree.
	if after.TSCSynced == 0 {
		t.Logf("the kernel could not verify the TSCs are synchronised (see its boot line): vDSO off, time through system calls")
	} else if n := after.Syscalls - before.Syscalls; n > 100 {
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

// nanosleepOut sleeps ts with nanosleep, as a caller of it must on Linux:
// a signal with a handler — the runtime's SIGURG, say — ends the sleep
// early with EINTR and the time left in rem, which is slept out.
func nanosleepOut(ts unix.Timespec) error {
	var rem unix.Timespec
	for {
		err := unix.Nanosleep(&ts, &rem)
		if err != unix.EINTR {
			return err
		}
		ts = rem
	}
}
