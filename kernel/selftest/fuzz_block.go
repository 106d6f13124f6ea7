package main

// The fuzzer's blocking phase: a thread blocks in a call whose buffers
// are in a mapping another thread unmaps before the call can finish.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// fuzzBlockKinds are the blocking calls fuzzBlockingUnmap makes: each
// sets up its descriptors, blocks with its buffers at m (two pages), and
// is woken by wake once m is unmapped.
var fuzzBlockKinds = []struct {
	name string
	run  func(m uintptr) (setup func() (call func() (uintptr, syscall.Errno), wake, done func(), err error))
}{
	{"pipe read", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			r, w, closeAll, err := openPipe()
			return func() (uintptr, syscall.Errno) { return sys(syscall.SYS_READ, uintptr(r), m+100, 2*pageSize-100) },
				func() { syscall.Write(w, []byte("wake up")) }, closeAll, err
		}
	}},
	{"stream read", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			r, w, closeAll, err := openStreamPair()
			return func() (uintptr, syscall.Errno) { return sys(syscall.SYS_READ, uintptr(r), m+pageSize-8, 64) },
				func() { syscall.Write(w, make([]byte, 100)) }, closeAll, err
		}
	}},
	{"datagram recvmsg", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				return nil, nil, nil, err
			}
			// msghdr at m, its iovec at m+64 over m+128 (256 bytes), the
			// name at m+512, control data at m+1024 (in the second page
			// from m+pageSize-32 on).
			b := bytesAt(m, 2*pageSize)
			binary.LittleEndian.PutUint64(b[0:], uint64(m+512))
			binary.LittleEndian.PutUint32(b[8:], 128)
			binary.LittleEndian.PutUint64(b[16:], uint64(m+64))
			binary.LittleEndian.PutUint64(b[24:], 1)
			binary.LittleEndian.PutUint64(b[32:], uint64(m+pageSize-32))
			binary.LittleEndian.PutUint64(b[40:], 256)
			binary.LittleEndian.PutUint64(b[64:], uint64(m+128))
			binary.LittleEndian.PutUint64(b[72:], 256)
			return func() (uintptr, syscall.Errno) { return sys(syscall.SYS_RECVMSG, uintptr(p[0]), m, 0) },
				func() { syscall.Write(p[1], []byte("a datagram")) },
				func() { syscall.Close(p[0]); syscall.Close(p[1]) }, nil
		}
	}},
	{"epoll_wait", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			ep, w, closeAll, err := openEpollPipe()
			return func() (uintptr, syscall.Errno) {
					return sys(unix.SYS_EPOLL_PWAIT, uintptr(ep), m+pageSize-4, 8, ^uintptr(0), 0, 0)
				},
				func() { syscall.Write(w, []byte("x")) }, closeAll, err
		}
	}},
	{"futex wait", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			ts := &[2]int64{0, 20e6}
			return func() (uintptr, syscall.Errno) {
					return sys(syscall.SYS_FUTEX, m+pageSize, 0, 0, uintptr(unsafe.Pointer(ts)), 0, 0) // FUTEX_WAIT for 0
				},
				func() { sys(syscall.SYS_FUTEX, m+pageSize, 1, 1, 0, 0, 0) }, func() { runtime.KeepAlive(ts) }, nil
		}
	}},
	{"pipe write", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			r, w, closeAll, err := openPipe()
			if err != nil {
				return nil, nil, nil, err
			}
			syscall.SetNonblock(w, true)
			fill := make([]byte, 4096)
			for {
				if _, err := syscall.Write(w, fill); err != nil {
					break
				}
			}
			syscall.SetNonblock(w, false)
			syscall.SetNonblock(r, true) // the drain below must not wait
			return func() (uintptr, syscall.Errno) { return sys(syscall.SYS_WRITE, uintptr(w), m, 2*pageSize) },
				func() {
					for {
						if n, _ := syscall.Read(r, fill); n < len(fill) {
							return
						}
					}
				}, closeAll, nil
		}
	}},
	{"accept", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func(), error) {
		return func() (func() (uintptr, syscall.Errno), func(), func(), error) {
			l, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				return nil, nil, nil, err
			}
			sa := &syscall.SockaddrUnix{Name: "@yolk-fuzz-accept"}
			if err := syscall.Bind(l, sa); err != nil {
				syscall.Close(l)
				return nil, nil, nil, err
			}
			syscall.Listen(l, 1)
			binary.LittleEndian.PutUint32(bytesAt(m+pageSize, 4), 110) // socklen
			var c int
			return func() (uintptr, syscall.Errno) {
					n, e := sys(syscall.SYS_ACCEPT4, uintptr(l), m+pageSize-16, m+pageSize, syscall.SOCK_CLOEXEC, 0, 0)
					if e == 0 {
						syscall.Close(int(n))
					}
					return n, e
				},
				func() {
					c, _ = syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
					syscall.Connect(c, sa)
				},
				func() { syscall.Close(l); syscall.Close(c) }, nil
		}
	}},
}

// fuzzBlockBound is how long a woken call may take to return before the
// kernel's view of its thread is logged; fuzzBlockGrace is how much longer
// it gets before the test fails.
const (
	fuzzBlockBound = 10 * time.Second
	fuzzBlockGrace = 60 * time.Second
)

// taskInfo is the kernel's view of thread tid (SysTaskInfo), as text.
func taskInfo(tid int32) string {
	if tid == 0 {
		return "the calling goroutine has not reached its call"
	}
	var ti abi.TaskInfo
	if _, _, e := syscall.Syscall(abi.SysTaskInfo, uintptr(tid), uintptr(unsafe.Pointer(&ti)), 0); e != 0 {
		return fmt.Sprintf("thread %d: SysTaskInfo: %v", tid, e)
	}
	return fmt.Sprintf("thread %d: state %d (1 running, 2 ready, 3 blocked) wait %d on CPU %d, queued %d, last woken %d (0 wake, 1 timeout, 2 signal); pipe %d key %#x cond %#x: %d, now %d; interruptible %d mask %#x; pending %#x mask %#x; deadline %d (latest %d) now %d",
		tid, ti.State, ti.Seq, ti.OnCPU-1, ti.Queued, ti.Woken, ti.Pipe, ti.Key, ti.CondAddr, ti.CondVal, ti.CondNow,
		ti.Interrupt, ti.IntrMask, ti.Pending, ti.Mask, ti.Deadline, ti.Latest, ti.Now)
}

// testTaskInfo checks the report the blocking phase gives of a call that
// does not return: a thread blocked in a pipe read is seen blocked, on its
// pipe's wait queue, interruptibly, and running again once data came; an
// unknown thread is ESRCH.
func testTaskInfo(t *T) {
	r, w, closeAll, err := openPipe()
	if err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	defer closeAll()
	tidc, done := make(chan int32, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tidc <- int32(syscall.Gettid())
		var b [8]byte
		_, err := syscall.Read(r, b[:])
		done <- err
	}()
	tid := <-tidc
	var ti abi.TaskInfo
	for end := time.Now().Add(10 * time.Second); ; {
		if _, _, e := syscall.Syscall(abi.SysTaskInfo, uintptr(tid), uintptr(unsafe.Pointer(&ti)), 0); e != 0 {
			t.Fatalf("SysTaskInfo(%d): %v", tid, e)
		}
		// Blocked elsewhere first is no failure: the locked thread may
		// park in a futex (the runtime's) before it reaches read.
		if ti.State == 3 && ti.Pipe >= 0 || time.Now().After(end) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if ti.State != 3 || ti.Pipe < 0 || ti.Queued != 1 || ti.Interrupt != 1 {
		t.Errorf("reader blocked in a pipe read: %s", taskInfo(tid))
	}
	syscall.Write(w, []byte("x"))
	if err := <-done; err != nil {
		t.Errorf("read: %v", err)
	}
	if _, _, e := syscall.Syscall(abi.SysTaskInfo, 1<<30, uintptr(unsafe.Pointer(&ti)), 0); e != syscall.ESRCH {
		t.Errorf("SysTaskInfo of no thread: %v, want ESRCH", e)
	}
}

func sys(nr uintptr, a ...uintptr) (uintptr, syscall.Errno) {
	var x [6]uintptr
	copy(x[:], a)
	r, _, e := syscall.Syscall6(nr, x[0], x[1], x[2], x[3], x[4], x[5])
	return r, e
}

// fuzzBlockingUnmap makes rounds blocking calls of random kinds, each on
// buffers another thread unmaps after a random delay (0 to 3 ms: before
// the call, while it blocks), then wakes the call. The kernel must return
// (an errno, EFAULT above all, or a count) and never fault.
func fuzzBlockingUnmap(t *T, rng *rand.Rand, rounds int) {
	results := map[string]map[syscall.Errno]int{}
	var slowest time.Duration // from a wake-up to the call's return
	slowKind := ""
	for i := 0; i < rounds; i++ {
		k := fuzzBlockKinds[rng.IntN(len(fuzzBlockKinds))]
		m, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, 2*pageSize, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
		if e != 0 {
			t.Fatalf("mmap: %v", e)
		}
		clear(bytesAt(m, 2*pageSize)) // backed: the faults come from the unmap
		call, wake, done, err := k.run(m)()
		if err != nil {
			// A call on a descriptor that is not the one set up would
			// wait for what never comes (fd 0: the console).
			t.Fatalf("round %d: %s: setting up: %v", i, k.name, err)
		}
		type result struct {
			n uintptr
			e syscall.Errno
		}
		res := make(chan result, 1)
		var tid atomic.Int32 // the calling thread, once it makes the call
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid.Store(int32(unix.Gettid()))
			n, e := call()
			res <- result{n, e}
		}()
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, m, 2*pageSize, 0); e != 0 {
			t.Fatalf("munmap: %v", e)
		}
		wake()
		woke := time.Now()
		var r result
		select {
		case r = <-res:
		case <-time.After(fuzzBlockBound):
			// Slow or never? Say what the kernel sees, then give it
			// fuzzBlockGrace more.
			t.Logf("round %d: %s has not returned %v after its wake-up: %s", i, k.name, fuzzBlockBound, taskInfo(tid.Load()))
			select {
			case r = <-res:
				t.Logf("round %d: %s returned %v after its wake-up", i, k.name, time.Since(woke))
			case <-time.After(fuzzBlockGrace):
				t.Fatalf("round %d: %s did not return %v after its wake-up: %s", i, k.name, time.Since(woke), taskInfo(tid.Load()))
			}
		}
		if d := time.Since(woke); d > slowest {
			slowest, slowKind = d, k.name
		}
		done()
		switch r.e {
		// EINTR: a signal with a handler (the runtime's SIGURG) ends a
		// timed futex wait, as on Linux.
		case 0, syscall.EFAULT, syscall.EAGAIN, syscall.ETIMEDOUT, syscall.EINTR:
		default:
			t.Errorf("round %d: %s on an unmapped buffer: %d, %v", i, k.name, r.n, r.e)
		}
		if results[k.name] == nil {
			results[k.name] = map[syscall.Errno]int{}
		}
		results[k.name][r.e]++
	}
	t.Logf("%d blocking calls on buffers unmapped meanwhile: %v; slowest back %v after its wake-up (%s)", rounds, results, slowest.Round(time.Millisecond), slowKind)
}

// testPipeReadUnmapSignals is the blocking phase's pipe read alone, with
// signals (SIGUSR1 into os/signal: a handler with SA_RESTART) sent to the
// reading thread back to back meanwhile, up to 200 a round: each ends the
// wait, the handler runs and the read is made again, until the buffer is
// unmapped (EFAULT from then on) and the pipe gets data. Every read must
// return EFAULT (its buffer is gone before any data comes).
func testPipeReadUnmapSignals(t *T) {
	c := make(chan os.Signal, 16)
	signal.Notify(c, syscall.SIGUSR1)
	go func() {
		for range c {
		}
	}()
	defer func() { signal.Stop(c); close(c) }()
	rng := rand.New(rand.NewPCG(19, 4))
	sent := 0
	var slowest time.Duration // from a wake-up to the read's return
	for i := 0; i < 30; i++ {
		m, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, 2*pageSize, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
		if e != 0 {
			t.Fatalf("mmap: %v", e)
		}
		clear(bytesAt(m, 2*pageSize))
		r, w, closeAll, err := openPipe()
		if err != nil {
			t.Fatalf("pipe: %v", err)
		}
		var tid atomic.Int32
		res := make(chan syscall.Errno, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid.Store(int32(unix.Gettid()))
			_, e := sys(syscall.SYS_READ, uintptr(r), m+100, 2*pageSize-100)
			res <- e
		}()
		stop := make(chan struct{})
		signalled := make(chan int)
		go func() { // the signaller
			n := 0
			for {
				select {
				case <-stop:
					signalled <- n
					return
				default:
				}
				if id := tid.Load(); id != 0 && n < 200 && unix.Tgkill(unix.Getpid(), int(id), unix.SIGUSR1) == nil {
					n++
				}
				runtime.Gosched()
			}
		}()
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, m, 2*pageSize, 0); e != 0 {
			t.Fatalf("munmap: %v", e)
		}
		syscall.Write(w, []byte("wake up"))
		woke := time.Now()
		var got syscall.Errno
		select {
		case got = <-res:
		case <-time.After(fuzzBlockBound):
			t.Logf("round %d: the read has not returned %v after its wake-up: %s", i, fuzzBlockBound, taskInfo(tid.Load()))
			select {
			case got = <-res:
				t.Logf("round %d: the read returned %v after its wake-up", i, time.Since(woke))
			case <-time.After(fuzzBlockGrace):
				t.Fatalf("round %d: the read did not return %v after its wake-up: %s", i, time.Since(woke), taskInfo(tid.Load()))
			}
		}
		slowest = max(slowest, time.Since(woke))
		close(stop)
		sent += <-signalled
		closeAll()
		if got != syscall.EFAULT {
			t.Errorf("round %d: read into a buffer unmapped before the data came: %v, want EFAULT", i, got)
		}
	}
	if sent == 0 {
		t.Errorf("no signal reached a reading thread")
	}
	t.Logf("30 pipe reads on buffers unmapped meanwhile, %d signals to the readers; slowest back %v after its wake-up", sent, slowest.Round(time.Millisecond))
}
