package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The system calls amd64 has beside the generic table that arm64 (and every
// newer Linux port) uses: the old path-name calls without a directory
// descriptor, pipe, dup2, the first epoll and eventfd calls, and
// arch_prctl for the FS base.

// sysLegacy handles nr if it is one of them; ok is false otherwise.
func sysLegacy(t *sched.Task, nr, a0, a1, a2, a3 uintptr) (ret uintptr, err abi.Errno, ok bool) {
	switch nr {
	case unix.SYS_ARCH_PRCTL:
		err = sysArchPrctl(t, a0, a1)
	case unix.SYS_OPEN:
		ret, err = sysOpenat(unix.AT_FDCWD, a0, int(a1), uint32(a2))
		ret, err = setCloexec(ret, err, a1&unix.O_CLOEXEC != 0)
	case unix.SYS_ACCESS:
		err = sysFaccessat(unix.AT_FDCWD, a0, uint32(a1), 0)
	case unix.SYS_STAT:
		err = sysNewfstatat(unix.AT_FDCWD, a0, a1, 0)
	case unix.SYS_LSTAT:
		err = sysNewfstatat(unix.AT_FDCWD, a0, a1, unix.AT_SYMLINK_NOFOLLOW)
	case unix.SYS_MKDIR:
		err = sysMkdirat(unix.AT_FDCWD, a0, uint32(a1))
	case unix.SYS_UNLINK:
		err = sysUnlinkat(unix.AT_FDCWD, a0, 0)
	case unix.SYS_RMDIR:
		err = sysUnlinkat(unix.AT_FDCWD, a0, unix.AT_REMOVEDIR)
	case unix.SYS_RENAME:
		err = sysRenameat2(unix.AT_FDCWD, a0, unix.AT_FDCWD, a1, 0)
	case unix.SYS_LINK:
		err = sysLinkat(unix.AT_FDCWD, a0, unix.AT_FDCWD, a1, 0)
	case unix.SYS_MKNOD:
		err = sysMknodat(unix.AT_FDCWD, a0, uint32(a1), uint64(a2))
	case unix.SYS_SYMLINK:
		err = sysSymlinkat(a0, unix.AT_FDCWD, a1)
	case unix.SYS_READLINK:
		ret, err = sysReadlinkat(unix.AT_FDCWD, a0, a1, a2)
	case unix.SYS_CHOWN:
		err = sysFchownat(unix.AT_FDCWD, a0, int(int32(a1)), int(int32(a2)), 0)
	case unix.SYS_LCHOWN:
		err = sysFchownat(unix.AT_FDCWD, a0, int(int32(a1)), int(int32(a2)), unix.AT_SYMLINK_NOFOLLOW)
	case unix.SYS_EPOLL_CREATE:
		ret, err = newFile(fileEpoll, 0)
	case unix.SYS_EPOLL_WAIT:
		ret, err = sysEpollWait(int(a0), a1, int(a2), int(int32(a3)))
	case unix.SYS_EVENTFD:
		ret, err = newFile(fileEventfd, uint64(a0))
	case unix.SYS_PIPE:
		err = sysPipe2(a0, 0)
	case unix.SYS_ALARM:
		ret = timers.Alarm(uint32(a0))
	case unix.SYS_DUP2:
		ret, err = sysDup2(int(a0), int(a1))
	default:
		return 0, 0, false
	}
	return ret, err, true
}

// cloneTLS is clone's TLS argument: the fifth on amd64
// (flags, stack, parent_tid, child_tid, tls).
func cloneTLS(a3, a4 uintptr) uintptr { return a4 }

// taskSizeMax is Linux's TASK_SIZE_MAX with 4-level paging: the end of
// the user half, less the guard page.
const taskSizeMax = 1<<47 - mm.PageSize

// tlsOK reports whether addr may be a thread's FS base: below
// taskSizeMax, as Linux's do_arch_prctl_64 demands for ARCH_SET_FS and
// for clone's CLONE_SETTLS (EPERM otherwise). A non-canonical base would
// fault on the way back to the program, which would die of SIGSEGV.
func tlsOK(addr uintptr) bool { return addr < taskSizeMax }

// arch_prctl codes (asm/prctl.h; not in x/sys/unix).
const (
	archSetFS = 0x1002
	archGetFS = 0x1003
)

func sysArchPrctl(t *sched.Task, code, addr uintptr) abi.Errno {
	switch code {
	case archSetFS:
		if !tlsOK(addr) {
			return abi.EPERM
		}
		t.UserFS = addr
	case archGetFS:
		return mm.Put(addr, t.UserFS)
	default:
		return abi.EINVAL
	}
	return 0
}

// unameMachine is uname's machine field.
const unameMachine = "x86_64"

// struct epoll_event is packed on amd64: events, then data at 4.
const (
	epollEventSize = 12
	epollDataOff   = 4
)
