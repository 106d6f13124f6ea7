package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

func sysClone(r *Regs, flags, stack, tls uintptr) (uintptr, abi.Errno) {
	if flags&unix.CLONE_THREAD == 0 {
		// A new process (fork, vfork, os/exec): yolk runs one program.
		logENOSYS(unix.SYS_CLONE)
		return 0, abi.ENOSYS
	}
	const need = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD
	if flags&need != need {
		return 0, abi.EINVAL // a thread shares everything (Linux's rules, and stricter)
	}
	if flags&unix.CLONE_SETTLS != 0 && !tlsOK(tls) {
		return 0, abi.EPERM // as Linux's set_new_tls, before a thread exists
	}
	t := sched.Alloc()
	if t == nil {
		return 0, abi.EAGAIN
	}
	if t.KStackHi == 0 && kernelStack(t) == 0 {
		oomKill()
	}
	sigInit(t, sched.Current())
	timerSlackInit(t, sched.Current())
	t.UserFS = sched.Current().UserFS
	if flags&unix.CLONE_SETTLS != 0 {
		t.UserFS = tls
	}
	cloneRegs(at[Regs](t.KStackHi-regsSize), r, stack, t.UserFS)
	t.Prepare(t.KStackHi-regsSize, forkretPC())
	sched.Ready(t)
	return uintptr(t.TID), 0
}

// sysExitGroup ends the machine with the program's exit status, its
// shared mappings of share files written back first (exitWriteBack).
func sysExitGroup(code int) {
	exitWriteBack(uint8(code))
	printSyscallStats()
	exitQEMU(uint8(code))
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
	exitWriteBack(0)
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
	if e := mm.Put(mask, uint64(1)<<uint(sched.NumCPU())-1); e != 0 {
		return 0, e
	}
	return 8, 0
}

// rlimNlimits is Linux's RLIM_NLIMITS: resources from 0 to 15.
const rlimNlimits = 16

func sysPrlimit(res int, old uintptr) abi.Errno {
	if res < 0 || res >= rlimNlimits {
		return abi.EINVAL
	}
	if old == 0 {
		return 0
	}
	if !mm.UserW(old, 16) {
		return abi.EFAULT
	}
	cur, max := procRlimit(res) // one table, /proc/self/limits's too
	return mm.Put(old, [2]uint64{cur, max})
}

func sysUname(p uintptr) abi.Errno {
	var u [6 * 65]byte
	for i, s := range [...]string{"Linux", nodename, "6.1.0-yolk", "#1 yolk", unameMachine, "(none)"} {
		copy(u[i*65:i*65+64], s)
	}
	return mm.CopyOut(p, u[:])
}
