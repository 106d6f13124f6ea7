package mm

import (
	"sync/atomic"
	"unsafe"

	"yolk/boot"
)

// Demand-paged BSS. QEMU loads the image with its BSS zeroed in RAM, and the
// boot page tables map it with 2 MiB pages, so every BSS byte costs RAM even
// if nothing ever touches it (Go 1.26's crypto DRBG alone reserves 32 MiB).
// At boot the BSS is remapped with 4 KiB pages; just before the runtime
// starts, every page not marked accessed (by the CPU on amd64, by the
// access-flag fault on arm64: vm_$GOARCH.go) goes back to the frame
// allocator and is backed again, with a fresh zeroed frame, when first
// touched — as Linux does for a program's BSS.
//
// Rule for kernel code: a BSS page the boot did not touch may fault later,
// in kernel context. That is fine anywhere except where a fault cannot be
// taken: the code before a CPU has its IDT, and whatever the page-fault
// path itself touches — the per-CPU blocks (trap entry, the spin locks'
// per-CPU count) and the frame allocator's state — since a fault there
// would nest inside the frame allocator's lock. The boot touches those
// (BSSKeep; twa.Prefault and sched.Prefault, the spin lock's wait) before
// BSSReclaim, which keeps this package's per-CPU TLB state itself
// (tlbKeep: the idle loop and the shootdown use it with interrupts off)
// and the allocator's and the BSS fault's own (faultKeep).
// kernel/bssfault_test.go walks the fault path in the linked image and
// fails for a BSS variable it touches that no keep covers.

var (
	bssLazyLo, bssLazyHi uintptr // pages subject to demand paging
	bssReclaimed         int64   // frames given back at boot
)

// BSSSplit remaps the whole pages of [bssStart, imageEnd), the image's
// BSS, with 4 KiB pages, their accessed bits clear.
func (s Space[E]) BSSSplit(bssStart, imageEnd uintptr) {
	lo := (bssStart + PageSize - 1) &^ (PageSize - 1)
	hi := imageEnd &^ (PageSize - 1)
	s.splitIdentity(lo, hi)
	for va := lo; va < hi; va += PageSize {
		if pte := walk(va, false); pte != 0 {
			*at[uint64](pte) = pteUntouched(va)
		}
	}
	flushAll()
	bssLazyLo, bssLazyHi = lo, hi
}

// BSSReclaim frees the BSS pages that nobody touched since BSSSplit and
// that hold only zeroes (a page written before the split keeps its data;
// a zero page comes back as a zero page, so giving it back changes nothing
// a program can see). It returns 0, or the address of a page it found no
// page-table entry for, where it stopped (for the kernel to report).
func BSSReclaim() uintptr {
	tlbKeep()
	faultKeep()
	for va := bssLazyLo; va < bssLazyHi; va += PageSize {
		pte := walk(va, false)
		if pte == 0 {
			return va
		}
		e := at[uint64](pte)
		if !pteAccessed(*e) && zeroPage(Phys(va)) {
			*e = 0
			FreeFrame(va) // identity: the frame's address is va
			bssReclaimed++
			framesAll++
		}
	}
	flushAll()
	return 0
}

// bssFault backs a reclaimed BSS page with a zeroed frame. It takes no lock
// but the frame allocator's, so kernel code may touch fresh BSS while
// holding any other lock.
func (s Space[E]) bssFault(page uintptr) bool {
	if frameLock.HeldHere() {
		return false // a fault inside the allocator: report it, do not wait for its lock
	}
	pte := walk(page, false)
	if pte == 0 {
		return false
	}
	f := AllocFrame()
	if f == 0 {
		// The program's BSS, or the kernel's touched on its behalf
		// (BSSReclaim runs just before the program starts).
		s.env.OOMKill()
	}
	if !atomic.CompareAndSwapUint64(at[uint64](pte), 0, ptePage(f, protIdentity)) {
		FreeFrame(f) // another CPU backed it first
	} else {
		atomic.AddInt64(&bssFaulted, 1)
	}
	return true
}

// faultKeep keeps what the BSS fault itself reads or writes out of the
// demand-paged BSS: the frame allocator's state (its lock, regions and
// free list), the page-table walk's (the physical map's offset, the boot's
// tables, the table count), the lazy range and the fault count. The boot
// uses most of these after BSSSplit anyway, so BSSReclaim would keep them;
// bssFaulted it never touched (the first BSS fault wrote it, and faulted
// there once more). kernel/bssfault_test.go lists these and fails for a
// variable the fault path touches that no keep covers, and finds what
// this keeps in its body (so it is not inlined).
//
//go:noinline
func faultKeep() {
	BSSKeep(uintptr(unsafe.Pointer(&frameLock)), unsafe.Sizeof(frameLock))
	BSSKeep(uintptr(unsafe.Pointer(&regions)), unsafe.Sizeof(regions))
	BSSKeep(uintptr(unsafe.Pointer(&nregions)), unsafe.Sizeof(nregions))
	BSSKeep(uintptr(unsafe.Pointer(&freeList)), unsafe.Sizeof(freeList))
	BSSKeep(uintptr(unsafe.Pointer(&framesFree)), unsafe.Sizeof(framesFree))
	BSSKeep(uintptr(unsafe.Pointer(&physOff)), unsafe.Sizeof(physOff))
	BSSKeep(uintptr(unsafe.Pointer(&boot.PageTables)), unsafe.Sizeof(boot.PageTables))
	BSSKeep(uintptr(unsafe.Pointer(&tableFrames)), unsafe.Sizeof(tableFrames))
	BSSKeep(uintptr(unsafe.Pointer(&bssLazyLo)), unsafe.Sizeof(bssLazyLo))
	BSSKeep(uintptr(unsafe.Pointer(&bssLazyHi)), unsafe.Sizeof(bssLazyHi))
	BSSKeep(uintptr(unsafe.Pointer(&bssFaulted)), unsafe.Sizeof(bssFaulted))
}

// BSSKeep reads one byte in every page of [a, a+n), so that BSSReclaim
// keeps them (it gives back only pages not accessed since BSSSplit).
func BSSKeep(a, n uintptr) {
	for p := a &^ (PageSize - 1); p < a+n; p += PageSize {
		atomic.LoadUint32(at[uint32](p))
	}
}

// zeroPage reports whether the page at a holds only zeroes. It ORs eight
// words per branch: under emulation (TCG) the cost is per guest
// instruction, and BSSReclaim scans every untouched BSS page (41 MiB in
// the self-test image, whose crypto DRBG alone reserves 32 MiB).
func zeroPage(a uintptr) bool {
	p := at[[PageSize / 64][8]uint64](a)
	for i := range p {
		b := &p[i]
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
	}
	return true
}

// protIdentity is the identity map's protection, which its 2 MiB pages
// have, and so the 4 KiB pages that replace them (the text among them).
const protIdentity = ProtRead | ProtWrite | ProtExec

// splitIdentity remaps the 2 MiB pages of the identity map that hold
// [lo, hi) with 4 KiB pages, writable and executable, as they were.
func (s Space[E]) splitIdentity(lo, hi uintptr) {
	for va := lo &^ (1<<21 - 1); va < hi; va += 1 << 21 {
		pde := at[uint64](identityPDE(va))
		if !pteBlock(*pde) {
			continue
		}
		pt := AllocFrame()
		if pt == 0 {
			s.env.OutOfMemory()
		}
		base := pteFrame(*pde) &^ (1<<21 - 1)
		for i := uintptr(0); i < 512; i++ {
			*at[uint64](Phys(pt) + i*8) = ptePage(base+i*PageSize, protIdentity)
		}
		*pde = pteTable(pt)
	}
}

// The image, as the user-memory rule sees it: [imageLo, imageHi), of
// which [imageLo, imageRO) is text and read-only data (ProtectImage).
var imageLo, imageRO, imageHi uintptr

// ProtectImage maps [lo, ro) — the image's text and read-only data —
// read-only, as Linux maps a program's, so that a write there faults (in
// the program: SIGSEGV; the kernel refuses it with EFAULT), and records
// [lo, hi) as the only low memory system calls may name. At boot, before
// the other CPUs start (they begin with a fresh TLB).
func (s Space[E]) ProtectImage(lo, ro, hi uintptr) {
	ro = max(ro, lo) // 0: nothing read-only
	s.splitIdentity(lo, ro)
	for va := lo; va < ro; va += PageSize {
		if pte := walk(va, false); pte != 0 && pteValid(*at[uint64](pte)) {
			*at[uint64](pte) = pteReadOnly(*at[uint64](pte))
		}
	}
	pteWritten()
	flushAll()
	imageLo, imageRO, imageHi = lo, ro, hi
}
