package kernel

import (
	"yolk/boot"
)

// Physical memory: 4 KiB frames from the firmware's RAM regions above the
// image, and the image's BSS pages nobody touched at boot (bss.go), handed
// out by bumping through the regions first and then from a free list
// threaded through the free frames themselves, reached through the physical
// map (physmap.go).

const pageSize = 4096

type region struct{ next, end uintptr }

var (
	frameLock  spinlock
	regions    [32]region
	nregions   int
	freeList   uintptr
	framesFree int64
	framesAll  int64
)

// framesInit takes every RAM region of the memory map above the kernel image
// (and below 4 GiB: the identity map covers only that much).
func framesInit(in *boot.Info) {
	lo := (imageEnd() + pageSize - 1) &^ (pageSize - 1)
	for i := 0; i < in.MemEntries && nregions < len(regions); i++ {
		r := in.Region(i)
		if r.Type != boot.MemRAM {
			continue
		}
		start, end := uintptr(r.Addr), uintptr(r.Addr+r.Size)
		if end > 1<<32 {
			end = 1 << 32
		}
		if start < lo {
			start = lo
		}
		start = (start + pageSize - 1) &^ (pageSize - 1)
		end &^= pageSize - 1
		if start >= end {
			continue
		}
		regions[nregions] = region{start, end}
		nregions++
		framesAll += int64((end - start) / pageSize)
	}
	framesFree = framesAll
}

// allocFrame returns a zeroed frame, or 0 when memory is exhausted.
func allocFrame() uintptr {
	frameLock.Lock()
	f := freeList
	if f != 0 {
		freeList = *at[uintptr](phys(f))
	} else {
		for i := 0; i < nregions; i++ {
			if r := &regions[i]; r.next < r.end {
				f = r.next
				r.next += pageSize
				break
			}
		}
	}
	if f != 0 {
		framesFree--
	}
	frameLock.Unlock()
	if f != 0 {
		clear(bytesAt(phys(f), pageSize))
	}
	return f
}

// freeFrame returns frame f.
func freeFrame(f uintptr) {
	frameLock.Lock()
	*at[uintptr](phys(f)) = freeList
	freeList = f
	framesFree++
	frameLock.Unlock()
}
