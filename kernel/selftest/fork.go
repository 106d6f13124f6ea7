package main

import (
	"errors"
	"os/exec"
	"syscall"
)

// A new process is not something yolk makes: clone without CLONE_THREAD
// (fork, vfork, os/exec's fork/exec) is ENOSYS, which Go's os/exec
// reports as "function not implemented", and the console says so once.
// A thread's clone with flags Linux refuses stays EINVAL.
func init() { tests = append(tests, test{"TestForkENOSYS", testForkENOSYS}) }

func testForkENOSYS(t *T) {
	const self = "/proc/self/exe"
	if _, err := syscall.ForkExec(self, []string{self, "-h"}, nil); err != syscall.ENOSYS {
		t.Fatalf("ForkExec: %v; want ENOSYS", err)
	}
	if err := exec.Command(self, "-h").Run(); !errors.Is(err, syscall.ENOSYS) {
		t.Fatalf("exec.Command.Run: %v; want ENOSYS", err)
	}
	// CLONE_THREAD without CLONE_SIGHAND: Linux's EINVAL.
	if _, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, syscall.CLONE_VM|syscall.CLONE_THREAD, 0, 0, 0, 0, 0); e != syscall.EINVAL {
		t.Fatalf("clone(CLONE_VM|CLONE_THREAD): %v; want EINVAL", e)
	}
}
