package mm

import (
	"sync/atomic"

	"yolk/boot"
	"yolk/sched"
)

// Physical memory: 4 KiB frames from the firmware's RAM regions above the
// image, and the image's BSS pages nobody touched at boot (bss.go), handed
// out by bumping through the regions first and then from a free list
// threaded through the free frames themselves, reached through the physical
// map (physmap_$GOARCH.go).

// PageSize is the size of a frame and of a page.
const PageSize = 4096

type region struct{ next, end uintptr }

var (
	frameLock  sched.TWALock
	regions    [32]region
	nregions   int
	freeList   uintptr
	framesFree int64
	framesAll  int64
)

// physMax bounds the RAM the kernel uses: one PDPT of the physical map.
const physMax = 512 << 30

// FramesInit takes every RAM region of the memory map above the kernel
// image, which ends at imageEnd. Only RAM below 4 GiB is usable until
// HighMemInit has extended the physical map; regions above are remembered
// for it.
func FramesInit(in *boot.Info, imageEnd uintptr) {
	lo := (imageEnd + PageSize - 1) &^ (PageSize - 1)
	for i := 0; i < in.MemEntries; i++ {
		r := in.Region(i)
		if r.Type != boot.MemRAM {
			continue
		}
		start, end := uintptr(r.Addr), uintptr(r.Addr+r.Size)
		if start < lo {
			start = lo
		}
		if end > physMax {
			end = physMax
		}
		// The boot module (kernel/initrd.go) stays out until it is
		// unpacked (FreeModule).
		if m, me := in.Module&^(PageSize-1), in.Module+in.ModuleSize; in.ModuleSize != 0 && m < end && me > start {
			// Its frames are given back after unpacking only if all
			// of them are RAM the allocator would otherwise own.
			moduleReserved = m >= start && me <= end
			addRAM(start, m)
			start = me
		}
		addRAM(start, end)
	}
	framesFree = framesAll
}

// moduleReserved says the boot module's frames were kept out of the
// allocator, to be freed once it is unpacked.
var moduleReserved bool

// FreeModule gives the frames of the boot module, n bytes at physical
// address pa, to the allocator once the kernel has unpacked it, if
// FramesInit kept them out of it.
func FreeModule(pa, n uintptr) {
	if moduleReserved {
		for p := pa &^ (PageSize - 1); p < pa+n; p += PageSize {
			FreeFrame(p)
			framesAll++
		}
	}
}

// addRAM records [start, end), split at 4 GiB.
func addRAM(start, end uintptr) {
	if start >= end {
		return
	}
	if start < 1<<32 && end > 1<<32 {
		addRegion(start, 1<<32, false)
		start = 1 << 32
	}
	addRegion(start, end, start >= 1<<32)
}

// addRegion records [start, end); high regions wait for HighMemInit.
func addRegion(start, end uintptr, high bool) {
	start = (start + PageSize - 1) &^ (PageSize - 1)
	end &^= PageSize - 1
	if start >= end || nregions == len(regions) {
		return
	}
	if high {
		// Not usable yet: park it with next == end until HighMemInit.
		regions[nregions] = region{end, end}
		highStart[nregions] = start
	} else {
		regions[nregions] = region{start, end}
		framesAll += int64((end - start) / PageSize)
	}
	nregions++
}

// highStart holds the start of each region above 4 GiB until it is enabled.
var highStart [len(regions)]uintptr

// HighMemInit maps RAM above 4 GiB into the physical map (2 MiB pages,
// directories from low memory) and hands it to the allocator. It reports
// false if it ran out of memory for the directories: the RAM not mapped
// then stays unused.
func HighMemInit() bool {
	for i := 0; i < nregions; i++ {
		start := highStart[i]
		if start == 0 {
			continue
		}
		end := regions[i].end
		for a := start &^ (1<<30 - 1); a < end; a += 1 << 30 {
			if !physMapGiB(a) {
				return false
			}
		}
		frameLock.Lock()
		regions[i].next = start
		framesAll += int64((end - start) / PageSize)
		framesFree += int64((end - start) / PageSize)
		frameLock.Unlock()
		highStart[i] = 0
	}
	return true
}

// failAt runs frames out on demand, for the self-test of the code that
// handles it (KStackTest): while cpu is a CPU's index (-1: none), that
// CPU's AllocFrame calls fail once left more have succeeded, and taken
// and freed count the frames it took and gave back. That CPU runs kernel
// code with interrupts off meanwhile; the others are not affected. Data,
// not BSS (cpu starts at -1): every AllocFrame reads it, the page fault
// that backs a BSS page too.
var failAt = struct{ cpu, left, taken, freed int32 }{cpu: -1}

// failing reports whether this CPU's frames run out on demand (failAt).
func failing() bool {
	c := atomic.LoadInt32(&failAt.cpu)
	return c >= 0 && c == int32(sched.This().ID)
}

// AllocFrame returns a zeroed frame, or 0 when memory is exhausted.
func AllocFrame() uintptr {
	f := allocFrame()
	if f != 0 {
		clear(bytesAt(Phys(f), PageSize))
	}
	return f
}

// AllocFrameDirty is AllocFrame without the zeroing, for a page its
// user writes before it reads any byte of it (a socket's ring: bytes
// are read only where they were written). Under QEMU's TCG zeroing a
// page costs more than a small socket write's whole path through the
// ring.
func AllocFrameDirty() uintptr { return allocFrame() }

func allocFrame() uintptr {
	fail := failing()
	if fail && failAt.left == 0 {
		return 0
	}
	frameLock.Lock()
	f := freeList
	if f != 0 {
		freeList = *at[uintptr](Phys(f))
	} else {
		for i := 0; i < nregions; i++ {
			if r := &regions[i]; r.next < r.end {
				f = r.next
				r.next += PageSize
				break
			}
		}
	}
	if f != 0 {
		framesFree--
	}
	frameLock.Unlock()
	if fail && f != 0 {
		failAt.left--
		failAt.taken++
	}
	return f
}

// FreeFrame returns frame f.
func FreeFrame(f uintptr) {
	if failing() {
		failAt.freed++
	}
	frameLock.Lock()
	*at[uintptr](Phys(f)) = freeList
	freeList = f
	framesFree++
	frameLock.Unlock()
}
