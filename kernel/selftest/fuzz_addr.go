package main

// The fuzzer's address classes beyond its own scratch area: memory that
// is in the identity map or the image yet never the program's to hand
// the kernel for writing, and the end-of-run checks that nothing the
// calls could reach changed.

import (
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"

	"yolk/kernel/abi"
)

// fuzzAddrs are the addresses the fuzzer aims at outside its scratch.
type fuzzAddrs struct {
	text        uintptr   // a window of the image's text (writes: EFAULT)
	alias       uintptr   // the frame pool's identity alias of aliased, a page with a canary
	aliased     uintptr   //
	aliasMap    uintptr   // the mapping aliased is in
	pool        uintptr   // the frame pool's first identity address (the image's end)
	pageTables  uintptr   // the boot page tables (in the image's BSS)
	mmio        []uintptr // device registers
	hole, holeN uintptr   // the hole above RAM
}

// fuzzTextWindow is how much of the text the fuzzer aims at and hashes.
const fuzzTextWindow = 64 << 10

func newFuzzAddrs(t *T) fuzzAddrs {
	var a fuzzAddrs
	a.text = reflect.ValueOf(syscallFuzz).Pointer() &^ (pageSize - 1)
	// A page of the program's whose frame's identity address is outside
	// the image (below its end the address is the image's BSS, not an
	// alias): its canary changes if a call writes through the alias.
	st := stats(t)
	m, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, fuzzAliasPages*pageSize, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
	if e != 0 {
		t.Fatalf("mmap: %v", e)
	}
	for p := m; p < m+fuzzAliasPages*pageSize && a.alias == 0; p += pageSize {
		fillCanary(bytesAt(p, pageSize))
		if f, _, _ := syscall.Syscall(abi.SysFrameOf, p, 0, 0); f >= uintptr(st.ImageEnd) && f < 1<<32 {
			a.alias, a.aliased = f, p
		}
	}
	a.aliasMap = m
	a.pageTables = uintptr(stats(t).PageTables)
	if runtime.GOARCH == "amd64" {
		a.mmio = []uintptr{0xFEE00000, 0xFEC00000, 0xFEB02E00} // local APIC, I/O APIC, virtio-mmio
		a.hole, a.holeN = 0xD0000000, 0x2E000000
	} else {
		a.mmio = []uintptr{0x08000000, 0x08010000, 0x09000000, 0x0A000000} // GIC distributor, CPU interface, PL011, virtio-mmio
		a.hole, a.holeN = 0xC0000000, 0x3FFFF000
	}
	a.pool = uintptr(st.ImageEnd)
	if a.pageTables == 0 || a.pool == 0 {
		t.Fatalf("fuzz addresses: page tables %#x, image end %#x", a.pageTables, a.pool)
	}
	return a
}

// pointer is one of the classes, at random.
func (a *fuzzAddrs) pointer(rng *rand.Rand) uintptr {
	switch rng.IntN(5) {
	case 0:
		return a.text + uintptr(rng.IntN(fuzzTextWindow))
	case 1:
		if a.alias != 0 && rng.IntN(2) == 0 {
			return a.alias + uintptr(rng.IntN(pageSize))
		}
		return a.pool + uintptr(rng.IntN(64<<20))
	case 2:
		return a.pageTables + uintptr(rng.IntN(8*pageSize))
	case 3:
		return a.mmio[rng.IntN(len(a.mmio))] + uintptr(rng.IntN(pageSize))
	}
	return a.hole + uintptr(rng.Uint64N(uint64(a.holeN)))
}

// fuzzLength is a huge length, or one that wraps with p.
func fuzzLength(rng *rand.Rand, p uintptr) uintptr {
	switch rng.IntN(6) {
	case 0:
		return 1 << 47
	case 1:
		return 1<<63 - 1
	case 2:
		return ^uintptr(0) - uintptr(rng.IntN(4096)) // -1 .. -4096
	case 3:
		return 1<<31 + uintptr(rng.IntN(2))*(1<<31) // past int32, past uint32
	}
	return -p + uintptr(rng.IntN(8192)) // p+n wraps to a small address
}

// fuzzAliasPages is how many pages newFuzzAddrs looks at for one whose
// frame is above the image.
const fuzzAliasPages = 256

// fillCanary fills b with the canary pattern.
func fillCanary(b []byte) {
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
}

// aliasIntact reports whether the aliased page still holds its canary
// (true if the fuzzer found none: the frames it was given were all
// below the image's end).
func (a *fuzzAddrs) aliasIntact() bool {
	if a.alias == 0 {
		return true
	}
	want := make([]byte, pageSize)
	fillCanary(want)
	return string(bytesAt(a.aliased, pageSize)) == string(want)
}

// release unmaps the alias's pages.
func (a *fuzzAddrs) release() {
	syscall.Syscall(syscall.SYS_MUNMAP, a.aliasMap, fuzzAliasPages*pageSize, 0)
}

// textHash is a hash of the fuzzer's text window.
func (a *fuzzAddrs) textHash() uint64 {
	h := fnv.New64a()
	h.Write(unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a.text))), fuzzTextWindow))
	return h.Sum64()
}

// check fails t unless the kernel refuses to write at each class (a read
// from /dev/zero: EFAULT, as Linux for memory that is not the program's
// or is read-only). The fuzzer's random calls aim there too; this makes
// sure the refusal, not luck, is what kept the memory intact.
func (a *fuzzAddrs) check(t *T) {
	zero, err := syscall.Open("/dev/zero", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/zero: %v", err)
	}
	defer syscall.Close(zero)
	ps := append([]uintptr{a.text, a.pool, a.pool + 1<<20, a.pageTables, a.pageTables + 4*pageSize, a.hole}, a.mmio...)
	if a.alias != 0 {
		ps = append(ps, a.alias)
	}
	for _, p := range ps {
		if _, _, e := syscall.Syscall(syscall.SYS_READ, uintptr(zero), p, 8); e != syscall.EFAULT {
			t.Errorf("read(/dev/zero) into %#x = %v; want EFAULT", p, e)
		}
	}
}

// fuzzState is what fuzzInvariants compares: the kernel's counters, the
// runtime's threads and the memory it holds from the kernel.
type fuzzState struct {
	abi.Stats
	threads int   // the runtime's live Ms
	held    int64 // pages the runtime has mapped and not released
}

// fuzzSnapshot takes a fuzzState after a collection that gives the
// heap's free pages back (FreeOSMemory: MADV_DONTNEED).
func fuzzSnapshot(t *T) fuzzState {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n, _ := runtime.ThreadCreateProfile(nil)
	return fuzzState{stats(t), n, int64(ms.Sys-ms.HeapReleased) / pageSize}
}

// fuzzInvariants compares the kernel's counters after the fuzzer with
// before: every task the kernel counts is a thread the runtime knows or
// was there before (none lost, none left over: tasks minus threads is
// unchanged, as no thread of the program ended meanwhile), the
// scheduler's queue nodes within their bound, and every frame that did
// not come back accounted for. A frame is out either as a page of the
// program — and the program's pages grow no more than what the runtime
// holds — or as a page table, a socket's ring page, or the kernel's own
// (a task's kernel stack, a pipe's buffer, a file's data): those must
// stay within a few pages per new task.
func fuzzInvariants(t *T, before, after fuzzState) {
	if d0, d1 := before.Tasks-int64(before.threads), after.Tasks-int64(after.threads); d0 != d1 {
		t.Errorf("tasks %d and threads %d before, %d and %d after", before.Tasks, before.threads, after.Tasks, after.threads)
	}
	if after.NodesInUse > after.NodeBound || after.NodesPeak > after.PeakBound {
		t.Errorf("queue nodes: %d in use (bound %d), peak %d (bound %d)", after.NodesInUse, after.NodeBound, after.NodesPeak, after.PeakBound)
	}
	if after.FramesAll != before.FramesAll {
		t.Errorf("frames: %d in all before, %d after", before.FramesAll, after.FramesAll)
	}
	newTasks := max(after.Tasks-before.Tasks, 0)
	lost := before.FramesFree - after.FramesFree
	pages, tables := after.PagesMapped-before.PagesMapped, after.TableFrames-before.TableFrames
	rings, files := after.SocketPages-before.SocketPages, after.FilePages-before.FilePages+after.PipePages-before.PipePages
	// The program's pages: what the runtime holds more (its heap, the
	// new threads' stacks), and the fuzzer's scratch pages it may have
	// touched since, with room for what the runtime keeps outside its
	// counts.
	if held := after.held - before.held; pages > held+256 {
		t.Errorf("the program's pages: %d more, while the runtime holds %d more (%d before, %d after)", pages, held, before.PagesMapped, after.PagesMapped)
	}
	// The kernel's own: a new task's kernel stack (8 pages) and the
	// page table it may need, a few pipes' and files' pages left open.
	bss := after.BSSFaulted - before.BSSFaulted
	kernel := lost - pages - tables - rings - files - bss
	slack := 64 + 16*newTasks
	if kernel > slack || tables > 64+2*newTasks {
		t.Errorf("free frames: %d before, %d after, %d gone: %d the program's pages, %d page tables, %d sockets' rings, %d files' and pipes', %d BSS, %d the kernel's (%d allowed for %d new tasks)",
			before.FramesFree, after.FramesFree, lost, pages, tables, rings, files, bss, kernel, slack, newTasks)
	}
	t.Logf("frames: %d gone: %d the program's pages (the runtime holds %d more), %d page tables, %d sockets' rings, %d files' and pipes', %d BSS, %d the kernel's (%d new tasks)",
		lost, pages, after.held-before.held, tables, rings, files, bss, kernel, newTasks)
}
