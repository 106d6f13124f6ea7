// Package mm is yolk's memory management: the physical frame allocator
// and the physical map (frames.go, physmap_$GOARCH.go), the demand-paged
// BSS (bss.go), the one address space — its areas, the four-level page
// tables both architectures share, page faults, kernel stacks (vm.go,
// vm_$GOARCH.go) — TLB shootdown (tlb_$GOARCH.go), and the rule for the
// user memory system calls hand the kernel, checked in one place
// (usermem.go). The system-call handlers stay in package kernel and call
// in here; so do the trap handlers, for page faults and the shootdown
// interrupt.
//
// Kernel-context Go: everything here runs inside traps and system calls
// on kernel stacks under a fake g, underneath a runtime that may be in any
// state. Nothing allocates on the Go heap or stores a Go pointer into
// memory: the areas are a fixed array, free frames are threaded through
// themselves, addresses are uintptr. Nothing calls into the runtime's
// scheduler: the locks are sched's (vmMutex, a CES mutex, and mmLock, a
// TWA spin lock; vm.go says what each guards). kernel/kcontext_test.go
// checks this on a built image.
//
// What lies above — the fatal report, what running out of memory means,
// the shootdown's interrupts — the kernel supplies through Env, the type
// parameter of Space, which holds the operations that need it. Everything
// else is package-level and not generic: there is one machine and one
// address space. The kernel's assembly symbols this package needs (the
// BSS's start, the image's end) come in as arguments at boot.
package mm

import (
	"sync/atomic"
	"unsafe"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct), whose zero value is the
// environment: Space holds one. It is a type parameter, never an
// interface value or a function variable, which would need a heap, write
// barriers, or a value set before the first fault.
type Env interface {
	// Fatal reports a kernel panic with msg and stops the machine.
	Fatal(msg string)
	// OutOfMemory stops the machine with a kernel panic for want of a
	// frame the kernel itself needs at boot, before the program runs (a
	// page table of the physical map, of the identity map split for the
	// BSS and the read-only image): there is no program to kill, and the
	// machine cannot start without it.
	OutOfMemory()
	// OOMKill ends the program for want of a frame for its memory — a
	// page fault, the program's or a system call's copy into its pages,
	// on its mappings or in the demand-paged BSS — as Linux's OOM killer
	// ends the only process there is: SIGKILL. It does not return.
	OOMKill()
	// FileRef adds d to the references the address space holds on file
	// (a file area's: the kernel's name for an open file or inode). It
	// is called under vmMutex, not mmLock: it may take the file system's
	// locks.
	FileRef(file int32, d int32)
	// FileFault backs the page at offset off of file's area, under
	// mmLock, from a page fault: it must not block or fault. Asked with
	// frame 0, it returns the file's own page for a shared mapping (a
	// frame the file keeps, mapped as is), or 0 and true to be given a
	// zeroed frame, which it fills (a private copy, or a page the kernel
	// fills itself); ok false where the file has no page — wholly past
	// its end, or a hole its full file system cannot fill: the fault is
	// SIGBUS.
	FileFault(file int32, off int64, shared bool, frame uintptr) (f uintptr, ok bool)
	archEnv
}

// Space holds the operations on the address space that call up into the
// kernel through E: those that may run out of memory (a page fault, the
// boot's tables) and those that end in a TLB shootdown (mapping over a
// mapping, munmap, mprotect, madvise). It holds no state of its own: the
// areas, page tables and locks are the package's. Its zero value is ready;
// the kernel has one.
type Space[E Env] struct{ env E }

// Stats are the memory counters, for the boot report and the self-tests.
type Stats struct {
	FramesAll    int64 // frames the allocator owns
	FramesFree   int64 // of them, free
	PagesMapped  int64 // user pages backed by frames
	TableFrames  int64 // page tables made since boot and not freed (user and kernel half)
	BSSReclaimed int64 // BSS frames given back at boot (bss.go)
	BSSFaulted   int64 // of those, backed again since (touched)
	// Shootdowns counts TLB shootdowns, ShootdownIPIs the interrupts
	// they sent, ShootdownLazy the idle CPUs marked stale instead
	// (tlb_$GOARCH.go; on arm64 the last two are 0).
	Shootdowns, ShootdownIPIs, ShootdownLazy uint64
}

// ReadStats returns the current counters.
func ReadStats() Stats {
	return Stats{FramesAll: framesAll, FramesFree: framesFree, PagesMapped: pagesMapped, TableFrames: tableFrames, BSSReclaimed: bssReclaimed, BSSFaulted: atomic.LoadInt64(&bssFaulted),
		Shootdowns: atomic.LoadUint64(&shoot.count), ShootdownIPIs: atomic.LoadUint64(&shoot.ipis),
		ShootdownLazy: atomic.LoadUint64(&shoot.lazy)}
}

// at converts an address the kernel owns or has checked to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// bytesAt is the n bytes at address a.
func bytesAt(a uintptr, n int) []byte { return unsafe.Slice(at[byte](a), n) }
