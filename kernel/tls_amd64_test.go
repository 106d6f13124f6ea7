package kernel

import (
	"os"
	"strings"
	gosys "syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/sched"
)

// TestTLSBound: arch_prctl(ARCH_SET_FS) and clone's CLONE_SETTLS refuse an
// FS base at or above TASK_SIZE_MAX with EPERM, as Linux: the kernel's
// answers for the boundary and the non-canonical addresses, beside the
// host Linux's for those it refuses (a call the host accepted would move
// this test's own FS base, so only refusals are asked of it).
func TestTLSBound(t *testing.T) {
	for _, c := range []struct {
		addr uintptr
		want abi.Errno
	}{
		{0, 0},
		{0x7fff_f7ff_f000, 0},
		{taskSizeMax - 1, 0},
		{taskSizeMax, abi.EPERM},
		{1 << 47, abi.EPERM}, // the first non-canonical address
		{1 << 63, abi.EPERM},
		{0xffff_8000_0000_0000, abi.EPERM}, // canonical, the kernel half
		{^uintptr(0), abi.EPERM},
	} {
		task := &sched.Task{UserFS: 0x1000}
		e := sysArchPrctl(task, archSetFS, c.addr)
		if e != c.want {
			t.Errorf("arch_prctl(ARCH_SET_FS, %#x) = %v, want %v", c.addr, e, c.want)
		}
		wantFS := uintptr(0x1000) // a refusal leaves it
		if c.want == 0 {
			wantFS = c.addr
		}
		if task.UserFS != wantFS {
			t.Errorf("arch_prctl(ARCH_SET_FS, %#x): FS base %#x, want %#x", c.addr, task.UserFS, wantFS)
		}
		if tlsOK(c.addr) != (c.want == 0) {
			t.Errorf("tlsOK(%#x) = %v", c.addr, tlsOK(c.addr))
		}
		if c.want == 0 {
			continue
		}
		// The host: only 4-level paging has this TASK_SIZE_MAX.
		if c.addr < 1<<56 && hostLA57() {
			continue
		}
		var before, after uintptr
		gosys.RawSyscall(unix.SYS_ARCH_PRCTL, archGetFS, uintptr(unsafe.Pointer(&before)), 0)
		_, _, he := gosys.RawSyscall(unix.SYS_ARCH_PRCTL, archSetFS, c.addr, 0)
		gosys.RawSyscall(unix.SYS_ARCH_PRCTL, archGetFS, uintptr(unsafe.Pointer(&after)), 0)
		if he != gosys.EPERM || after != before {
			t.Errorf("host arch_prctl(ARCH_SET_FS, %#x) = %v, FS base %#x -> %#x; want EPERM", c.addr, he, before, after)
		}
		// clone with the Go runtime's thread flags and this TLS: Linux
		// refuses in copy_thread, before the thread runs.
		const flags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
			unix.CLONE_SYSVSEM | unix.CLONE_THREAD | unix.CLONE_SETTLS
		stack := make([]uint64, 512)
		r, _, he := gosys.RawSyscall6(unix.SYS_CLONE, flags, uintptr(unsafe.Pointer(&stack[len(stack)-8])), 0, 0, c.addr, 0)
		if he != gosys.EPERM {
			t.Fatalf("host clone(CLONE_SETTLS, tls %#x) = %d, %v; want EPERM", c.addr, r, he)
		}
	}
}

// hostLA57 reports whether the host may use 5-level paging (a larger
// TASK_SIZE_MAX).
func hostLA57() bool {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Contains(string(b), " la57")
}
