package kernel

import "sync/atomic"

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
// (bssKeep) before bssReclaim.

var (
	bssLazyLo, bssLazyHi uintptr // pages subject to demand paging
	bssReclaimed         int64   // frames given back at boot
)

func bssStart() uintptr

// bssSplit remaps the whole pages of [bss, end) with 4 KiB pages, their
// accessed bits clear.
func bssSplit() {
	lo := (bssStart() + pageSize - 1) &^ (pageSize - 1)
	hi := imageEnd() &^ (pageSize - 1)
	for va := lo &^ (1<<21 - 1); va < hi; va += 1 << 21 {
		pde := at[uint64](identityPDE(va))
		if !pteBlock(*pde) {
			continue
		}
		pt := allocFrame()
		if pt == 0 {
			outOfMemory()
		}
		base := pteFrame(*pde) &^ (1<<21 - 1)
		for i := uintptr(0); i < 512; i++ {
			pa, e := base+i*pageSize, ptePage(base+i*pageSize, true)
			if pa >= lo && pa < hi {
				e = pteUntouched(pa)
			}
			*at[uint64](phys(pt) + i*8) = e
		}
		*pde = pteTable(pt)
	}
	flushTLBAll()
	bssLazyLo, bssLazyHi = lo, hi
}

// bssReclaim frees the BSS pages that nobody touched since bssSplit and
// that hold only zeroes (a page written before the split keeps its data;
// a zero page comes back as a zero page, so giving it back changes nothing
// a program can see).
func bssReclaim() {
	for va := bssLazyLo; va < bssLazyHi; va += pageSize {
		pte := walk(va, false)
		if pte == 0 {
			klog("bss: no page-table entry for ")
			kprintHex(uint64(va), 1)
			kprint("\n")
			return
		}
		e := at[uint64](pte)
		if !pteAccessed(*e) && zeroPage(phys(va)) {
			*e = 0
			freeFrame(va) // identity: the frame's address is va
			bssReclaimed++
			framesAll++
		}
	}
	flushTLBAll()
}

// bssFault backs a reclaimed BSS page with a zeroed frame. It takes no lock
// but the frame allocator's, so kernel code may touch fresh BSS while
// holding any other lock.
func bssFault(page uintptr) bool {
	if frameLock.HeldHere() {
		return false // a fault inside the allocator: report it, do not wait for its lock
	}
	pte := walk(page, false)
	if pte == 0 {
		return false
	}
	f := allocFrame()
	if f == 0 {
		outOfMemory()
	}
	if !atomic.CompareAndSwapUint64(at[uint64](pte), 0, ptePage(f, true)) {
		freeFrame(f) // another CPU backed it first
	}
	return true
}

// bssKeep reads one byte in every page of [a, a+n), so that bssReclaim
// keeps them (it gives back only pages not accessed since bssSplit).
func bssKeep(a, n uintptr) {
	for p := a &^ (pageSize - 1); p < a+n; p += pageSize {
		atomic.LoadUint32(at[uint32](p))
	}
}

// zeroPage reports whether the page at a holds only zeroes. It ORs eight
// words per branch: under emulation (TCG) the cost is per guest
// instruction, and bssReclaim scans every untouched BSS page (41 MiB in
// the self-test image, whose crypto DRBG alone reserves 32 MiB).
func zeroPage(a uintptr) bool {
	p := at[[pageSize / 64][8]uint64](a)
	for i := range p {
		b := &p[i]
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
	}
	return true
}
