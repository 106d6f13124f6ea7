package main

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/netsvc"
)

// fuzzCalls is how many system calls TestSyscallFuzz makes unless
// YOLK_FUZZ_CALLS says otherwise (yolk run ... -e YOLK_FUZZ_CALLS=1000000
// for the 10⁶: 14 s at -smp 1 under TCG).
const fuzzCalls = 100_000

// fuzzExcluded are the system calls whose correct behaviour would end or
// hang the caller, or break the Go runtime under it, whatever their
// arguments; the fuzzer never makes them.
var fuzzExcluded = map[uintptr]string{
	unix.SYS_RT_SIGACTION: "rt_sigaction: the runtime's signal handlers", unix.SYS_RT_SIGPROCMASK: "rt_sigprocmask: the runtime's signal mask",
	unix.SYS_RT_SIGRETURN: "rt_sigreturn: returns through a frame that is not there",
	unix.SYS_SETITIMER:    "setitimer: SIGALRM", unix.SYS_CLONE: "clone: a thread on random registers",
	unix.SYS_EXECVE: "execve", unix.SYS_EXIT: "exit: ends the fuzzing thread", unix.SYS_KILL: "kill: signals",
	unix.SYS_CHDIR: "chdir: later tests use the working directory", unix.SYS_FCHDIR: "fchdir: the working directory",
	unix.SYS_RT_SIGTIMEDWAIT: "rt_sigtimedwait: waits for a signal", unix.SYS_RT_SIGQUEUEINFO: "rt_sigqueueinfo: signals",
	unix.SYS_RT_SIGSUSPEND: "rt_sigsuspend: waits for a signal", unix.SYS_SIGALTSTACK: "sigaltstack: the runtime's signal stack",
	unix.SYS_REBOOT: "reboot: ends the machine", unix.SYS_TKILL: "tkill: signals",
	unix.SYS_SET_TID_ADDRESS: "set_tid_address: written at thread exit", unix.SYS_TIMER_CREATE: "timer_create: signals",
	unix.SYS_TIMER_SETTIME: "timer_settime: the runtime's profiling timers (signals)",
	unix.SYS_TIMER_DELETE:  "timer_delete: the runtime's profiling timers (it throws if one is gone)",
	unix.SYS_EXIT_GROUP:    "exit_group: ends the machine", unix.SYS_TGKILL: "tgkill: signals",
	unix.SYS_MKNODAT: "mknodat: a FIFO would block a later open", unix.SYS_RT_TGSIGQUEUEINFO: "rt_tgsigqueueinfo: signals",
	unix.SYS_EXECVEAT: "execveat", unix.SYS_PIDFD_SEND_SIGNAL: "pidfd_send_signal: signals",
	unix.SYS_CLONE3: "clone3", unix.SYS_CLOSE_RANGE: "close_range: the runtime's descriptors",
}

// fuzzFDCalls are the calls that return a new descriptor.
var fuzzFDCalls = append([]uintptr{unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_DUP, unix.SYS_DUP3, unix.SYS_EPOLL_CREATE1,
	unix.SYS_EVENTFD2, unix.SYS_MEMFD_CREATE, unix.SYS_TIMERFD_CREATE, unix.SYS_USERFAULTFD, unix.SYS_SOCKET, unix.SYS_ACCEPT4},
	fuzzArchFDCalls...)

func init() {
	for nr, why := range fuzzArchExcluded {
		fuzzExcluded[nr] = why
	}
}

// testSyscallFuzz makes random system calls with random arguments (fixed
// seed): numbers over Linux's range and beyond, arguments from small and
// huge integers, pointers into a scratch area and just past it, to a
// read-only page, to unmapped and kernel memory. The kernel must never
// fault (a fault report stops the guest) or hang (the runner's timeout),
// every result must be a value or an errno, and memory outside the
// scratch area — canaries on the heap, on this stack and in a read-only
// page — must not change. Calls that could block get zero or tiny
// timeouts, pipes and sockets are made non-blocking (accept becomes
// accept4 with SOCK_NONBLOCK, F_SETFL keeps O_NONBLOCK), so a receive or
// an accept nobody answers returns EAGAIN; descriptors the runtime owns
// are never passed, and memory
// calls only ever name the scratch area, which is put back after each.
func testSyscallFuzz(t *T) {
	// Nothing the fuzzer does may leave the machine: addresses that are
	// not its own are unreachable meanwhile.
	netsvc.Offline(func() {
		if netsvc.Started { // offline means it: the gateway is unreachable
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("socket: %v", err)
			}
			err = syscall.Connect(fd, &syscall.SockaddrInet4{Addr: [4]byte{10, 0, 2, 2}, Port: 9})
			syscall.Close(fd)
			if err != syscall.ENETUNREACH {
				t.Fatalf("connect to 10.0.2.2 with the service offline: %v, want ENETUNREACH", err)
			}
		}
		calls := fuzzCalls
		if s := os.Getenv("YOLK_FUZZ_CALLS"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("YOLK_FUZZ_CALLS=%q", s)
			}
			calls = n
		}
		syscallFuzz(t, calls, 0x79_6f_6c_6b, true)
	})
}

// syscallFuzz makes calls random system calls from seed, then its
// blocking phase, and checks the canaries, the text, the addresses the
// kernel must refuse and, if counters (nothing else runs), the kernel's
// counters against the runtime's (fuzzInvariants).
func syscallFuzz(t *T, calls int, seed uint64, counters bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wd, _ := os.Getwd()
	oldMask := syscall.Umask(0o22)
	// The thread's timer slack, which random prctl calls may set: its
	// next goroutines, and the threads it creates, get it back.
	slack, _, _ := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_TIMERSLACK, 0, 0)
	defer func() {
		os.Chdir(wd)
		syscall.Umask(oldMask)
		unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, slack, 0)
	}()

	// Layout: guard | scratch (8 pages, read-write) | read-only page | guard.
	const pg = 4096
	region, err := syscall.Mmap(-1, 0, 11*pg, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer syscall.Munmap(region)
	base := uintptr(unsafe.Pointer(&region[0]))
	scratch, scratchEnd, ro := base+pg, base+9*pg, base+9*pg
	roWant := make([]byte, pg)
	for i := range roWant {
		roWant[i] = byte(i*13 + 5)
	}
	restore := func() {
		// Put the layout back after calls that may have changed it.
		syscall.Syscall6(syscall.SYS_MMAP, scratch, 8*pg, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_FIXED, ^uintptr(0), 0)
		syscall.Syscall6(syscall.SYS_MMAP, ro, pg, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_FIXED, ^uintptr(0), 0)
		copy(region[9*pg:10*pg], roWant)
		syscall.Syscall(syscall.SYS_MPROTECT, ro, pg, syscall.PROT_READ)
		for _, g := range []uintptr{base, base + 10*pg} {
			syscall.Syscall6(syscall.SYS_MMAP, g, pg, syscall.PROT_NONE,
				syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_FIXED, ^uintptr(0), 0)
		}
	}
	restore()

	// Descriptors open now belong to the runtime and earlier tests.
	theirs := map[uintptr]bool{}
	for fd := uintptr(0); fd < fdTable; fd++ {
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFD, 0); e == 0 {
			theirs[fd] = true
		}
	}
	var mine []uintptr

	heapCanary := make([]uint64, 512)
	for i := range heapCanary {
		heapCanary[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	addrs := newFuzzAddrs(t)
	defer addrs.release()
	textHash := addrs.textHash()
	var before fuzzState
	if counters {
		before = fuzzSnapshot(t)
	}
	var stackCanary [32]uint64
	for i := range stackCanary {
		stackCanary[i] = ^uint64(i) * 0x9E3779B97F4A7C15
	}
	// Timeouts that bounded calls point at: zero, and 100 µs.
	zeroTS := new([2]int64)
	shortTS := &[2]int64{0, 100_000}

	rng := rand.New(rand.NewPCG(seed, 10))
	// With a host share (TestShare's), a pointer is sometimes a path in
	// a directory of its own there, written into the scratch area:
	// open, stat, rename, unlink and the rest reach the share's code.
	var sharePaths []string
	shareUses := 0
	if dir := os.Getenv(envShareDir); dir != "" {
		fz := dir + "/fuzz"
		os.Mkdir(fz, 0o755)
		defer os.RemoveAll(fz)
		sharePaths = []string{fz, fz + "/a", fz + "/b", fz + "/b/c", fz + "/a/", "fuzz/a", fz + "/l"}
	}
	// Files the mapping, sync, allocation and lock calls get half the
	// time: one in the in-memory file system and, with a share, one
	// there, each open read-write and read-only.
	fileFDs, closeFiles := fuzzFiles(t, sharePaths != nil)
	defer closeFiles()
	fileFD := func(fd uintptr) uintptr {
		if len(fileFDs) > 0 && rng.IntN(2) == 0 {
			return fileFDs[rng.IntN(len(fileFDs))]
		}
		return fd
	}
	pointer := func() uintptr {
		if len(sharePaths) > 0 && rng.IntN(4) == 0 {
			at := scratch + uintptr(rng.IntN(8))*pg - 256
			if at < scratch {
				at = scratch
			}
			p := sharePaths[rng.IntN(len(sharePaths))]
			copy(region[at-base:], p+"\x00")
			shareUses++
			return at
		}
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return scratch + uintptr(rng.IntN(8*pg))
		case 2:
			return scratchEnd - uintptr(rng.IntN(64)) // runs into the read-only page
		case 3:
			return ro + uintptr(rng.IntN(pg))
		case 4:
			return base + uintptr(rng.IntN(pg)) // guard
		case 5:
			return 0xffff800000000000 + uintptr(rng.Uint64N(1<<40))&^7 // kernel
		case 6:
			return uintptr(rng.IntN(1 << 16)) // the first pages, never mapped
		case 7:
			if rng.IntN(2) == 0 {
				return addrs.pointer(rng) // text, the frame pool, page tables, MMIO, the hole above RAM
			}
		}
		return 0x7e0000000000 + uintptr(rng.Uint64N(1<<36)) // unmapped
	}
	arg := func() uintptr {
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return uintptr(rng.IntN(65))
		case 2:
			return ^uintptr(0)
		case 3:
			return 1 << 63
		case 4:
			return uintptr(rng.Uint64())
		case 5:
			if len(mine) > 0 {
				return mine[rng.IntN(len(mine))]
			}
			return 1000
		}
		return pointer()
	}
	counts := map[syscall.Errno]int{}
	fileResults := map[string]map[syscall.Errno]int{}
	for _, c := range fuzzFileCallNames {
		fileResults[c] = map[syscall.Errno]int{}
	}
	used := map[uintptr]bool{}
	// Most numbers are not implemented (ENOSYS at once): after the first
	// tries, three calls in four go to numbers that answered otherwise.
	var impl []uintptr
	start := time.Now()
	for i := 0; i < calls; i++ {
		nr := uintptr(rng.IntN(460))
		switch r := rng.IntN(64); {
		case r == 0:
			nr = []uintptr{500, 1000, 0xfff, 1 << 31, ^uintptr(0)}[rng.IntN(5)]
		case r < 48 && len(impl) > 0:
			nr = impl[rng.IntN(len(impl))]
		}
		if _, ex := fuzzExcluded[nr]; ex {
			continue
		}
		var a [6]uintptr
		for j := range a {
			a[j] = arg()
		}
		if rng.IntN(8) == 0 { // a pointer and a length that is huge or wraps with it
			j := rng.IntN(5)
			a[j+1] = fuzzLength(rng, a[j])
		}
		for j := 0; j < 3; j++ {
			if a[j] < fdTable && (theirs[a[j]] || a[j] <= 2) {
				a[j] = 1000 // never a descriptor the runtime (or the console) owns
			}
		}
		memCall := false
		switch nr {
		case unix.SYS_MMAP: // small, and MAP_FIXED only over the scratch area
			a[1] %= 1 << 20
			if fd := fileFD(a[4]); fd != a[4] { // a file: shared or private, a page offset
				a[4] = fd
				a[3] = []uintptr{unix.MAP_SHARED, unix.MAP_PRIVATE, unix.MAP_SHARED_VALIDATE}[rng.IntN(3)] | a[3]&(0x10|0x100000)
				a[5] = uintptr(rng.IntN(6)) * pg
				if rng.IntN(8) == 0 {
					a[5] += uintptr(rng.IntN(pg)) // not page-aligned: EINVAL
				}
			}
			if a[3]&(0x10|0x100000) != 0 {
				a[0] = scratch + uintptr(rng.IntN(8))*pg
				a[1] = min(a[1], scratchEnd-a[0])
			}
			memCall = true
		case unix.SYS_MPROTECT, unix.SYS_MUNMAP, unix.SYS_MADVISE: // the scratch area only
			a[0] = scratch + uintptr(rng.IntN(8))*pg
			a[1] = min(a[1], scratchEnd-a[0])
			memCall = true
		case unix.SYS_MREMAP: // in place only, in the scratch area
			a[0] = scratch + uintptr(rng.IntN(8))*pg
			a[1] = min(a[1], scratchEnd-a[0])
			a[2] = min(a[2], scratchEnd-a[0])
			a[3] = 0
			memCall = true
		case unix.SYS_PSELECT6: // a zero timespec
			a[4] = uintptr(unsafe.Pointer(zeroTS))
		case unix.SYS_PPOLL:
			a[2] = uintptr(unsafe.Pointer(zeroTS))
		case unix.SYS_EPOLL_PWAIT: // no waiting
			a[3] = 0
		case unix.SYS_EPOLL_PWAIT2:
			a[3] = uintptr(unsafe.Pointer(zeroTS))
		case unix.SYS_NANOSLEEP:
			a[0] = uintptr(unsafe.Pointer(shortTS))
		case unix.SYS_CLOCK_NANOSLEEP: // relative, short
			a[1], a[2] = 0, uintptr(unsafe.Pointer(shortTS))
		case unix.SYS_FUTEX: // a wait may only be short
			a[3] = uintptr(unsafe.Pointer(shortTS))
			a[1] &^= 0x100 // not FUTEX_CLOCK_REALTIME with an absolute deadline
		case unix.SYS_PRCTL: // a timer slack of at most 1 ms: the short waits stay short
			if int32(a[0]) == unix.PR_SET_TIMERSLACK { // the option is an int
				a[1] %= 1_000_001
			}
		case unix.SYS_PIPE2, unix.SYS_EVENTFD2: // non-blocking
			a[1] |= syscall.O_NONBLOCK
		case unix.SYS_OPENAT: // O_NONBLOCK (a FIFO of another test)
			a[2] |= syscall.O_NONBLOCK
		case unix.SYS_SOCKET, unix.SYS_SOCKETPAIR: // non-blocking sockets: accept, connect, send and receive never wait
			if rng.IntN(2) == 0 { // half the time a family and type yolk has
				a[0] = uintptr(fuzzFamilies[rng.IntN(len(fuzzFamilies))])
				a[1] = uintptr(rng.IntN(6))
				a[2] = uintptr(fuzzProtos[rng.IntN(len(fuzzProtos))])
			}
			a[1] |= syscall.SOCK_NONBLOCK
		case unix.SYS_BIND, unix.SYS_CONNECT: // half the time an address of the machine's own
			if rng.IntN(2) == 0 {
				a[1], a[2] = fuzzSockaddr(rng, region[scratch-base+4096:scratchEnd-base], scratch+4096)
			}
		case unix.SYS_SENDTO:
			a[3] |= syscall.MSG_DONTWAIT
			if rng.IntN(2) == 0 {
				a[4], a[5] = fuzzSockaddr(rng, region[scratch-base+4096:scratchEnd-base], scratch+4096)
			}
		case unix.SYS_RECVFROM:
			a[3] |= syscall.MSG_DONTWAIT
		case unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKOPT: // half the time a level and option yolk has
			if rng.IntN(2) == 0 {
				a[1] = uintptr(fuzzLevels[rng.IntN(len(fuzzLevels))])
				a[2] = uintptr(rng.IntN(70))
			}
		case unix.SYS_ACCEPT: // accept4, for a non-blocking socket
			nr, a[3] = unix.SYS_ACCEPT4, syscall.SOCK_NONBLOCK
		case unix.SYS_ACCEPT4:
			a[3] |= syscall.SOCK_NONBLOCK
		case unix.SYS_IOCTL: // half the time a request the kernel answers (FIONBIO on keeps O_NONBLOCK)
			if rng.IntN(2) == 0 {
				a[1] = []uintptr{0x541b, 0x5421, 0x5450, 0x5451, unix.TCGETS}[rng.IntN(5)] // FIONREAD, FIONBIO, FIONCLEX, FIOCLEX
				if a[1] == 0x5421 {
					at := scratch + uintptr(rng.IntN(8*pg-8))&^3
					binary.LittleEndian.PutUint32(region[at-base:], 1)
					a[2] = at
				}
			}
		case unix.SYS_FCNTL: // F_SETFL keeps O_NONBLOCK: a pipe or socket made blocking would wait
			if fd := fileFD(a[0]); fd != a[0] { // a record lock on a file, half the time well formed
				a[0] = fd
				a[1] = []uintptr{unix.F_SETLK, unix.F_SETLKW, unix.F_GETLK, unix.F_OFD_SETLK, unix.F_OFD_SETLKW, unix.F_OFD_GETLK}[rng.IntN(6)]
				if rng.IntN(2) == 0 {
					at := scratch + uintptr(rng.IntN(8*pg-32))&^7
					lk := region[at-base:]
					binary.LittleEndian.PutUint16(lk, uint16(rng.IntN(4)))              // F_RDLCK, F_WRLCK, F_UNLCK, bad
					binary.LittleEndian.PutUint16(lk[2:], uint16(rng.IntN(4)))          // SEEK_SET, _CUR, _END, bad
					binary.LittleEndian.PutUint64(lk[8:], uint64(rng.IntN(9000))-100)   // start
					binary.LittleEndian.PutUint64(lk[16:], uint64(rng.IntN(9000))-3000) // len, negative too
					binary.LittleEndian.PutUint32(lk[24:], 0)                           // pid (0 for the OFD calls)
					a[2] = at
				}
			}
			switch a[1] {
			case syscall.F_SETFL:
				a[2] |= syscall.O_NONBLOCK
			case unix.F_SETLKW: // a record lock never waits
				a[1] = unix.F_SETLK
			case unix.F_OFD_SETLKW:
				a[1] = unix.F_OFD_SETLK
			}
		case unix.SYS_FLOCK: // never waits
			a[0] = fileFD(a[0])
			a[1] |= unix.LOCK_NB
		case unix.SYS_FALLOCATE: // at most 1 MiB, so the file system never fills
			a[0] = fileFD(a[0])
			if rng.IntN(2) == 0 {
				a[1] = []uintptr{0, unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE}[rng.IntN(3)]
			}
			a[2] = uintptr(rng.IntN(256 << 10))
			if rng.IntN(16) == 0 {
				a[2] = ^uintptr(0) - uintptr(rng.IntN(pg)) // negative
			}
			a[3] = uintptr(rng.IntN(768<<10)) - uintptr(rng.IntN(2)) // 0 or -1 at times
		case unix.SYS_MSYNC: // the scratch area (any flags), or a file mapping (below)
			a[0] = scratch + uintptr(rng.IntN(8))*pg
			a[1] = min(a[1], scratchEnd-a[0]+uintptr(rng.IntN(2))*pg)
		case unix.SYS_SENDMSG, unix.SYS_RECVMSG: // never waits; half the time a msghdr with control data
			a[2] |= syscall.MSG_DONTWAIT
			if rng.IntN(2) == 0 {
				a[1] = fuzzMsghdr(rng, region[scratch-base:scratchEnd-base], scratch, mine)
			}
		default:
			fuzzArchArgs(nr, &a, zeroTS)
		}
		r1, _, e := syscall.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if nr == unix.SYS_RECVMSG && e == 0 {
			mine = append(mine, fuzzReceived(region[scratch-base:scratchEnd-base], scratch, a[1], theirs)...)
		}
		counts[e]++
		if slices.Contains(fileFDs, a[0]) || nr == unix.SYS_MMAP && slices.Contains(fileFDs, a[4]) || nr == unix.SYS_MSYNC {
			fileResults[fuzzFileCall(nr, a)][e]++
		}
		if e != syscall.ENOSYS && !used[nr] {
			impl = append(impl, nr)
		}
		used[nr] = true
		if e == 0 && int64(r1) < -4095 && !slices.Contains([]uintptr{unix.SYS_MMAP, unix.SYS_BRK, unix.SYS_MREMAP}, nr) {
			t.Fatalf("call %d: syscall %d%#x = %#x: neither a value nor an errno", i, nr, a, r1)
		}
		if e == 0 {
			switch {
			case slices.Contains(fuzzFDCalls, nr): // calls that return a descriptor
				if r1 < fdTable && !theirs[r1] {
					mine = append(mine, r1)
				}
			case nr == unix.SYS_PIPE2 || nr == fuzzPipe || nr == unix.SYS_SOCKETPAIR: // two descriptors in scratch (if the pointer was there)
				p := a[0]
				if nr == unix.SYS_SOCKETPAIR {
					p = a[3]
				}
				if p >= scratch && p+8 <= scratchEnd {
					b := region[p-base:]
					for _, fd := range []uint32{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])} {
						if fd > 2 && fd < fdTable && !theirs[uintptr(fd)] {
							mine = append(mine, uintptr(fd))
						}
					}
				}
			case nr == unix.SYS_MMAP:
				// Without MAP_FIXED and MAP_FIXED_NOREPLACE the address is
				// a hint — unaligned, kernel-half, past the user half
				// (pointer, arg) — and the mapping lands on a page of the
				// user half whatever it is (mmap_hint.go).
				if a[3]&(0x10|0x100000) == 0 && (r1&(pageSize-1) != 0 || r1 < 1<<16 || r1+a[1] > userTop) {
					t.Fatalf("call %d: mmap%#x = %#x: not a page of the user half", i, a, r1)
				}
				if a[3]&(0x10|0x100000) == 0 && r1 != scratch && int64(r1) > 0 {
					if a[3]&unix.MAP_ANONYMOUS == 0 && a[1] > 0 {
						fuzzTouch(r1, a[1])
					}
					syscall.RawSyscall(syscall.SYS_MUNMAP, r1, a[1], 0)
				}
			}
		}
		if memCall {
			restore()
		}
		if len(mine) > 64 {
			for _, fd := range mine[:32] {
				syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
			}
			mine = slices.Delete(mine, 0, 32)
		}
		for j, v := range stackCanary {
			if v != ^uint64(j)*0x9E3779B97F4A7C15 {
				t.Fatalf("call %d: syscall %d%#x changed this stack's canary %d", i, nr, a, j)
			}
		}
		if i%64 == 0 || memCall {
			for j, v := range heapCanary {
				if v != uint64(j)*0x9E3779B97F4A7C15 {
					t.Fatalf("call %d: syscall %d%#x changed the heap canary %d", i, nr, a, j)
				}
			}
			if string(region[9*pg:10*pg]) != string(roWant) {
				t.Fatalf("call %d: syscall %d%#x changed the read-only page", i, nr, a)
			}
		}
		if i%1024 == 0 && addrs.textHash() != textHash {
			t.Fatalf("call %d: syscall %d%#x changed the image's text", i, nr, a)
		}
		if (i%64 == 0 || memCall) && !addrs.aliasIntact() {
			t.Fatalf("call %d: syscall %d%#x changed a page through its frame's identity alias", i, nr, a)
		}
	}
	for _, fd := range mine {
		syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
	}
	closeFiles()
	fuzzBlockingUnmap(t, rng, max(calls/1000, 20))
	fuzzSigreturn(t, rng, max(calls/100, 200))
	if addrs.textHash() != textHash || !addrs.aliasIntact() {
		t.Errorf("the image's text, or the page behind the frame alias, changed")
	}
	addrs.check(t)
	if counters {
		fuzzInvariants(t, before, fuzzSnapshot(t))
	}
	type ec struct {
		e syscall.Errno
		n int
	}
	var top []ec
	for e, n := range counts {
		top = append(top, ec{e, n})
	}
	slices.SortFunc(top, func(x, y ec) int { return y.n - x.n })
	top = top[:min(len(top), 6)]
	t.Logf("%d calls of %d numbers in %v; most common results: %v; frame alias %#x", calls, len(used), time.Since(start).Round(time.Millisecond), top, addrs.alias)
	t.Logf("calls on the fuzzer's files (errno: count): %v", fileResults)
	if shareUses > 0 {
		ents, _ := os.ReadDir(os.Getenv(envShareDir) + "/fuzz")
		t.Logf("%d arguments were paths on the share; %d entries left in its fuzz directory", shareUses, len(ents))
	}
}

// fuzzMsghdr builds a msghdr in scratch (mem, at address at) for sendmsg
// or recvmsg: an iovec over scratch and a control buffer of random
// cmsghdr chains — SCM_RIGHTS naming the fuzzer's own descriptors or bad
// ones, SCM_CREDENTIALS right or wrong, other types and levels, lengths
// that are too short, too long or unaligned — or a buffer of random room.
// The socket calls' arguments the fuzzer favours half the time.
var (
	fuzzFamilies = []int{syscall.AF_UNIX, syscall.AF_INET, syscall.AF_INET6, syscall.AF_NETLINK, syscall.AF_PACKET}
	fuzzProtos   = []int{0, 0, 0, syscall.IPPROTO_TCP, syscall.IPPROTO_UDP, syscall.IPPROTO_ICMP, 262}
	fuzzLevels   = []int{syscall.SOL_SOCKET, syscall.IPPROTO_TCP, syscall.IPPROTO_IP, syscall.IPPROTO_IPV6, 270}
)

// fuzzSockaddr writes a sockaddr into mem (at its address at): of a
// family yolk has or not, an address of the machine's own (loopback, the
// wildcard, its NIC's) or garbage in the family's other bytes, one of a
// few ports (so that binds, connects and sends meet), a length right,
// short or long. It returns the pointer and the length.
func fuzzSockaddr(rng *rand.Rand, mem []byte, at uintptr) (uintptr, uintptr) {
	clear(mem[:128])
	fam := fuzzFamilies[rng.IntN(len(fuzzFamilies))]
	binary.LittleEndian.PutUint16(mem, uint16(fam))
	port := []uint16{0, 7, 8080, 40000, 40001}[rng.IntN(5)]
	binary.BigEndian.PutUint16(mem[2:], port)
	n := 16
	switch fam {
	case syscall.AF_INET:
		copy(mem[4:8], [][]byte{{127, 0, 0, 1}, {0, 0, 0, 0}, {10, 0, 2, 15}, {127, 1, 2, 3}}[rng.IntN(4)])
	case syscall.AF_INET6:
		n = 28
		switch rng.IntN(3) {
		case 0:
			mem[23] = 1 // ::1
		case 1:
			mem[18], mem[19], mem[20], mem[23] = 0xff, 0xff, 127, 1 // ::ffff:127.0.0.1
		}
	case syscall.AF_UNIX:
		n = 2 + copy(mem[2:], []string{"\x00fuzz", "\x00fuzz2", "/tmp/fuzz.sock"}[rng.IntN(3)])
	case syscall.AF_NETLINK:
		n = 12
		binary.LittleEndian.PutUint32(mem[4:], uint32(rng.IntN(3)))
	}
	switch rng.IntN(8) {
	case 0:
		n = rng.IntN(n + 1) // short
	case 1:
		n = rng.IntN(129) // any, up to sockaddr_storage
	}
	return at, uintptr(n)
}

func fuzzMsghdr(rng *rand.Rand, mem []byte, at uintptr, mine []uintptr) uintptr {
	const hdr, iov, ctl, data = 0, 64, 128, 2048
	le := binary.LittleEndian
	clear(mem[:data])
	le.PutUint64(mem[iov:], uint64(at+data))
	le.PutUint64(mem[iov+8:], uint64(rng.IntN(256)))
	le.PutUint64(mem[hdr+16:], uint64(at+iov))
	le.PutUint64(mem[hdr+24:], 1)
	if rng.IntN(8) == 0 {
		return at + hdr // no control buffer
	}
	le.PutUint64(mem[hdr+32:], uint64(at+ctl))
	off := 0
	for k := rng.IntN(4); k > 0 && off+16 <= data-ctl-64; k-- {
		b := mem[ctl+off:]
		level, typ := int32(syscall.SOL_SOCKET), int32(syscall.SCM_RIGHTS)
		var payload int
		switch rng.IntN(6) {
		case 0, 1: // descriptors
			payload = rng.IntN(8)
			for j := 0; j < payload; j++ {
				fd := int32(1000 + rng.IntN(30))
				if len(mine) > 0 && rng.IntN(4) != 0 {
					fd = int32(mine[rng.IntN(len(mine))])
				} else if rng.IntN(4) == 0 {
					fd = -1
				}
				le.PutUint32(b[16+4*j:], uint32(fd))
			}
			payload *= 4
		case 2: // credentials, ours or not
			typ, payload = syscall.SCM_CREDENTIALS, 12
			le.PutUint32(b[16:], uint32(1+rng.IntN(2)*rng.IntN(100)))
			le.PutUint32(b[20:], uint32(rng.IntN(2)*rng.IntN(3)-rng.IntN(2)))
			le.PutUint32(b[24:], uint32(rng.IntN(2)))
		case 3: // another type or level
			typ, payload = int32(rng.IntN(8)), rng.IntN(16)
			if rng.IntN(2) == 0 {
				level = int32(rng.IntN(300))
			}
		default: // random bytes
			payload = rng.IntN(40)
			for j := 0; j < payload; j++ {
				b[16+j] = byte(rng.IntN(256))
			}
		}
		clen := uint64(16 + payload)
		switch rng.IntN(8) {
		case 0:
			clen = uint64(rng.IntN(20))
		case 1:
			clen += uint64(rng.IntN(64))
		case 2:
			clen = rng.Uint64()
		}
		le.PutUint64(b, clen)
		le.PutUint32(b[8:], uint32(level))
		le.PutUint32(b[12:], uint32(typ))
		off += (16 + payload + 7) &^ 7
	}
	room := uint64(off)
	switch rng.IntN(6) {
	case 0:
		room = uint64(rng.IntN(data - ctl))
	case 1:
		room += uint64(rng.IntN(8))
	case 2:
		room = uint64(rng.IntN(24))
	}
	le.PutUint64(mem[hdr+40:], room)
	return at + hdr
}

// fuzzReceived is the descriptors a recvmsg put in the control buffer
// of the msghdr at p (if it is one fuzzMsghdr built), for the fuzzer to
// close later.
func fuzzReceived(mem []byte, at, p uintptr, theirs map[uintptr]bool) []uintptr {
	if p != at {
		return nil
	}
	le := binary.LittleEndian
	c, n := uintptr(le.Uint64(mem[32:])), uintptr(le.Uint64(mem[40:]))
	if c != at+128 || n > 2048-128 {
		return nil
	}
	var fds []uintptr
	b := mem[128 : 128+n]
	for len(b) >= 16 {
		l := le.Uint64(b)
		if l < 16 || l > uint64(len(b)) {
			break
		}
		if le.Uint32(b[8:]) == syscall.SOL_SOCKET && le.Uint32(b[12:]) == syscall.SCM_RIGHTS {
			for j := uint64(16); j+4 <= l; j += 4 {
				if fd := uintptr(le.Uint32(b[j:])); fd > 2 && fd < fdTable && !theirs[fd] {
					fds = append(fds, fd)
				}
			}
		}
		l = (l + 7) &^ 7
		if l > uint64(len(b)) {
			break
		}
		b = b[l:]
	}
	return fds
}

// fuzzFiles makes the files the fuzzer maps, syncs, allocates and locks:
// three pages and a bit in the in-memory file system and, with a share,
// on it, each open read-write and read-only; done closes and removes them
// (once).
func fuzzFiles(t *T, share bool) (fds []uintptr, done func()) {
	names := []string{"/tmp/fuzz-file"}
	if share {
		names = append(names, os.Getenv(envShareDir)+"/fuzz-file")
	}
	for _, name := range names {
		if err := os.WriteFile(name, make([]byte, 3*4096+100), 0o644); err != nil {
			t.Fatalf("fuzz file: %v", err)
		}
		for _, fl := range []int{syscall.O_RDWR, syscall.O_RDONLY} {
			fd, err := syscall.Open(name, fl|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("fuzz file: %v", err)
			}
			fds = append(fds, uintptr(fd))
		}
	}
	closed := false
	return fds, func() {
		if closed {
			return
		}
		closed = true
		for _, fd := range fds {
			syscall.Close(int(fd))
		}
		for _, name := range names {
			os.Remove(name)
		}
	}
}

var fuzzFileCallNames = []string{"mmap shared", "mmap private", "msync", "fallocate", "flock", "fcntl", "other"}

// fuzzFileCall names a call on the fuzzer's files for its report.
func fuzzFileCall(nr uintptr, a [6]uintptr) string {
	switch nr {
	case unix.SYS_MMAP:
		if a[3]&3 == unix.MAP_PRIVATE {
			return "mmap private"
		}
		return "mmap shared"
	case unix.SYS_MSYNC:
		return "msync"
	case unix.SYS_FALLOCATE:
		return "fallocate"
	case unix.SYS_FLOCK:
		return "flock"
	case unix.SYS_FCNTL:
		return "fcntl"
	}
	return "other"
}

// fuzzTouch reaches the pages of a file mapping through the kernel, whose
// copies fault safely (a page past the file's end, or the whole mapping
// when a random call truncated the file, is EFAULT, not a fault here):
// reads into /dev/null, a write from /dev/zero (a shared writable mapping
// writes the file), and an msync.
func fuzzTouch(p, n uintptr) {
	null, _, e1 := syscall.RawSyscall6(syscall.SYS_OPENAT, ^uintptr(99), uintptr(unsafe.Pointer(&devNull[0])), syscall.O_RDWR|syscall.O_CLOEXEC, 0, 0, 0)
	zero, _, e2 := syscall.RawSyscall6(syscall.SYS_OPENAT, ^uintptr(99), uintptr(unsafe.Pointer(&devZero[0])), syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if e1 == 0 {
		syscall.RawSyscall(syscall.SYS_WRITE, null, p, min(n, 2*4096))
		syscall.RawSyscall(syscall.SYS_CLOSE, null, 0, 0)
	}
	if e2 == 0 {
		syscall.RawSyscall(syscall.SYS_READ, zero, p+min(n-1, 4096)&^4095, 64)
		syscall.RawSyscall(syscall.SYS_CLOSE, zero, 0, 0)
	}
	syscall.RawSyscall(unix.SYS_MSYNC, p, n, unix.MS_SYNC)
}

var (
	devNull = []byte("/dev/null\x00")
	devZero = []byte("/dev/zero\x00")
)
