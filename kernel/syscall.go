package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/sched"
)

var (
	strace bool
	// syscallStats (yolk.syscallstats=1) counts system calls by number
	// and prints the counts at exit, like strace -c.
	syscallStats bool
	syscallCount [512]uint64
	enosysSeen   [512 / 64]uint64 // numbers already logged
	enosysN      uint64
	nsyscalls    uint64
)

// syscall dispatches the system call in r (number in AX, arguments in DI,
// SI, DX, R10, R8, R9) and leaves the result in r.AX.
func syscall(r *Regs) {
	sched.AssertKernel()
	t := sched.Current()
	atomic.AddUint64(&nsyscalls, 1)
	nr, a0, a1, a2, a3, a4, _ := r.sysArgs()
	if syscallStats && nr < uintptr(len(syscallCount)) {
		atomic.AddUint64(&syscallCount[nr], 1)
	}
	if nr == unix.SYS_RT_SIGRETURN {
		sysRtSigreturn(r, t)
		return
	}
	var ret uintptr
	var err abi.Errno
	switch nr {
	case unix.SYS_READ:
		ret, err = sysRead(int(a0), a1, a2)
	case unix.SYS_WRITE:
		ret, err = sysWrite(int(a0), a1, a2)
	case unix.SYS_CLOSE:
		err = sysClose(int(a0))
	case unix.SYS_MMAP:
		ret, err = sysMmap(a0, a1, a2, a3)
	case unix.SYS_MUNMAP:
		err = checkPage(a0, a1)
		if err == 0 {
			err = vmUnmap(a0, pageRound(a1))
		}
	case unix.SYS_MPROTECT:
		err = checkPage(a0, a1)
		if err == 0 {
			err = vmProtect(a0, pageRound(a1), uint32(a2&7))
		}
	case unix.SYS_MADVISE:
		err = sysMadvise(a0, a1, int(a2))
	case unix.SYS_RT_SIGACTION:
		err = sysRtSigaction(int(a0), a1, a2, a3)
	case unix.SYS_RT_SIGPROCMASK:
		err = sysRtSigprocmask(t, int(a0), a1, a2, a3)
	case unix.SYS_REBOOT:
		err = sysReboot(uint32(a0), uint32(a1), uint32(a2))
	case unix.SYS_WAIT4, unix.SYS_WAITID:
		err = abi.ECHILD // one process, no children
	case unix.SYS_KILL:
		err = sysKill(int(int32(a0)), int(int32(a1)))
	case unix.SYS_TGKILL:
		err = sysTgkill(int(int32(a0)), int(int32(a1)), int(int32(a2)))
	case unix.SYS_TKILL:
		err = sysTgkill(-1, int(int32(a0)), int(int32(a1)))
	case unix.SYS_SIGALTSTACK:
		err = sysSigaltstack(t, a0, a1)
	case unix.SYS_SCHED_YIELD:
		sched.Yield()
	case unix.SYS_NANOSLEEP:
		err = sysNanosleep(a0)
	case unix.SYS_GETPID:
		ret = 1
	case unix.SYS_GETPPID, unix.SYS_GETUID, unix.SYS_GETEUID, unix.SYS_GETGID, unix.SYS_GETEGID:
		ret = 0
	case unix.SYS_GETTID:
		ret = uintptr(t.TID)
	case unix.SYS_CLONE:
		ret, err = sysClone(r, a0, a1, cloneTLS(a3, a4))
	case unix.SYS_EXIT:
		sched.Exit()
	case unix.SYS_EXIT_GROUP:
		printSyscallStats()
		exitQEMU(uint8(a0))
	case unix.SYS_UNAME:
		err = sysUname(a0)
	case unix.SYS_FCNTL:
		ret, err = sysFcntl(int(a0), int(a1), int(a2))
	case unix.SYS_GETTIMEOFDAY:
		err = sysGettimeofday(a0)
	case unix.SYS_CLOCK_GETTIME:
		err = sysClockGettime(int(a0), a1)
	case unix.SYS_CLOCK_GETRES:
		err = sysClockGetres(a1)
	case unix.SYS_FUTEX:
		ret, err = sysFutex(a0, int(a1), uint32(a2), a3)
	case unix.SYS_SCHED_GETAFFINITY:
		ret, err = sysSchedGetaffinity(a1, a2)
	case unix.SYS_EPOLL_CREATE1:
		ret, err = newFile(fileEpoll, 0)
	case unix.SYS_EPOLL_CTL:
		err = sysEpollCtl(int(a0), int(a1), int(a2), a3)
	case unix.SYS_EPOLL_PWAIT:
		ret, err = sysEpollWait(int(a0), a1, int(a2), int(int32(a3)))
	case unix.SYS_EVENTFD2:
		ret, err = newFile(fileEventfd, uint64(a0))
	case unix.SYS_OPENAT:
		ret, err = sysOpenat(int(int32(a0)), a1, int(a2), uint32(a3))
	case unix.SYS_PIPE2:
		err = sysPipe2(a0, int(a1))
	case unix.SYS_PREAD64, unix.SYS_PWRITE64:
		ret, err = sysPread(int(a0), a1, a2, int64(a3), nr == unix.SYS_PWRITE64)
	case unix.SYS_LSEEK:
		ret, err = sysLseek(int(a0), int64(a1), int(a2))
	case unix.SYS_FSTAT:
		err = sysFstat(int(a0), a1)
	case unix.SYS_NEWFSTATAT:
		err = sysNewfstatat(int(int32(a0)), a1, a2, int(a3))
	case unix.SYS_GETDENTS64:
		ret, err = sysGetdents64(int(a0), a1, a2)
	case unix.SYS_MKDIRAT:
		err = sysMkdirat(int(int32(a0)), a1, uint32(a2))
	case unix.SYS_UNLINKAT:
		err = sysUnlinkat(int(int32(a0)), a1, int(a2))
	case unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2:
		if nr == unix.SYS_RENAMEAT {
			a4 = 0
		}
		err = sysRenameat2(int(int32(a0)), a1, int(int32(a2)), a3, int(a4))
	case unix.SYS_LINKAT:
		err = sysLinkat(int(int32(a0)), a1, int(int32(a2)), a3, int(a4))
	case unix.SYS_MKNODAT:
		err = sysMknodat(int(int32(a0)), a1, uint32(a2), uint64(a3))
	case unix.SYS_SYMLINKAT:
		err = sysSymlinkat(a0, int(int32(a1)), a2)
	case unix.SYS_READLINKAT:
		ret, err = sysReadlinkat(int(int32(a0)), a1, a2, a3)
	case unix.SYS_FTRUNCATE:
		err = sysFtruncate(int(a0), int64(a1))
	case unix.SYS_TRUNCATE:
		err = sysTruncate(a0, int64(a1))
	case unix.SYS_GETCWD:
		ret, err = sysGetcwd(a0, a1)
	case unix.SYS_CHDIR:
		err = sysChdir(a0)
	case unix.SYS_FCHDIR:
		err = sysFchdir(int(a0))
	case unix.SYS_FCHMOD:
		err = sysFchmod(int(a0), uint32(a1))
	case unix.SYS_FCHMODAT:
		err = sysFchmodat(int(int32(a0)), a1, uint32(a2), 0)
	case unix.SYS_FCHMODAT2:
		err = sysFchmodat(int(int32(a0)), a1, uint32(a2), int(a3))
	case unix.SYS_FCHOWNAT:
		err = sysFchownat(int(int32(a0)), a1, int(int32(a2)), int(int32(a3)), int(a4))
	case unix.SYS_FCHOWN:
		err = sysFchown(int(a0), int(int32(a1)), int(int32(a2)))
	case unix.SYS_FSYNC, unix.SYS_FDATASYNC:
		err = sysFsync(int(a0))
	case unix.SYS_SYNC:
	case unix.SYS_SYNCFS:
		if int(a0) < 0 || int(a0) >= len(files) || files[a0].kind == fileFree {
			err = abi.EBADF
		}
	case unix.SYS_GETGROUPS:
		// Root without supplementary groups: none, whatever the size.
	case unix.SYS_UTIMENSAT:
		err = sysUtimensat(int(int32(a0)), a1, a2, int(a3))
	case unix.SYS_UMASK:
		ret = uintptr(vfs.Umask(uint32(a0)))
	case unix.SYS_DUP:
		ret, err = sysDup3(int(a0), -1, 0)
	case unix.SYS_DUP3:
		if a0 == a1 || a2&^unix.O_CLOEXEC != 0 {
			err = abi.EINVAL
			break
		}
		if int(a1) < 0 {
			err = abi.EBADF
			break
		}
		ret, err = sysDup3(int(a0), int(a1), 0)
	case unix.SYS_PRCTL:
		err = abi.EINVAL
	case unix.SYS_PRLIMIT64:
		err = sysPrlimit(int(a1), a3)
	case unix.SYS_GETRANDOM:
		ret, err = sysGetrandom(a0, a1)
	case abi.SysStats:
		err = sysStats(a0)
	case abi.SysSwitch:
		ret, err = sysSwitchBench(int(a0), a1 != 0)
	case abi.SysCrash:
		err = sysCrash(int(a0), int(a1))
	case abi.SysCPUStats:
		ret, err = sysCPUStats(a0, int(a1))
	case abi.SysLockTest:
		err = sysLockTest(int(a0), int(a1), int(a2), a3)
	case abi.SysFrameOf:
		ret = sysFrameOf(a0)
	case abi.SysUnmapped:
		ret = uintptr(atomic.LoadUint64(&enosysN))
	case abi.SysNumCPU:
		ret = uintptr(sched.NumCPU())
	default:
		var ok bool
		if ret, err, ok = sysLegacy(t, nr, a0, a1, a2, a3); !ok {
			err = abi.ENOSYS
			logENOSYS(nr)
		}
	}
	if err == abi.EPIPE {
		// A write to a pipe without readers also raises SIGPIPE.
		sendSignal(t, int(unix.SIGPIPE), true)
	}
	if err != 0 {
		ret = -uintptr(err)
	}
	if strace {
		traceSyscall(t, nr, a0, a1, a2, ret)
	}
	r.sysReturn(ret, t.UserFS)
	sched.YieldSlice()
	userSync()
	if signalPending(t) {
		deliverAtExit(r, exitFPState(r))
	}
}

// deliverAtExit delivers a pending signal on the way out of a system call;
// the FP/SSE state for its frame is the one saved at fp or, if fp is 0,
// the live one.
func deliverAtExit(r *Regs, fp uintptr) bool {
	var buf [fpStateSize + 16]byte
	fx := (uintptr(unsafe.Pointer(&buf)) + 15) &^ 15
	if fp != 0 {
		for i := uintptr(0); i < fpStateSize; i += 8 {
			*at[uint64](fx + i) = *at[uint64](fp + i)
		}
	} else {
		fpSave(fx)
	}
	return deliverSignal(r, fx)
}

// printSyscallStats prints the system-call counts (yolk.syscallstats=1)
// and the task switches per CPU.
func printSyscallStats() {
	if !syscallStats {
		return
	}
	conAcquire()
	for nr, n := range syscallCount {
		if n := atomic.LoadUint64(&n); n != 0 {
			klog("syscalls: ")
			kprint(abi.SysName(uintptr(nr)))
			kprint(" ")
			kprintDec(int64(n))
			kprint("\n")
		}
	}
	for i := 0; i < sched.NumCPU(); i++ {
		klog("syscalls: cpu ")
		kprintDec(int64(i))
		kprint(" switches ")
		kprintDec(int64(sched.CPUAt(i).Switches()))
		kprint(" wake IPIs ")
		kprintDec(int64(sched.CPUAt(i).WakeIPIs()))
		kprint(" timer interrupts ")
		kprintDec(int64(atomic.LoadUint64(&percpu[i].timer.fired)))
		kprint(" preemptions ")
		kprintDec(int64(sched.CPUAt(i).Preempts()))
		kprint("\n")
	}
	conRelease()
}

// logENOSYS reports an unimplemented system call the first time it is used.
func logENOSYS(nr uintptr) {
	atomic.AddUint64(&enosysN, 1)
	// The old value decides: of two CPUs racing on the same number,
	// exactly one sees the bit clear. Numbers beyond the table share
	// the last bit: the first is logged.
	bit := min(nr, uintptr(len(enosysSeen))*64-1)
	if atomic.OrUint64(&enosysSeen[bit/64], uint64(1)<<(bit%64))&(uint64(1)<<(bit%64)) != 0 {
		return
	}
	conAcquire()
	klog("syscall ")
	kprint(abi.SysName(nr))
	kprint(" (")
	kprintDec(int64(nr))
	kprint(") not implemented: ENOSYS\n")
	conRelease()
}

func traceSyscall(t *sched.Task, nr, a0, a1, a2, ret uintptr) {
	conAcquire()
	klog("strace [")
	kprintDec(int64(t.TID))
	kprint("] ")
	kprint(abi.SysName(nr))
	kprint("(")
	kprintHex(uint64(a0), 1)
	kprint(", ")
	kprintHex(uint64(a1), 1)
	kprint(", ")
	kprintHex(uint64(a2), 1)
	kprint(") = ")
	kprintDec(int64(ret))
	kprint("\n")
	conRelease()
}

func pageRound(n uintptr) uintptr { return (n + pageSize - 1) &^ (pageSize - 1) }

func checkPage(addr, n uintptr) abi.Errno {
	if addr&(pageSize-1) != 0 || n == 0 {
		return abi.EINVAL
	}
	return 0
}

// userOK reports whether [p, p+n) is memory the program may hand the kernel:
// the identity-mapped image and RAM, or accessible mappings.
func userOK(p, n uintptr) bool { return userRange(p, n, protRead) }

// userW reports whether the kernel may write n bytes at p: writable areas
// only (a write to a read-only page would fault in the kernel).
func userW(p, n uintptr) bool { return userRange(p, n, protWrite) }

func userRange(p, n uintptr, need uint32) bool {
	if p < lowGuard || p+n < p {
		return false
	}
	if p+n <= 1<<32 {
		return true
	}
	mmLock.Lock()
	defer mmLock.Unlock()
	for p < p+n {
		i := findVMA(p)
		if i >= nvmas || vmas[i].start > p || vmas[i].prot == 0 || vmas[i].prot&need != need {
			return false
		}
		if vmas[i].end >= p+n {
			return true
		}
		n -= vmas[i].end - p
		p = vmas[i].end
	}
	return true
}

func zeroUser(p, n uintptr) abi.Errno {
	if p == 0 {
		return 0
	}
	if !userW(p, n) {
		return abi.EFAULT
	}
	clear(bytesAt(p, int(n)))
	return 0
}

func sysMmap(addr, n, prot, flags uintptr) (uintptr, abi.Errno) {
	if flags&unix.MAP_ANONYMOUS == 0 {
		return 0, abi.ENODEV
	}
	if n == 0 || addr&(pageSize-1) != 0 {
		return 0, abi.EINVAL
	}
	return vmMap(addr, pageRound(n), uint32(prot&7), flags&unix.MAP_FIXED != 0)
}

func sysMadvise(addr, n uintptr, advice int) abi.Errno {
	if err := checkPage(addr, n); err != 0 {
		return err
	}
	switch advice {
	case unix.MADV_DONTNEED, unix.MADV_FREE:
		return vmDontNeed(addr, pageRound(n))
	}
	return 0 // hints (huge pages, collapse, ...) need no action
}

func sysClone(r *Regs, flags, stack, tls uintptr) (uintptr, abi.Errno) {
	const need = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD
	if flags&need != need {
		return 0, abi.EINVAL // threads only: there is one process
	}
	t := sched.Alloc()
	if t == nil {
		return 0, abi.EAGAIN
	}
	if t.KStackHi == 0 {
		lo, hi, ok := allocKStack(t.Index())
		if !ok {
			outOfMemory()
		}
		t.SetStack(lo, hi)
	}
	sigInit(t, sched.Current())
	t.UserFS = sched.Current().UserFS
	if flags&unix.CLONE_SETTLS != 0 {
		t.UserFS = tls
	}
	cloneRegs(at[Regs](t.KStackHi-regsSize), r, stack, t.UserFS)
	t.Prepare(t.KStackHi-regsSize, forkretPC())
	sched.Ready(t)
	return uintptr(t.TID), 0
}

// sysReboot: power-off, halt and restart end the machine as exit_group(0)
// does (QEMU runs with -no-reboot: a restart is the end too); the Ctrl-Alt-Del
// settings change nothing. Magic numbers are checked as Linux does.
func sysReboot(magic1, magic2, cmd uint32) abi.Errno {
	// MAGIC2 and its three other accepted values (A, B, C in Linux).
	if magic1 != unix.LINUX_REBOOT_MAGIC1 || (magic2 != unix.LINUX_REBOOT_MAGIC2 &&
		magic2 != 0x05121996 && magic2 != 0x16041998 && magic2 != 0x20112000) {
		return abi.EINVAL
	}
	var what string
	switch cmd {
	case unix.LINUX_REBOOT_CMD_POWER_OFF:
		what = "power off"
	case unix.LINUX_REBOOT_CMD_HALT:
		what = "halt"
	case unix.LINUX_REBOOT_CMD_RESTART, unix.LINUX_REBOOT_CMD_RESTART2:
		what = "restart"
	case unix.LINUX_REBOOT_CMD_CAD_ON, unix.LINUX_REBOOT_CMD_CAD_OFF:
		return 0
	default:
		return abi.EINVAL
	}
	printSyscallStats()
	conGrab()
	knewline()
	kprint("yolk: reboot: ")
	kprint(what)
	kprint("\n")
	halt(0)
	return 0
}

// taskEntry is the first Go code a new task runs (from forkret).
func taskEntry() {
	sched.FinishSwitch()
	userSync()
}

func sysSchedGetaffinity(size, mask uintptr) (uintptr, abi.Errno) {
	if size < 8 {
		return 0, abi.EINVAL
	}
	if !userW(mask, 8) {
		return 0, abi.EFAULT
	}
	*at[uint64](mask) = 1<<uint(sched.NumCPU()) - 1
	return 8, 0
}

func sysPrlimit(res int, old uintptr) abi.Errno {
	if old == 0 {
		return 0
	}
	if !userW(old, 16) {
		return abi.EFAULT
	}
	cur, max := ^uint64(0), ^uint64(0)
	switch res {
	case unix.RLIMIT_NOFILE:
		cur, max = uint64(len(files)), uint64(len(files))
	case unix.RLIMIT_STACK:
		cur = 8 << 20
	}
	*at[uint64](old), *at[uint64](old + 8) = cur, max
	return 0
}

func sysUname(p uintptr) abi.Errno {
	if !userW(p, 6*65) {
		return abi.EFAULT
	}
	clear(bytesAt(p, 6*65))
	for i, s := range [...]string{"Linux", "yolk", "6.1.0-yolk", "#1 yolk", unameMachine, "(none)"} {
		copy(bytesAt(p+uintptr(i)*65, 64), s)
	}
	return 0
}

// rngState backs getrandom when the CPU has no RDRAND.
var rngState uint64

// weakRandWarned is set once the weak-randomness warning was printed.
var weakRandWarned uint32

func random64() uint64 {
	if v, ok := hwRandom(); ok {
		return v
	}
	// The first use is at boot (AT_RANDOM in the initial stack), so the
	// warning comes with the boot lines.
	if atomic.CompareAndSwapUint32(&weakRandWarned, 0, 1) {
		conAcquire()
		klog("warning: no working ")
		kprint(hwRandomName)
		kprint(":")
		kprint(" getrandom and AT_RANDOM fall back to a clock-seeded splitmix64; crypto/rand is NOT cryptographically secure\n")
		conRelease()
	}
	// splitmix64 over the clock-seeded state: not cryptographic.
	z := atomic.AddUint64(&rngState, 0x9e3779b97f4a7c15)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func sysGetrandom(p, n uintptr) (uintptr, abi.Errno) {
	if !userW(p, n) {
		return 0, abi.EFAULT
	}
	b := bytesAt(p, int(n))
	for i := 0; i < len(b); i += 8 {
		v := random64()
		for j := i; j < i+8 && j < len(b); j++ {
			b[j] = byte(v)
			v >>= 8
		}
	}
	return n, 0
}

// benchPartner is the kernel task the switch benchmark bounces to; one
// benchmark runs at a time (benchMu), since they share it and its stack.
var (
	benchPartner uintptr
	benchMu      sched.Mutex
)

func sysSwitchBench(n int, all bool) (uintptr, abi.Errno) {
	if n < 0 {
		return 0, abi.EINVAL
	}
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchPartner == 0 {
		t := sched.Alloc()
		if t == nil {
			return 0, abi.EAGAIN
		}
		lo, hi, ok := allocKStack(t.Index())
		if !ok {
			outOfMemory()
		}
		t.SetStack(lo, hi)
		benchPartner = uintptr(unsafe.Pointer(t))
	}
	return uintptr(sched.SwitchBench(at[sched.Task](benchPartner), n, all)), 0
}
