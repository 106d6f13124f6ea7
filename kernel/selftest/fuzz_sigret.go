package main

// The fuzzer's malformed signal frames: rt_sigreturn with a frame the
// fuzzer built — a bad SP, a PC that is non-canonical or in the kernel
// half, reserved floating-point control bits, a misaligned or unmapped
// FP area, a frame that is not there. The kernel must resume the
// thread where the frame says (the harness's landing, sigretLand) or
// raise SIGSEGV, never fault itself.

import (
	"math/rand/v2"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The harness's state, read and written by its assembly
// (sigret_$GOARCH.s).
var (
	sigretSP, sigretBP, sigretLR, sigretG uintptr // the probe's caller's registers
	sigretTid                             int64   // the probing thread
	sigretActive, sigretGot               uint32  // a probe is on; SIGSEGV caught
	sigretOld                             uintptr // the runtime's SIGSEGV handler
	sigretMXCSR                           uint32  // MXCSR (arm64: FPSR) at the landing
	sigretMXCSRGo                         uint32  = 0x1F80
)

func sigretProbe(frame uintptr)
func sigretPCs() (land, segv, restorer uintptr)
func fxsave(p uintptr)

// What a probe must end in.
const (
	sigretLands  = iota // resumed at sigretLand
	sigretFaults        // SIGSEGV
	sigretEither        // either (Linux and yolk may differ: a kernel-half SP)
)

type kernelSigaction struct {
	handler, flags, restorer, mask uintptr
}

// fuzzSigreturn makes rounds rt_sigreturn calls with malformed frames
// (sigretFrame, per architecture), with the harness's SIGSEGV handler in
// place of the runtime's on this thread meanwhile.
func fuzzSigreturn(t *T, rng *rand.Rand, rounds int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	land, segv, restorer := sigretPCs()
	const saSiginfo, saOnstack, saRestorer, saNodefer = 0x4, 0x08000000, 0x04000000, 0x40000000
	act := kernelSigaction{segv, saSiginfo | saOnstack | saRestorer | saNodefer, restorer, 0}
	var old kernelSigaction
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&act)),
		uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction: %v", e)
	}
	defer syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	sigretOld = old.handler
	sigretTid = int64(unix.Gettid())
	var mask uint64
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 0, 0, uintptr(unsafe.Pointer(&mask)), 8, 0, 0)
	buf := new([3 * pageSize]byte) // the frame, on the heap (it does not move)
	results := map[string][2]int{}
	for i := 0; i < rounds; i++ {
		clear(buf[:])
		frame, kind, want := sigretFrame(rng, buf, mask, land)
		sigretGot, sigretMXCSR = 0, 0
		sigretActive = 1
		sigretProbe(frame)
		sigretActive = 0
		got := int(sigretGot)
		r := results[kind]
		r[got]++
		results[kind] = r
		if want != sigretEither && got != want {
			t.Errorf("round %d: rt_sigreturn with %s: SIGSEGV %v, want %v", i, kind, got == 1, want == 1)
		}
		if kind == "reserved FP control bits" && got == 0 && sigretMXCSR&sigretReserved != 0 {
			t.Errorf("round %d: the reserved bits came back: %#x", i, sigretMXCSR)
		}
		var now uint64
		syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 0, 0, uintptr(unsafe.Pointer(&now)), 8, 0, 0)
		if now != mask {
			t.Fatalf("round %d: %s: signal mask %#x after, %#x before", i, kind, now, mask)
		}
	}
	runtime.KeepAlive(buf)
	t.Logf("%d rt_sigreturn calls with malformed frames (kind: [landed, SIGSEGV]): %v", rounds, results)
}

func putU64(b []byte, off int, v uint64) { *(*uint64)(unsafe.Pointer(&b[off])) = v }
func putU32(b []byte, off int, v uint32) { *(*uint32)(unsafe.Pointer(&b[off])) = v }
