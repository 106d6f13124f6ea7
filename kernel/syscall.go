package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/calllog"
	"yolk/kernel/socket"
	"yolk/sched"
)

// System-call dispatch: one line per call, turning the registers into the
// handler's typed arguments; the handlers live in sys_<topic>.go and check
// their own arguments. The calls amd64 has beside the generic table are in
// syscall_amd64.go (sysLegacy).
//
// Why a switch and not a table of functions: the compiler turns this dense
// switch into a jump table (a bounds check and an indirect jump, what a
// table would cost), and each case converts the raw registers to its
// handler's own signature. A table needs one signature for all, so a
// wrapper per call doing that conversion: the same lines, an indirect call
// more, and the argument types no longer checked where the handler is
// named.

// syscall dispatches the system call in r (number and arguments as the
// architecture passes them, Regs.sysArgs) and leaves the result in r.
func syscall(r *Regs) {
	sched.AssertKernel()
	t := sched.Current()
	calllog.Entered()
	nr, a0, a1, a2, a3, a4, a5 := r.sysArgs()
	calllog.Count(nr)
	if nr == unix.SYS_RT_SIGRETURN {
		restartBlocks[t.Index()].fn = restartNone // as Linux: a later restart_syscall says EINTR
		sysRtSigreturn(r, t)
		return
	}
	var ret uintptr
	var err abi.Errno
	var start, cpu0 int64
	if calllog.Trace {
		start = nanotime()
	}
	if calllog.Stats {
		cpu0 = t.CPUTime(nanotime())
	}
	switch nr {
	case unix.SYS_READ:
		ret, err = sysRead(int(a0), a1, a2)
	case unix.SYS_WRITE:
		ret, err = sysWrite(int(a0), a1, a2)
	case unix.SYS_CLOSE:
		err = sysClose(int(a0))
	case unix.SYS_MMAP:
		ret, err = sysMmap(a0, a1, a2, a3, int(int32(a4)), a5)
	case unix.SYS_MSYNC:
		err = sysMsync(a0, a1, int(int32(a2)))
	case unix.SYS_FALLOCATE:
		err = sysFallocate(int(int32(a0)), int(int32(a1)), int64(a2), int64(a3))
	case unix.SYS_MUNMAP:
		err = sysMunmap(a0, a1)
	case unix.SYS_MPROTECT:
		err = sysMprotect(a0, a1, a2)
	case unix.SYS_MADVISE:
		err = sysMadvise(a0, a1, int(a2))
	case unix.SYS_MLOCK, unix.SYS_MUNLOCK:
		err = sysMlock(a0, a1, 0)
	case unix.SYS_MLOCK2:
		err = sysMlock(a0, a1, int(int32(a2)))
	case unix.SYS_MLOCKALL:
		err = sysMlockall(int(int32(a0)))
	case unix.SYS_MUNLOCKALL:
		// Nothing is locked (sysMlock).
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
	case unix.SYS_RT_SIGSUSPEND:
		err = sysRtSigsuspend(a0, a1)
	case unix.SYS_RT_SIGTIMEDWAIT:
		ret, err = sysRtSigtimedwait(t, a0, a1, a2, a3)
	case unix.SYS_SIGALTSTACK:
		err = sysSigaltstack(t, a0, a1)
	case unix.SYS_SCHED_YIELD:
		sched.Yield()
	case unix.SYS_NANOSLEEP:
		err = sysNanosleep(a0, a1)
	case unix.SYS_CLOCK_NANOSLEEP:
		err = sysClockNanosleep(int(a0), int(a1), a2, a3)
	case unix.SYS_RESTART_SYSCALL:
		ret, err = sysRestartSyscall(t)
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
		sysExitGroup(int(a0))
	case unix.SYS_UNAME:
		err = sysUname(a0)
	case unix.SYS_FCNTL:
		ret, err = sysFcntl(int(a0), int(a1), int(a2))
	case unix.SYS_IOCTL:
		ret, err = sysIoctl(int(a0), uint(uint32(a1)), a2)
	case unix.SYS_FLOCK:
		err = sysFlock(int(a0), int(int32(a1)))
	case unix.SYS_GETTIMEOFDAY:
		err = timers.Gettimeofday(a0)
	case unix.SYS_CLOCK_GETTIME:
		err = timers.ClockGettime(int32(a0), a1)
	case unix.SYS_CLOCK_GETRES:
		err = timerClockGetres(int32(a0), a1)
	case unix.SYS_GETRUSAGE:
		err = timers.Getrusage(int32(a0), a1)
	case unix.SYS_TIMES:
		ret, err = timers.Times(a0)
	case unix.SYS_TIMER_CREATE:
		err = timers.Create(int32(a0), a1, a2)
	case unix.SYS_TIMER_SETTIME:
		err = timers.Settime(int32(a0), int(a1), a2, a3)
	case unix.SYS_TIMER_GETTIME:
		err = timers.Gettime(int32(a0), a1)
	case unix.SYS_TIMER_GETOVERRUN:
		ret, err = timers.Getoverrun(int32(a0))
	case unix.SYS_TIMER_DELETE:
		err = timers.Delete(int32(a0))
	case unix.SYS_SETITIMER:
		err = timers.Setitimer(int(int32(a0)), a1, a2)
	case unix.SYS_GETITIMER:
		err = timers.Getitimer(int(int32(a0)), a1)
	case unix.SYS_FUTEX:
		ret, err = sysFutex(a0, int(a1), uint32(a2), a3)
	case unix.SYS_SCHED_GETAFFINITY:
		ret, err = sysSchedGetaffinity(a1, a2)
	case unix.SYS_EPOLL_CREATE1:
		ret, err = newFile(fileEpoll, 0)
		ret, err = setCloexec(ret, err, a0&unix.EPOLL_CLOEXEC != 0)
	case unix.SYS_EPOLL_CTL:
		err = sysEpollCtl(int(a0), int(a1), int(a2), a3)
	case unix.SYS_EPOLL_PWAIT:
		ret, err = sysEpollPwait(int(a0), a1, int(a2), int(int32(a3)), a4, a5)
	case unix.SYS_EVENTFD2:
		ret, err = newFile(fileEventfd, uint64(a0))
		ret, err = setCloexec(ret, err, a1&unix.EFD_CLOEXEC != 0)
	case unix.SYS_OPENAT:
		ret, err = sysOpenat(int(int32(a0)), a1, int(a2), uint32(a3))
		ret, err = setCloexec(ret, err, a2&unix.O_CLOEXEC != 0)
	case unix.SYS_PIPE2:
		err = sysPipe2(a0, int(a1))
	case unix.SYS_PREAD64:
		ret, err = sysPread(int(a0), a1, a2, int64(a3), false)
	case unix.SYS_PWRITE64:
		ret, err = sysPread(int(a0), a1, a2, int64(a3), true)
	case unix.SYS_LSEEK:
		ret, err = sysLseek(int(a0), int64(a1), int(a2))
	case unix.SYS_FSTAT:
		err = sysFstat(int(a0), a1)
	case unix.SYS_STATFS:
		err = sysStatfs(a0, a1)
	case unix.SYS_FSTATFS:
		err = sysFstatfs(int(a0), a1)
	case unix.SYS_FACCESSAT:
		err = sysFaccessat(int(int32(a0)), a1, uint32(a2), 0)
	case unix.SYS_FACCESSAT2:
		err = sysFaccessat(int(int32(a0)), a1, uint32(a2), int(a3))
	case unix.SYS_NEWFSTATAT:
		err = sysNewfstatat(int(int32(a0)), a1, a2, int(a3))
	case unix.SYS_GETDENTS64:
		ret, err = sysGetdents64(int(a0), a1, a2)
	case unix.SYS_MKDIRAT:
		err = sysMkdirat(int(int32(a0)), a1, uint32(a2))
	case unix.SYS_UNLINKAT:
		err = sysUnlinkat(int(int32(a0)), a1, int(a2))
	case unix.SYS_RENAMEAT:
		err = sysRenameat2(int(int32(a0)), a1, int(int32(a2)), a3, 0)
	case unix.SYS_RENAMEAT2:
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
	case unix.SYS_FSYNC:
		err = sysFsync(int(a0), false)
	case unix.SYS_FDATASYNC:
		err = sysFsync(int(a0), true)
	case unix.SYS_SYNC:
		dsk.SyncAll()
	case unix.SYS_SYNCFS:
		err = sysSyncfs(int(a0))
	case unix.SYS_GETGROUPS:
		// Root without supplementary groups: none, whatever the size.
	case unix.SYS_UTIMENSAT:
		err = sysUtimensat(int(int32(a0)), a1, a2, int(a3))
	case unix.SYS_UMASK:
		ret = uintptr(vfs.Umask(uint32(a0)))
		atomic.StoreUint32(&shareUmask, uint32(a0)&0o777)
	case unix.SYS_DUP:
		ret, err = sysDup(int(a0))
	case unix.SYS_DUP3:
		ret, err = sysDup3(int(a0), int(a1), int(a2))
	case unix.SYS_PRCTL:
		ret, err = timers.Prctl(int(int32(a0)), a1)
	case unix.SYS_PRLIMIT64:
		err = sysPrlimit(int(a1), a3)
	case unix.SYS_GETRLIMIT:
		err = sysPrlimit(int(a0), a1)
	case unix.SYS_SETRLIMIT:
		err = sysPrlimit(int(a0), 0) // as prlimit64's new limits: accepted, not enforced
	case unix.SYS_SOCKET:
		ret, err = sockCalls.Socket(int(int32(a0)), int(int32(a1)), int(int32(a2)))
		ret, err = setCloexec(ret, err, a1&unix.SOCK_CLOEXEC != 0)
	case unix.SYS_SOCKETPAIR:
		err = sockCalls.Socketpair(int(int32(a0)), int(int32(a1)), int(int32(a2)), a3)
	case unix.SYS_BIND:
		err = sockCalls.Bind(int(a0), a1, uintptr(int32(a2)))
	case unix.SYS_LISTEN:
		err = sockCalls.Listen(int(a0), int(int32(a1)))
	case unix.SYS_ACCEPT:
		ret, err = sockCalls.Accept4(int(a0), a1, a2, 0)
	case unix.SYS_ACCEPT4:
		ret, err = sockCalls.Accept4(int(a0), a1, a2, int(int32(a3)))
		ret, err = setCloexec(ret, err, a3&unix.SOCK_CLOEXEC != 0)
	case unix.SYS_CONNECT:
		err = sockCalls.Connect(int(a0), a1, uintptr(int32(a2)))
	case unix.SYS_GETSOCKNAME:
		err = sockCalls.Getsockname(int(a0), a1, a2, false)
	case unix.SYS_GETPEERNAME:
		err = sockCalls.Getsockname(int(a0), a1, a2, true)
	case unix.SYS_SHUTDOWN:
		err = sockCalls.Shutdown(int(a0), int(int32(a1)))
	case unix.SYS_SETSOCKOPT:
		err = sockCalls.Setsockopt(int(a0), int(int32(a1)), int(int32(a2)), a3, uintptr(int32(a4)))
	case unix.SYS_GETSOCKOPT:
		err = sockCalls.Getsockopt(int(a0), int(int32(a1)), int(int32(a2)), a3, a4)
	case unix.SYS_SENDTO:
		ret, err = sockCalls.Sendto(int(a0), a1, a2, int(int32(a3)), a4, uintptr(int32(a5)))
	case unix.SYS_RECVFROM:
		ret, err = sockCalls.Recvfrom(int(a0), a1, a2, int(int32(a3)), a4, a5)
	case unix.SYS_SENDMSG:
		ret, err = sockCalls.Sendmsg(int(a0), a1, int(int32(a2)))
	case unix.SYS_RECVMSG:
		ret, err = sockCalls.Recvmsg(int(a0), a1, int(int32(a2)))
	case unix.SYS_READV:
		ret, err = sysReadv(int(a0), a1, a2, false)
	case unix.SYS_WRITEV:
		ret, err = sysReadv(int(a0), a1, a2, true)
	case unix.SYS_SPLICE, unix.SYS_SENDFILE:
		err = abi.EINVAL // Go's io.Copy between sockets, and from files to them, falls back to read and write
	case abi.SysNet:
		err = sockCalls.Net(a0)
	case unix.SYS_GETRANDOM:
		ret, err = sysGetrandom(a0, a1)
	case abi.SysNICInfo:
		err = nicDev.Info(a0)
	case abi.SysNICSend:
		err = nicDev.Send(a0, a1)
	case abi.SysNICRecv:
		ret, err = nicDev.Recv(a0, a1)
	case abi.SysNICSendRecords:
		ret, err = nicDev.SendRecords(a0, a1)
	case abi.SysNICNotify:
		err = nicDev.Notify(int(int32(a0)))
	case abi.SysStats, abi.SysSwitch, abi.SysCrash, abi.SysCPUStats, abi.SysLockTest, abi.SysFrameOf, abi.SysTrace, abi.SysTaskInfo, abi.SysUnmapped, abi.SysNumCPU, abi.SysNICInject,
		abi.SysKStackTest:
		ret, err = sysYolk(nr, a0, a1, a2, a3) // only for an image that asks (abi.TestCalls)
	default:
		var ok bool
		if ret, err, ok = sysLegacy(t, nr, a0, a1, a2, a3); !ok {
			err = abi.ENOSYS
			logENOSYS(nr)
		}
	}
	if err == abi.EPIPE {
		// A write to a pipe without readers, or to a stream socket
		// shut down for writing, also raises SIGPIPE.
		sendSignal(t, int(unix.SIGPIPE), true)
	} else if err == socket.EPIPEQuiet {
		err = abi.EPIPE
	}
	if err != 0 {
		ret = -uintptr(err)
	}
	if calllog.Trace {
		calllog.TraceCall[callEnv](t.TID, nr, a0, a1, a2, ret, start, nanotime())
	}
	if calllog.Stats {
		calllog.Took(nr, t.CPUTime(nanotime())-cpu0)
	}
	r.sysReturn(ret, t.UserFS)
	sched.YieldSlice()
	userSync()
	if err != abi.EINTR && !isRestart(err) {
		sigs.RestoreMask(t.Index()) // a temporary mask only holds for a signal the call was interrupted by
	}
	if isRestart(err) {
		// Interrupted: the signal's delivery decides the result
		// (restart.go); with no frame made, the call is made again.
		c := sysCall{err, nr, a0}
		if !deliverAtExit(r, exitFPState(r), &c) {
			c.apply(r, false, 0)
		}
	} else if signalPending(t) {
		deliverAtExit(r, exitFPState(r), nil)
	}
	if sigs.RestoreMask(t.Index()) && signalPending(t) {
		deliverAtExit(r, exitFPState(r), nil) // one the restored mask lets through
	}
}
