// Package eintrtest is what a signal does to a thread blocked in a system
// call (EINTR, restart, partial counts), written once for two runs: the
// hosted go test runs the cases on the Linux host — the reference — and
// the guest self-test TestEINTR runs the same cases on yolk. Plain Linux Go
// (golang.org/x/sys/unix, os/signal); no yolk imports.
//
// Each case blocks a locked OS thread in one call, sends it a signal with
// tgkill from another thread, and checks the outcome Linux's restart rules
// give: EINTR, the call made again (the handler ran while it was blocked,
// and it still waits), or the count done. A call that is not interrupted
// does not hang the test: it has a timeout of its own (Long), or the case
// unblocks it after Long and reports the failure.
package eintrtest

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TB is what a case needs of its test: testing.T and the self-test's T.
type TB interface {
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Case is one call class and signal disposition.
type Case struct {
	Name string
	Run  func(TB)
}

// Long is a blocked call's own timeout, and how long a case waits for a
// call, or for a handler, before it calls that a failure.
const Long = 4 * time.Second

// settle is how long a case lets its thread enter the blocking call
// before it sends the signal.
const settle = 50 * time.Millisecond

const saRestart = 0x10000000

// sigaction is the kernel's struct sigaction (amd64 and arm64 alike).
type sigaction struct {
	handler, flags, restorer uintptr
	mask                     uint64
}

func rtSigaction(sig syscall.Signal, act, old *sigaction) {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if e != 0 {
		panic("rt_sigaction: " + e.Error())
	}
}

// handle makes Go's handler for sig deliver to the returned channel
// (os/signal), with SA_RESTART or without it (the runtime installs it
// with); restore puts the action back and stops the deliveries.
func handle(sig syscall.Signal, restart bool) (ch chan os.Signal, restore func()) {
	ch = make(chan os.Signal, 16)
	signal.Notify(ch, sig)
	var old sigaction
	rtSigaction(sig, nil, &old)
	act := old
	act.flags &^= saRestart
	if restart {
		act.flags |= saRestart
	}
	rtSigaction(sig, &act, nil)
	return ch, func() {
		rtSigaction(sig, &old, nil)
		signal.Stop(ch)
	}
}

type result struct {
	r   uintptr
	err syscall.Errno
	el  time.Duration // from just before the call to just after
}

// blocker is a call running on its own locked thread.
type blocker struct {
	tid  int
	done chan result
}

// block starts call on a new locked thread and returns once it has had
// settle to enter it. pre runs on that thread first (nil: nothing).
func block(pre func(), call func() (uintptr, syscall.Errno)) *blocker {
	b := &blocker{done: make(chan result, 1)}
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if pre != nil {
			pre()
		}
		b.tid = unix.Gettid()
		start := time.Now()
		close(started)
		r, e := call()
		b.done <- result{r, e, time.Since(start)}
	}()
	<-started
	time.Sleep(settle)
	return b
}

func (b *blocker) kill(sig syscall.Signal) {
	if err := unix.Tgkill(unix.Getpid(), b.tid, sig); err != nil {
		panic("tgkill: " + err.Error())
	}
}

// wait waits up to d for the call's result; ok is false if it is still
// blocked.
func (b *blocker) wait(d time.Duration) (r result, ok bool) {
	select {
	case r = <-b.done:
		return r, true
	case <-time.After(d):
		return r, false
	}
}

// finish unblocks a call that is still blocked and waits for its result
// (a failure if it does not come within Long).
func (b *blocker) finish(t TB, name string, unblock func()) (result, bool) {
	if unblock != nil {
		unblock()
	}
	r, ok := b.wait(Long)
	if !ok {
		t.Errorf("%s: still blocked %v after it was unblocked", name, Long)
	}
	return r, ok
}

func errName(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return unix.ErrnoName(e)
}

// expectEINTR: the signal's handler runs and the call returns EINTR at
// once. A signal that came before the thread blocked (the handler ran,
// the call still waits) is sent again, up to three times.
func expectEINTR(t TB, name string, sig syscall.Signal, restart bool, call func() (uintptr, syscall.Errno), unblock func()) (result, bool) {
	ch, restore := handle(sig, restart)
	defer restore()
	b := block(nil, call)
	for try := 0; try < 3; try++ {
		b.kill(sig)
		var r result
		select {
		case r = <-b.done:
		case <-ch:
			// Handled: the call returns now, or it had not blocked yet
			// when the signal came and goes on.
			var done bool
			if r, done = b.wait(Long / 4); !done {
				continue
			}
			ch <- unix.SIGUSR1 // for the check below: it was handled
		case <-time.After(Long):
			t.Errorf("%s: not interrupted within %v (neither returned nor handled)", name, Long)
			r, _ := b.finish(t, name, unblock)
			t.Errorf("%s: then returned %s (%d)", name, errName(r.err), r.r)
			return r, false
		}
		if r.err != unix.EINTR {
			t.Errorf("%s: %s (%d) after %v, want EINTR", name, errName(r.err), r.r, r.el)
		} else if el := r.el; el > Long/2 {
			t.Errorf("%s: EINTR only after %v", name, el)
		}
		if !handled(ch) {
			t.Errorf("%s: the handler did not run", name)
		}
		return r, r.err == unix.EINTR
	}
	t.Errorf("%s: the handler ran three times while the call went on", name)
	b.finish(t, name, unblock)
	return result{}, false
}

// handled waits (up to Long) for the handler to have run.
func handled(ch chan os.Signal) bool {
	select {
	case <-ch:
		return true
	case <-time.After(Long):
		return false
	}
}

// expectRestart: the handler runs while the call is blocked, and the call
// is made again — it goes on waiting until unblock, then returns its
// result (which ok checks).
func expectRestart(t TB, name string, sig syscall.Signal, call func() (uintptr, syscall.Errno), unblock func(), ok func(result) bool) {
	ch, restore := handle(sig, true)
	defer restore()
	b := block(nil, call)
	b.kill(sig)
	select {
	case r := <-b.done:
		t.Errorf("%s: returned %s (%d) after %v, want it made again", name, errName(r.err), r.r, r.el)
		return
	case <-ch:
	case <-time.After(Long):
		t.Errorf("%s: the handler did not run within %v while the call was blocked", name, Long)
		r, _ := b.finish(t, name, unblock)
		t.Errorf("%s: then returned %s (%d)", name, errName(r.err), r.r)
		return
	}
	if r, done := b.wait(4 * settle); done {
		t.Errorf("%s: returned %s (%d) after the handler, want it made again", name, errName(r.err), r.r)
		return
	}
	if r, done := b.finish(t, name, unblock); done && !ok(r) {
		t.Errorf("%s: made again, then returned %s (%d)", name, errName(r.err), r.r)
	}
}

// expectNoInterrupt: the call (a sleep of d) is not interrupted by sig
// (ignored, or blocked by the thread: pre and post run on it before and
// after the sleep).
func expectNoInterrupt(t TB, name string, sig syscall.Signal, pre, post func(), d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	b := block(pre, func() (uintptr, syscall.Errno) {
		_, _, e := unix.Syscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		if post != nil {
			post()
		}
		return 0, e
	})
	b.kill(sig)
	r, ok := b.wait(Long)
	switch {
	case !ok:
		t.Errorf("%s: a %v sleep still blocked after %v", name, d, Long)
		<-b.done
	case r.err != 0:
		t.Errorf("%s: the sleep returned %s", name, errName(r.err))
	case r.el < d-settle:
		t.Errorf("%s: a %v sleep returned after %v", name, d, r.el)
	}
}

func sys(nr uintptr, a ...uintptr) (uintptr, syscall.Errno) {
	var v [6]uintptr
	copy(v[:], a)
	r, _, e := unix.Syscall6(nr, v[0], v[1], v[2], v[3], v[4], v[5])
	return r, e
}

func ptr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

const (
	futexWaitPrivate = 128
	futexWakePrivate = 129
)

func success(r result) bool { return r.err == 0 }
