package main

import (
	"runtime"
	"syscall"
	"unsafe"
)

func init() {
	tests = append(tests, test{"TestTLSNonCanonical", testTLSNonCanonical})
}

// testTLSNonCanonical: an FS base at or above TASK_SIZE_MAX (the last user
// page and every non-canonical or kernel-half address) is EPERM for
// arch_prctl(ARCH_SET_FS) and for clone with CLONE_SETTLS, as Linux: the
// program is not killed on its way back, its FS base is unchanged, and
// the clone makes no thread. Only refused calls are made (an accepted one
// would move the Go runtime's own TLS), so the test runs on the host's
// Linux unchanged.
func testTLSNonCanonical(t *T) {
	const (
		archSetFS = 0x1002
		archGetFS = 0x1003
		flags     = syscall.CLONE_VM | syscall.CLONE_FS | syscall.CLONE_FILES | syscall.CLONE_SIGHAND |
			syscall.CLONE_SYSVSEM | syscall.CLONE_THREAD | syscall.CLONE_SETTLS
	)
	fsBase := func() uintptr {
		var v uintptr
		if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetFS, uintptr(unsafe.Pointer(&v)), 0); e != 0 {
			t.Fatalf("arch_prctl(ARCH_GET_FS): %v", e)
		}
		return v
	}
	// The FS base is the thread's: a goroutine moved to another thread
	// between two reads (preempted, say) would see that thread's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := fsBase()
	stack := make([]uint64, 512) // never used: the clones fail
	for _, a := range []uintptr{0x7fff_ffff_f000, 1 << 47, 1 << 63, 0xffff_8000_0000_0000, ^uintptr(0)} {
		if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archSetFS, a, 0); e != syscall.EPERM {
			t.Errorf("arch_prctl(ARCH_SET_FS, %#x): %v, want EPERM", a, e)
		}
		if now := fsBase(); now != before {
			t.Fatalf("arch_prctl(ARCH_SET_FS, %#x) moved the FS base %#x -> %#x", a, before, now)
		}
		r, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, flags, uintptr(unsafe.Pointer(&stack[len(stack)-8])), 0, 0, a, 0)
		if e != syscall.EPERM {
			t.Fatalf("clone(CLONE_SETTLS, tls %#x) = %d, %v; want EPERM", a, r, e)
		}
	}
}
