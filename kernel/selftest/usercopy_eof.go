package main

// System calls given a pointer into a page of a shared file mapping that
// lies wholly past the file's end: the user-memory rule's range check
// passes (the area covers the page), and the access faults. Through the
// user copy that is EFAULT, as Linux's; a handler that read or wrote
// through a plain pointer stopped the machine with a kernel fault (exit
// 125) — docs/user-memory.md, issue 33's finding 3.

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Written by restartSig (restartsig_$GOARCH.s): restart_syscall's raw
// result, and 1 once it ran.
var restartSigRet, restartSigRan int64

// restartSigPC is the address of restartSig, a signal handler that makes
// the restart_syscall system call and returns.
func restartSigPC() uintptr

// testUserCopyPastEOF maps a 100-byte file of the in-memory file system
// MAP_SHARED over two pages, so that the second lies wholly past the
// file's end, and gives an address there to each call that copied
// through a plain pointer: getitimer, setitimer (new and old value),
// timer_create (its sigevent — all 64 bytes, as Linux's copy_from_user
// of struct sigevent — and its ID), timer_settime, timer_gettime,
// fcntl's record locks (F_GETLK, F_SETLK, F_SETLKW and the F_OFD_
// twins) and futex; each must be EFAULT. Then restart_syscall's futex
// check (restartPastEOF). The same program on a Linux host passes.
// YOLK_PASTEOF=regexp runs only the cases it matches (each one stopped
// the machine before the fix, so one boot showed one).
func testUserCopyPastEOF(t *T) {
	f, err := os.CreateTemp("", "pasteof")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatalf("write: %v", err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 2*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer syscall.Munmap(m)
	bad := uintptr(unsafe.Pointer(&m[pageSize])) // wholly past the end
	fd := f.Fd()

	var id int32 // a timer for timer_settime and timer_gettime
	none := sigevent{notify: sigevNone}
	if _, e := sys(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&none)), uintptr(unsafe.Pointer(&id))); e != 0 {
		t.Fatalf("timer_create: %v", e)
	}
	defer sys(unix.SYS_TIMER_DELETE, uintptr(id))
	var created int32   // what a timer_create that should fail made
	var spec itimerspec // disarmed
	var itv [4]int64    // struct itimerval, disarmed
	ts := unix.NsecToTimespec(int64(time.Second))
	// A sigevent whose first 20 bytes (all the kernel used to check) end
	// where the bad page begins; one whose 63 do.
	sev20, sev63 := bad-20, bad-63

	only := regexp.MustCompile(os.Getenv("YOLK_PASTEOF"))
	for _, c := range []struct {
		name string
		call func() (uintptr, syscall.Errno)
	}{
		{"getitimer", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_GETITIMER, unix.ITIMER_REAL, bad) }},
		{"setitimer new", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_SETITIMER, unix.ITIMER_REAL, bad, 0) }},
		{"setitimer old", func() (uintptr, syscall.Errno) {
			return sys(syscall.SYS_SETITIMER, unix.ITIMER_REAL, uintptr(unsafe.Pointer(&itv)), bad)
		}},
		{"timer_create sigevent", func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, bad, uintptr(unsafe.Pointer(&created)))
		}},
		{"timer_create sigevent 20 bytes before", func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, sev20, uintptr(unsafe.Pointer(&created)))
		}},
		{"timer_create sigevent 63 bytes before", func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, sev63, uintptr(unsafe.Pointer(&created)))
		}},
		{"timer_create id", func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&none)), bad)
		}},
		{"timer_settime new", func() (uintptr, syscall.Errno) { return sys(unix.SYS_TIMER_SETTIME, uintptr(id), 0, bad, 0) }},
		{"timer_settime old", func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_TIMER_SETTIME, uintptr(id), 0, uintptr(unsafe.Pointer(&spec)), bad)
		}},
		{"timer_gettime", func() (uintptr, syscall.Errno) { return sys(unix.SYS_TIMER_GETTIME, uintptr(id), bad) }},
		{"fcntl F_GETLK", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_FCNTL, fd, unix.F_GETLK, bad) }},
		{"fcntl F_SETLK", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_FCNTL, fd, unix.F_SETLK, bad) }},
		{"fcntl F_SETLKW", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_FCNTL, fd, unix.F_SETLKW, bad) }},
		{"fcntl F_OFD_GETLK", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_FCNTL, fd, unix.F_OFD_GETLK, bad) }},
		{"fcntl F_OFD_SETLK", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_FCNTL, fd, unix.F_OFD_SETLK, bad) }},
		{"fcntl F_OFD_SETLKW", func() (uintptr, syscall.Errno) { return sys(syscall.SYS_FCNTL, fd, unix.F_OFD_SETLKW, bad) }},
		{"futex FUTEX_WAIT", func() (uintptr, syscall.Errno) {
			return sys(syscall.SYS_FUTEX, bad, 0, 0, uintptr(unsafe.Pointer(&ts)))
		}},
		{"futex FUTEX_WAIT_PRIVATE", func() (uintptr, syscall.Errno) {
			return sys(syscall.SYS_FUTEX, bad, 0|128, 0, uintptr(unsafe.Pointer(&ts)))
		}},
	} {
		if !only.MatchString(c.name) {
			continue
		}
		t.Logf("%s", c.name) // the last line before a kernel fault names the call
		r, e := c.call()
		if e != syscall.EFAULT {
			t.Errorf("%s with an address past the file's end: %d, %v; want EFAULT", c.name, r, e)
			if e == 0 && strings.HasPrefix(c.name, "timer_create") {
				sys(unix.SYS_TIMER_DELETE, uintptr(created))
			}
		}
	}
	// A sigevent that ends where the bad page begins is a good one.
	*(*sigevent)(unsafe.Pointer(&m[pageSize-64])) = none
	var id64 int32
	if _, e := sys(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, bad-64, uintptr(unsafe.Pointer(&id64))); e != 0 {
		t.Errorf("timer_create with a sigevent just before the bad page: %v", e)
	} else {
		sys(unix.SYS_TIMER_DELETE, uintptr(id64))
	}
	if only.MatchString("restart_syscall") {
		restartPastEOF(t, f)
	}
}

// restartPastEOF: restart_syscall finds the futex word of the wait it
// continues past the file's end. A thread waits with a timeout on a word
// in the mapping's second page while the file is two pages long; the
// file is cut to 100 bytes; a signal whose handler is restartSig
// interrupts the wait. The handler runs before rt_sigreturn, while the
// thread's restart block still describes the wait (Linux keeps it until
// sigreturn too), so its restart_syscall checks the word again: EFAULT.
// The wait itself returns EINTR. A round that another signal (the
// runtime's) interrupted first, or whose handler returned before ours
// ran (its rt_sigreturn ends the block), proves nothing and is made
// again; ten such rounds fail.
func restartPastEOF(t *T, f *os.File) {
	t.Logf("restart_syscall")
	const sigRestart = syscall.SIGUSR2
	var act, old kernelSigaction
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sigRestart), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction: %v", e)
	}
	act = old // the runtime's flags, restorer and mask
	act.handler = restartSigPC()
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sigRestart), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	defer syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sigRestart), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)

	for round := 0; ; round++ {
		if round == 10 {
			t.Fatalf("10 rounds without the handler interrupting the wait")
		}
		if err := f.Truncate(2 * pageSize); err != nil {
			t.Fatalf("ftruncate: %v", err)
		}
		m, err := syscall.Mmap(int(f.Fd()), 0, 2*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			t.Fatalf("mmap: %v", err)
		}
		word := &m[pageSize] // holds 0
		atomic.StoreInt64(&restartSigRan, 0)
		atomic.StoreInt64(&restartSigRet, 1)
		tid := make(chan int, 1)
		done := make(chan syscall.Errno, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid <- unix.Gettid()
			ts := unix.NsecToTimespec(int64(10 * time.Second))
			_, _, e := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(word)), 0|128, 0, uintptr(unsafe.Pointer(&ts)), 0, 0)
			done <- e
		}()
		id := <-tid
		time.Sleep(200 * time.Millisecond) // blocked in the wait by now
		if err := f.Truncate(100); err != nil {
			t.Fatalf("ftruncate: %v", err)
		}
		if err := unix.Tgkill(os.Getpid(), id, sigRestart); err != nil {
			t.Fatalf("tgkill: %v", err)
		}
		e := <-done
		syscall.Munmap(m)
		if atomic.LoadInt64(&restartSigRan) == 0 || e != syscall.EINTR {
			t.Logf("round %d: the wait ended with %v, the handler ran: %v; again", round, e, atomic.LoadInt64(&restartSigRan) != 0)
			continue
		}
		if r := atomic.LoadInt64(&restartSigRet); r == -int64(syscall.EINTR) {
			// The runtime's signal came with ours and its handler
			// returned first: its rt_sigreturn ended the restart
			// block (as Linux's), so ours had none to restart.
			t.Logf("round %d: restart_syscall found no restart block (another signal's return ended it); again", round)
			continue
		}
		if r := atomic.LoadInt64(&restartSigRet); r != -int64(syscall.EFAULT) {
			t.Errorf("restart_syscall of a futex wait whose word is now past the file's end: %d; want %d (EFAULT)", r, -int64(syscall.EFAULT))
		}
		t.Logf("round %d: the wait ended with EINTR, its restart_syscall in the handler with %d", round, atomic.LoadInt64(&restartSigRet))
		return
	}
}
