package main

// The fuzzer's blocking phase: a thread blocks in a call whose buffers
// are in a mapping another thread unmaps before the call can finish.

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fuzzBlockKinds are the blocking calls fuzzBlockingUnmap makes: each
// sets up its descriptors, blocks with its buffers at m (two pages), and
// is woken by wake once m is unmapped.
var fuzzBlockKinds = []struct {
	name string
	run  func(m uintptr) (setup func() (call func() (uintptr, syscall.Errno), wake, done func()))
}{
	{"pipe read", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			r, w, closeAll, _ := openPipe()
			return func() (uintptr, syscall.Errno) { return sys(syscall.SYS_READ, uintptr(r), m+100, 2*pageSize-100) },
				func() { syscall.Write(w, []byte("wake up")) }, closeAll
		}
	}},
	{"stream read", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			r, w, closeAll, _ := openStreamPair()
			return func() (uintptr, syscall.Errno) { return sys(syscall.SYS_READ, uintptr(r), m+pageSize-8, 64) },
				func() { syscall.Write(w, make([]byte, 100)) }, closeAll
		}
	}},
	{"datagram recvmsg", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			p, _ := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
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
				func() { syscall.Close(p[0]); syscall.Close(p[1]) }
		}
	}},
	{"epoll_wait", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			ep, w, closeAll, _ := openEpollPipe()
			return func() (uintptr, syscall.Errno) {
					return sys(unix.SYS_EPOLL_PWAIT, uintptr(ep), m+pageSize-4, 8, ^uintptr(0), 0, 0)
				},
				func() { syscall.Write(w, []byte("x")) }, closeAll
		}
	}},
	{"futex wait", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			ts := &[2]int64{0, 20e6}
			return func() (uintptr, syscall.Errno) {
					return sys(syscall.SYS_FUTEX, m+pageSize, 0, 0, uintptr(unsafe.Pointer(ts)), 0, 0) // FUTEX_WAIT for 0
				},
				func() { sys(syscall.SYS_FUTEX, m+pageSize, 1, 1, 0, 0, 0) }, func() { runtime.KeepAlive(ts) }
		}
	}},
	{"pipe write", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			r, w, closeAll, _ := openPipe()
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
				}, closeAll
		}
	}},
	{"accept", func(m uintptr) func() (func() (uintptr, syscall.Errno), func(), func()) {
		return func() (func() (uintptr, syscall.Errno), func(), func()) {
			l, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			sa := &syscall.SockaddrUnix{Name: "@yolk-fuzz-accept"}
			syscall.Bind(l, sa)
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
				func() { syscall.Close(l); syscall.Close(c) }
		}
	}},
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
	for i := 0; i < rounds; i++ {
		k := fuzzBlockKinds[rng.IntN(len(fuzzBlockKinds))]
		m, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, 2*pageSize, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
		if e != 0 {
			t.Fatalf("mmap: %v", e)
		}
		clear(bytesAt(m, 2*pageSize)) // backed: the faults come from the unmap
		call, wake, done := k.run(m)()
		type result struct {
			n uintptr
			e syscall.Errno
		}
		res := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			n, e := call()
			res <- result{n, e}
		}()
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, m, 2*pageSize, 0); e != 0 {
			t.Fatalf("munmap: %v", e)
		}
		wake()
		var r result
		select {
		case r = <-res:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: %s did not return after its wake-up", i, k.name)
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
	t.Logf("%d blocking calls on buffers unmapped meanwhile: %v", rounds, results)
}
