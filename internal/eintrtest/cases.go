package eintrtest

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cases are the call classes, each with the dispositions whose outcome
// differs.
var Cases = []Case{
	{"futex/restart", futexRestart},
	{"futex/nointr", futexNoRestart},
	{"futex/timeout", futexTimeout},
	{"futex/SIGURG", futexSIGURG},
	{"nanosleep", nanosleep},
	{"clock_nanosleep/relative", clockNanosleepRel},
	{"clock_nanosleep/absolute", clockNanosleepAbs},
	{"epoll_wait", epollWait},
	{"pipe/read/restart", func(t TB) { pipeRead(t, true) }},
	{"pipe/read/nointr", func(t TB) { pipeRead(t, false) }},
	{"pipe/write/partial", pipeWritePartial},
	{"pipe/write/nointr", pipeWriteFull},
	{"fifo/open/nointr", fifoOpen},
	{"unix/read/restart", func(t TB) { sockRead(t, true, false) }},
	{"unix/read/nointr", func(t TB) { sockRead(t, false, false) }},
	{"unix/read/rcvtimeo", func(t TB) { sockRead(t, true, true) }},
	{"unix/write/partial", sockWritePartial},
	{"unix/accept/restart", func(t TB) { unixAccept(t, true) }},
	{"unix/accept/nointr", func(t TB) { unixAccept(t, false) }},
	{"unix/connect/restart", func(t TB) { unixConnect(t, true) }},
	{"unix/connect/nointr", func(t TB) { unixConnect(t, false) }},
	{"inet/accept/nointr", inetAccept},
	{"ignored", ignored},
	{"masked", masked},
	{"nohandler/nanosleep", func(t TB) { noHandler(t, false) }},
	{"nohandler/futex", func(t TB) { noHandler(t, true) }},
	{"nohandler/race", actionRace},
	{"rt_sigtimedwait/taken", sigtimedwaitTaken},
	{"rt_sigtimedwait/timeout", sigtimedwaitTimeout},
	{"rt_sigtimedwait/nointr", sigtimedwaitEINTR},
	{"rt_sigsuspend", sigsuspend},
	{"epoll_pwait/mask", epollPwaitMask},
}

func futexRestart(t TB) {
	var word uint32
	expectRestart(t, "futex wait", unix.SIGUSR1,
		func() (uintptr, syscall.Errno) { return sys(unix.SYS_FUTEX, ptr(&word), futexWaitPrivate, 0, 0) },
		func() { atomic.StoreUint32(&word, 1); sys(unix.SYS_FUTEX, ptr(&word), futexWakePrivate, 1) },
		func(r result) bool { return r.err == 0 || r.err == unix.EAGAIN })
}

func futexNoRestart(t TB) {
	var word uint32
	expectEINTR(t, "futex wait, no SA_RESTART", unix.SIGUSR1, false,
		func() (uintptr, syscall.Errno) { return sys(unix.SYS_FUTEX, ptr(&word), futexWaitPrivate, 0, 0) },
		func() { atomic.StoreUint32(&word, 1); sys(unix.SYS_FUTEX, ptr(&word), futexWakePrivate, 1) })
}

// A futex wait with a timeout is not made again: EINTR even under
// SA_RESTART (ERESTART_RESTARTBLOCK).
func futexTimeout(t TB) {
	var word uint32
	ts := unix.NsecToTimespec(int64(Long))
	expectEINTR(t, "futex wait with a timeout", unix.SIGUSR1, true,
		func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_FUTEX, ptr(&word), futexWaitPrivate, 0, ptr(&ts))
		}, nil)
}

// SIGURG, the Go runtime's preemption signal, with the runtime's own
// handler (SA_RESTART): a futex wait without a timeout goes on.
func futexSIGURG(t TB) {
	var word uint32
	b := block(nil, func() (uintptr, syscall.Errno) { return sys(unix.SYS_FUTEX, ptr(&word), futexWaitPrivate, 0, 0) })
	for i := 0; i < 3; i++ {
		b.kill(unix.SIGURG)
		if r, done := b.wait(settle); done {
			t.Errorf("futex wait: returned %s on SIGURG", errName(r.err))
			return
		}
	}
	if r, ok := b.finish(t, "futex wait, SIGURG", func() {
		atomic.StoreUint32(&word, 1)
		sys(unix.SYS_FUTEX, ptr(&word), futexWakePrivate, 1)
	}); ok && r.err != 0 && r.err != unix.EAGAIN {
		t.Errorf("futex wait: returned %s after SIGURG and a wake-up", errName(r.err))
	}
}

// nanosleep: EINTR under SA_RESTART too, with the time left in rem.
func nanosleep(t TB) {
	req := unix.NsecToTimespec(int64(Long))
	var rem unix.Timespec
	r, ok := expectEINTR(t, "nanosleep", unix.SIGUSR1, true,
		func() (uintptr, syscall.Errno) { return sys(unix.SYS_NANOSLEEP, ptr(&req), ptr(&rem)) }, nil)
	if ok {
		checkRem(t, "nanosleep", r, time.Duration(rem.Nano()))
	}
}

// checkRem: rem is what was left of Long when the call returned (within
// a second: the call's start is taken just before it).
func checkRem(t TB, name string, r result, rem time.Duration) {
	left := Long - r.el
	if rem <= 0 || rem > Long || rem < left-time.Second || rem > left+time.Second {
		t.Errorf("%s: rem %v, want about %v", name, rem, left)
	}
}

func clockNanosleepRel(t TB) {
	req := unix.NsecToTimespec(int64(Long))
	var rem unix.Timespec
	r, ok := expectEINTR(t, "clock_nanosleep", unix.SIGUSR1, true,
		func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, 0, ptr(&req), ptr(&rem))
		}, nil)
	if ok {
		checkRem(t, "clock_nanosleep", r, time.Duration(rem.Nano()))
	}
}

// An absolute sleep: EINTR (ERESTARTNOHAND), rem untouched.
func clockNanosleepAbs(t TB) {
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	req := unix.NsecToTimespec(now.Nano() + int64(Long))
	rem := unix.Timespec{Sec: 7, Nsec: 7}
	_, ok := expectEINTR(t, "clock_nanosleep TIMER_ABSTIME", unix.SIGUSR1, true,
		func() (uintptr, syscall.Errno) {
			return sys(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, ptr(&req), ptr(&rem))
		}, nil)
	if ok && (rem != unix.Timespec{Sec: 7, Nsec: 7}) {
		t.Errorf("clock_nanosleep TIMER_ABSTIME: rem written (%v)", rem)
	}
}

// epoll_wait is never made again: EINTR under SA_RESTART.
func epollWait(t TB) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Errorf("epoll_create1: %v", err)
		return
	}
	defer unix.Close(ep)
	var ev [4]unix.EpollEvent
	expectEINTR(t, "epoll_wait", unix.SIGUSR1, true, func() (uintptr, syscall.Errno) {
		n, err := unix.EpollWait(ep, ev[:], int(Long/time.Millisecond))
		return uintptr(n), errno(err)
	}, nil)
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.(syscall.Errno)
}

func pipe(t TB) (r, w int, ok bool) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Errorf("pipe2: %v", err)
		return 0, 0, false
	}
	return p[0], p[1], true
}

func readCall(fd int, b []byte) func() (uintptr, syscall.Errno) {
	return func() (uintptr, syscall.Errno) { return sys(unix.SYS_READ, uintptr(fd), ptr(&b[0]), uintptr(len(b))) }
}

func writeCall(fd int, b []byte) func() (uintptr, syscall.Errno) {
	return func() (uintptr, syscall.Errno) {
		return sys(unix.SYS_WRITE, uintptr(fd), ptr(&b[0]), uintptr(len(b)))
	}
}

// A read of an empty pipe: made again under SA_RESTART, else EINTR.
func pipeRead(t TB, restart bool) {
	r, w, ok := pipe(t)
	if !ok {
		return
	}
	defer unix.Close(r)
	defer unix.Close(w)
	var b [16]byte
	feed := func() { unix.Write(w, []byte("x")) }
	if restart {
		expectRestart(t, "pipe read", unix.SIGUSR1, readCall(r, b[:]), feed, func(r result) bool { return r.err == 0 && r.r == 1 })
	} else {
		expectEINTR(t, "pipe read, no SA_RESTART", unix.SIGUSR1, false, readCall(r, b[:]), feed)
	}
}

// drain reads fd until it is empty (fd non-blocking) or n bytes.
func drain(fd int, n int) {
	b := make([]byte, 64<<10)
	for n > 0 {
		k, err := unix.Read(fd, b[:min(len(b), n)])
		if err != nil || k <= 0 {
			return
		}
		n -= k
	}
}

// A write of more than a pipe holds, with no reader reading: the count
// written when the signal came, under SA_RESTART too.
func pipeWritePartial(t TB) {
	r, w, ok := pipe(t)
	if !ok {
		return
	}
	defer unix.Close(r)
	defer unix.Close(w)
	big := make([]byte, 4<<20)
	res, ok := expectCount(t, "pipe write", writeCall(w, big), func() { drain(r, len(big)) })
	if ok && (res.r == 0 || res.r >= uintptr(len(big))) {
		t.Errorf("pipe write: %d of %d bytes, want a part", res.r, len(big))
	}
}

// expectCount: the call (a big write) returns a count, no error, once the
// signal comes (handler with SA_RESTART).
func expectCount(t TB, name string, call func() (uintptr, syscall.Errno), unblock func()) (result, bool) {
	ch, restore := handle(unix.SIGUSR1, true)
	defer restore()
	b := block(nil, call)
	b.kill(unix.SIGUSR1)
	r, ok := b.wait(Long)
	if !ok {
		t.Errorf("%s: not interrupted within %v", name, Long)
		r, _ = b.finish(t, name, unblock)
		t.Errorf("%s: then returned %s (%d)", name, errName(r.err), r.r)
		return r, false
	}
	if r.err != 0 {
		t.Errorf("%s: %s, want the count written", name, errName(r.err))
		return r, false
	}
	if !handled(ch) {
		t.Errorf("%s: the handler did not run", name)
	}
	t.Logf("%s: %d bytes when interrupted", name, r.r)
	return r, true
}

// A write to a full pipe that writes nothing before the signal: EINTR
// without SA_RESTART.
func pipeWriteFull(t TB) {
	r, w, ok := pipe(t)
	if !ok {
		return
	}
	defer unix.Close(r)
	defer unix.Close(w)
	unix.SetNonblock(w, true)
	chunk := make([]byte, 4096)
	for {
		if _, err := unix.Write(w, chunk); err != nil {
			break
		}
	}
	unix.SetNonblock(w, false)
	unix.SetNonblock(r, true)
	expectEINTR(t, "write to a full pipe, no SA_RESTART", unix.SIGUSR1, false, writeCall(w, chunk), func() { drain(r, 1<<30) })
}

// Opening a FIFO for reading waits for a writer: EINTR without SA_RESTART.
func fifoOpen(t TB) {
	dir, err := os.MkdirTemp("", "eintr")
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	defer os.RemoveAll(dir)
	path := dir + "/fifo"
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Errorf("mkfifo: %v", err)
		return
	}
	p, _ := unix.BytePtrFromString(path)
	var wfd int = -1
	r, _ := expectEINTR(t, "open of a FIFO, no SA_RESTART", unix.SIGUSR1, false, func() (uintptr, syscall.Errno) {
		return sys(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(p)), unix.O_RDONLY|unix.O_CLOEXEC)
	}, func() { wfd, _ = unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0) })
	if r.err == 0 && r.r > 0 {
		unix.Close(int(r.r))
	}
	if wfd >= 0 {
		unix.Close(wfd)
	}
}

func socketpair(t TB) (a, b int, ok bool) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Errorf("socketpair: %v", err)
		return 0, 0, false
	}
	return p[0], p[1], true
}

// A read of a unix stream socket without data: made again under
// SA_RESTART, else EINTR; with SO_RCVTIMEO, EINTR under SA_RESTART too
// (Linux's sock_intr_errno).
func sockRead(t TB, restart, timeo bool) {
	a, b, ok := socketpair(t)
	if !ok {
		return
	}
	defer unix.Close(a)
	defer unix.Close(b)
	if timeo {
		tv := unix.NsecToTimeval(int64(Long))
		if err := unix.SetsockoptTimeval(a, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			t.Errorf("SO_RCVTIMEO: %v", err)
			return
		}
	}
	var buf [16]byte
	feed := func() { unix.Write(b, []byte("x")) }
	switch {
	case timeo:
		expectEINTR(t, "socket read with SO_RCVTIMEO", unix.SIGUSR1, true, readCall(a, buf[:]), feed)
	case restart:
		expectRestart(t, "socket read", unix.SIGUSR1, readCall(a, buf[:]), feed, func(r result) bool { return r.err == 0 && r.r == 1 })
	default:
		expectEINTR(t, "socket read, no SA_RESTART", unix.SIGUSR1, false, readCall(a, buf[:]), feed)
	}
}

// A stream write larger than the socket buffers, nobody reading: the
// count sent when the signal came.
func sockWritePartial(t TB) {
	a, b, ok := socketpair(t)
	if !ok {
		return
	}
	defer unix.Close(a)
	defer unix.Close(b)
	unix.SetNonblock(b, true)
	big := make([]byte, 2<<20)
	res, ok := expectCount(t, "socket write", writeCall(a, big), func() {
		go func() {
			for end := time.Now().Add(Long); time.Now().Before(end); {
				drain(b, len(big))
				time.Sleep(time.Millisecond)
			}
		}()
	})
	if ok && (res.r == 0 || res.r >= uintptr(len(big))) {
		t.Errorf("socket write: %d of %d bytes, want a part", res.r, len(big))
	}
}

// accept on a unix listening socket: made again under SA_RESTART, else
// EINTR.
func unixAccept(t TB, restart bool) {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Errorf("socket: %v", err)
		return
	}
	defer unix.Close(l)
	sa := &unix.SockaddrUnix{Name: "@eintrtest-accept"}
	if err := unix.Bind(l, sa); err != nil {
		t.Errorf("bind: %v", err)
		return
	}
	if err := unix.Listen(l, 4); err != nil {
		t.Errorf("listen: %v", err)
		return
	}
	acc := func() (uintptr, syscall.Errno) { return sys(unix.SYS_ACCEPT4, uintptr(l), 0, 0, unix.SOCK_CLOEXEC) }
	var c = -1
	dial := func() {
		c, _ = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		unix.Connect(c, sa)
	}
	if restart {
		expectRestart(t, "accept", unix.SIGUSR1, acc, dial, func(r result) bool {
			if r.err == 0 {
				unix.Close(int(r.r))
			}
			return r.err == 0
		})
	} else if r, _ := expectEINTR(t, "accept, no SA_RESTART", unix.SIGUSR1, false, acc, dial); r.err == 0 && r.r > 0 {
		unix.Close(int(r.r))
	}
	if c >= 0 {
		unix.Close(c)
	}
}

// connect to a unix listener whose queue is full (backlog 0, one
// connection queued): made again under SA_RESTART — it connects once the
// queue has room — else EINTR.
func unixConnect(t TB, restart bool) {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Errorf("socket: %v", err)
		return
	}
	defer unix.Close(l)
	sa := &unix.SockaddrUnix{Name: "@eintrtest-connect"}
	if err := unix.Bind(l, sa); err != nil {
		t.Errorf("bind: %v", err)
		return
	}
	if err := unix.Listen(l, 0); err != nil {
		t.Errorf("listen: %v", err)
		return
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i := 0; i < 2; i++ {
		c, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		fds = append(fds, c)
		if err := unix.Connect(c, sa); err == unix.EAGAIN {
			break // the queue is full
		} else if err != nil || i == 1 {
			t.Errorf("connect %d: %v, want EAGAIN once the queue is full", i, err)
			return
		}
	}
	c, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	fds = append(fds, c)
	rsa := [2 + 18]byte{unix.AF_UNIX, 0, 0}
	copy(rsa[3:], "eintrtest-connect")
	conn := func() (uintptr, syscall.Errno) { return sys(unix.SYS_CONNECT, uintptr(c), ptr(&rsa[0]), 2+1+17) }
	accept := func() {
		if a, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC); err == nil {
			fds = append(fds, a)
		}
	}
	if restart {
		expectRestart(t, "connect", unix.SIGUSR1, conn, accept, success)
	} else {
		expectEINTR(t, "connect, no SA_RESTART", unix.SIGUSR1, false, conn, accept)
	}
}

// accept on a TCP listening socket (loopback): EINTR without SA_RESTART.
func inetAccept(t TB) {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Errorf("socket: %v", err)
		return
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Errorf("bind: %v", err)
		return
	}
	if err := unix.Listen(l, 4); err != nil {
		t.Errorf("listen: %v", err)
		return
	}
	sa, err := unix.Getsockname(l)
	if err != nil {
		t.Errorf("getsockname: %v", err)
		return
	}
	var c = -1
	r, _ := expectEINTR(t, "TCP accept, no SA_RESTART", unix.SIGUSR1, false,
		func() (uintptr, syscall.Errno) { return sys(unix.SYS_ACCEPT4, uintptr(l), 0, 0, unix.SOCK_CLOEXEC) },
		func() {
			c, _ = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			unix.Connect(c, sa)
		})
	if r.err == 0 && r.r > 0 {
		unix.Close(int(r.r))
	}
	if c >= 0 {
		unix.Close(c)
	}
}

// An ignored signal interrupts nothing.
func ignored(t TB) {
	signal.Ignore(unix.SIGWINCH)
	defer signal.Reset(unix.SIGWINCH)
	expectNoInterrupt(t, "ignored SIGWINCH", unix.SIGWINCH, nil, nil, 4*settle)
}

// A signal the thread blocks interrupts nothing; unblocked, it is
// delivered.
func masked(t TB) {
	ch, restore := handle(unix.SIGUSR1, false)
	defer restore()
	var set unix.Sigset_t
	set.Val[0] = 1 << (unix.SIGUSR1 - 1)
	early := false
	expectNoInterrupt(t, "blocked SIGUSR1", unix.SIGUSR1,
		func() { unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil) },
		func() {
			select {
			case <-ch:
				early = true
			default:
			}
			unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
		}, 4*settle)
	if early {
		t.Errorf("blocked SIGUSR1: handled while blocked")
	}
	if !handled(ch) {
		t.Errorf("blocked SIGUSR1: not handled once unblocked")
	}
}

// noHandler: a signal interrupts a sleep (nanosleep, or a futex wait with
// a timeout), and its action becomes SIG_IGN before the thread delivers
// it, which discards it. With no handler run, the wait goes on to its
// first deadline (restart_syscall): 0 or ETIMEDOUT, never early. If the
// thread delivered the signal first, its handler ran and the call says
// EINTR. Both are Linux's; which one a run takes is a race (on one CPU
// yolk's sender keeps its CPU, and the restart is what happens).
func noHandler(t TB, futex bool) {
	const d = 3 * settle
	_, restore := handle(unix.SIGUSR1, true)
	defer restore()
	var word uint32
	ts := unix.NsecToTimespec(int64(d))
	call := func() (uintptr, syscall.Errno) { return sys(unix.SYS_NANOSLEEP, ptr(&ts), 0) }
	end := syscall.Errno(0)
	if futex {
		call = func() (uintptr, syscall.Errno) { return sys(unix.SYS_FUTEX, ptr(&word), futexWaitPrivate, 0, ptr(&ts)) }
		end = unix.ETIMEDOUT
	}
	var act sigaction
	rtSigaction(unix.SIGUSR1, nil, &act)
	ign := sigaction{handler: 1, flags: act.flags, restorer: act.restorer}
	restarts := 0
	const tries = 2
	for i := 0; i < tries; i++ {
		b := block(nil, call)
		b.kill(unix.SIGUSR1)
		rtSigaction(unix.SIGUSR1, &ign, nil)
		r, ok := b.wait(Long)
		rtSigaction(unix.SIGUSR1, &act, nil)
		switch {
		case !ok:
			t.Errorf("no handler: a %v sleep still blocked after %v", d, Long)
			<-b.done
		case r.err == unix.EINTR:
		case r.err != end:
			t.Errorf("no handler: %s after %v, want %s or EINTR", errName(r.err), r.el, errName(end))
		case r.el < d-settle/2:
			t.Errorf("no handler: %s after %v, before the %v deadline", errName(r.err), r.el, d)
		default:
			restarts++
		}
	}
	t.Logf("no handler (futex %v): %d of %d went on to the deadline, the others EINTR", futex, restarts, tries)
}

// actionRace: a thread sleeps in nanosleep over and over while another
// sends it SIGUSR1 and sets the action to SIG_IGN and back, for raceFor.
// Each signal is handled or discarded, whichever action the thread's
// delivery reads: the process goes on either way (yolk's kernel once read
// the action twice and ended the program when the two reads differed).
func actionRace(t TB) {
	const raceFor = 300 * time.Millisecond
	ch, restore := handle(unix.SIGUSR1, true)
	defer restore()
	var act sigaction
	rtSigaction(unix.SIGUSR1, nil, &act)
	ign := sigaction{handler: 1, flags: act.flags, restorer: act.restorer}
	var stop atomic.Bool
	var sleeps, eintr int
	ts := unix.NsecToTimespec(int64(100 * time.Microsecond))
	b := block(nil, func() (uintptr, syscall.Errno) {
		for !stop.Load() {
			if _, e := sys(unix.SYS_NANOSLEEP, ptr(&ts), 0); e == unix.EINTR {
				eintr++
			} else if e != 0 {
				return 0, e
			}
			sleeps++
		}
		return 0, 0
	})
	sent, handled := 0, 0
	for end := time.Now().Add(raceFor); time.Now().Before(end); sent++ {
		b.kill(unix.SIGUSR1)
		rtSigaction(unix.SIGUSR1, &ign, nil)
		rtSigaction(unix.SIGUSR1, &act, nil)
		for drained := false; !drained; {
			select {
			case <-ch:
				handled++
			default:
				drained = true
			}
		}
	}
	stop.Store(true)
	r, ok := b.finish(t, "action race", nil)
	if ok && r.err != 0 {
		t.Errorf("action race: nanosleep returned %s", errName(r.err))
	}
	t.Logf("action race: %d signals sent over %v, %d handled (at least), %d sleeps, %d EINTR", sent, raceFor, handled, sleeps, eintr)
}

// sigset is a mask of the given signals.
func sigset(sigs ...syscall.Signal) uint64 {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (s - 1)
	}
	return m
}

// threadMask is the calling thread's signal mask.
func threadMask() uint64 {
	var old unix.Sigset_t
	unix.PthreadSigmask(unix.SIG_BLOCK, nil, &old)
	return *(*uint64)(unsafe.Pointer(&old))
}

func setThreadMask(how int, m uint64) {
	var set unix.Sigset_t
	*(*uint64)(unsafe.Pointer(&set)) = m
	unix.PthreadSigmask(how, &set, nil)
}

// siginfo is the head of a siginfo_t.
type siginfo struct {
	signo, errno, code int32
	_                  int32
	pid                int32
	_                  [128 - 20]byte
}

func sigtimedwait(set *uint64, info *siginfo, ts *unix.Timespec) func() (uintptr, syscall.Errno) {
	return func() (uintptr, syscall.Errno) {
		return sys(unix.SYS_RT_SIGTIMEDWAIT, ptr(set), ptr(info), ptr(ts), 8)
	}
}

// rt_sigtimedwait takes a blocked signal sent to the thread while it
// waits, and says who sent it (SI_TKILL for tgkill).
func sigtimedwaitTaken(t TB) {
	set := sigset(unix.SIGUSR2)
	var info siginfo
	ts := unix.NsecToTimespec(int64(Long))
	b := block(func() { setThreadMask(unix.SIG_BLOCK, set|noURG) }, func() (uintptr, syscall.Errno) {
		defer setThreadMask(unix.SIG_UNBLOCK, set|noURG)
		return sigtimedwait(&set, &info, &ts)()
	})
	b.kill(unix.SIGUSR2)
	r, ok := b.wait(Long + Long/2)
	switch {
	case !ok:
		t.Errorf("rt_sigtimedwait: still waiting")
		<-b.done
	case r.err != 0 || r.r != uintptr(unix.SIGUSR2):
		t.Errorf("rt_sigtimedwait: %d, %s; want SIGUSR2 (%d)", r.r, errName(r.err), unix.SIGUSR2)
	case info.signo != int32(unix.SIGUSR2) || info.code != -6:
		t.Errorf("rt_sigtimedwait: siginfo signo %d code %d, want %d, -6 (SI_TKILL)", info.signo, info.code, unix.SIGUSR2)
	case r.el > Long/2:
		t.Errorf("rt_sigtimedwait: took %v", r.el)
	}
}

// noURG masks the Go runtime's preemption signal in the waiting thread
// of the rt_sigtimedwait cases that expect no EINTR: a SIGURG the runtime
// sends while the thread enters its wait (preemptall at a stop-the-world
// racing the thread's entry to the system call) has a handler, so it
// ends the wait with EINTR, rightly, on Linux as on yolk. Masked, it waits
// until the call is over.
var noURG = sigset(unix.SIGURG)

// rt_sigtimedwait with nothing sent: EAGAIN at its timeout (0: at once).
func sigtimedwaitTimeout(t TB) {
	set := sigset(unix.SIGUSR2)
	var info siginfo
	for _, d := range []time.Duration{0, 4 * settle} {
		ts := unix.NsecToTimespec(int64(d))
		b := block(func() { setThreadMask(unix.SIG_BLOCK, set|noURG) }, func() (uintptr, syscall.Errno) {
			defer setThreadMask(unix.SIG_UNBLOCK, set|noURG)
			return sigtimedwait(&set, &info, &ts)()
		})
		r, ok := b.wait(Long)
		switch {
		case !ok:
			t.Errorf("rt_sigtimedwait, %v: still waiting after %v", d, Long)
			<-b.done
		case r.err != unix.EAGAIN:
			t.Errorf("rt_sigtimedwait, %v: %d, %s; want EAGAIN", d, r.r, errName(r.err))
		case r.el < d:
			t.Errorf("rt_sigtimedwait, %v: EAGAIN after %v", d, r.el)
		}
	}
}

// A signal outside the set, with a handler, interrupts rt_sigtimedwait:
// EINTR under SA_RESTART too.
func sigtimedwaitEINTR(t TB) {
	set := sigset(unix.SIGUSR2)
	var info siginfo
	ts := unix.NsecToTimespec(int64(Long))
	expectEINTR(t, "rt_sigtimedwait", unix.SIGUSR1, true, sigtimedwait(&set, &info, &ts), nil)
}

// rt_sigsuspend with a mask that lets SIGUSR1 through, which the thread
// blocks: the handler runs, EINTR, and the thread's mask is again the one
// from before.
func sigsuspend(t TB) {
	ch, restore := handle(unix.SIGUSR1, true)
	defer restore()
	usr1 := sigset(unix.SIGUSR1)
	var before, after uint64
	b := block(func() { setThreadMask(unix.SIG_BLOCK, usr1) }, func() (uintptr, syscall.Errno) {
		defer setThreadMask(unix.SIG_UNBLOCK, usr1)
		before = threadMask()
		m := before &^ usr1
		r, e := sys(unix.SYS_RT_SIGSUSPEND, ptr(&m), 8)
		after = threadMask()
		return r, e
	})
	b.kill(unix.SIGUSR1)
	r, ok := b.wait(Long)
	switch {
	case !ok:
		t.Errorf("rt_sigsuspend: still waiting after %v", Long)
		b.kill(unix.SIGUSR2) // not blocked by its mask: ends it either way
		<-b.done
	case r.err != unix.EINTR:
		t.Errorf("rt_sigsuspend: %s, want EINTR", errName(r.err))
	case after != before || before&usr1 == 0:
		t.Errorf("rt_sigsuspend: mask %#x after, %#x before", after, before)
	}
	if !handled(ch) {
		t.Errorf("rt_sigsuspend: the handler did not run")
	}
}

// epoll_pwait with a mask that lets SIGUSR1 through, which the thread
// blocks: EINTR, and the mask from before again; a signal its mask blocks
// does not interrupt it.
func epollPwaitMask(t TB) {
	ch, restore := handle(unix.SIGUSR1, true)
	defer restore()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Errorf("epoll_create1: %v", err)
		return
	}
	defer unix.Close(ep)
	var ev [4]unix.EpollEvent
	usr1 := sigset(unix.SIGUSR1)
	var before, after uint64
	b := block(func() { setThreadMask(unix.SIG_BLOCK, usr1) }, func() (uintptr, syscall.Errno) {
		defer setThreadMask(unix.SIG_UNBLOCK, usr1)
		before = threadMask()
		m := before &^ usr1
		r, e := sys(unix.SYS_EPOLL_PWAIT, uintptr(ep), ptr(&ev[0]), 4, uintptr(Long/time.Millisecond), ptr(&m), 8)
		after = threadMask()
		return r, e
	})
	b.kill(unix.SIGUSR1)
	r, ok := b.wait(Long + Long/2)
	switch {
	case !ok:
		t.Errorf("epoll_pwait: still waiting")
		<-b.done
	case r.err != unix.EINTR || r.el > Long/2:
		t.Errorf("epoll_pwait: %s after %v, want EINTR", errName(r.err), r.el)
	case after != before || before&usr1 == 0:
		t.Errorf("epoll_pwait: mask %#x after, %#x before", after, before)
	}
	if !handled(ch) {
		t.Errorf("epoll_pwait: the handler did not run")
	}
}

var atFDCWD = unix.AT_FDCWD // a variable: its uintptr conversion wraps
