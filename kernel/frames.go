package kernel

import (
	"yolk/boot"
	"yolk/sched"
)

// Physical memory: 4 KiB frames from the firmware's RAM regions above the
// image, and the image's BSS pages nobody touched at boot (bss.go), handed
// out by bumping through the regions first and then from a free list
// threaded through the free frames themselves, reached through the physical
// map (physmap.go).

const pageSize = 4096

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

// framesInit takes every RAM region of the memory map above the kernel
// image. Only RAM below 4 GiB is usable until highMemInit has extended the
// physical map; regions above are remembered for it.
func framesInit(in *boot.Info) {
	lo := (imageEnd() + pageSize - 1) &^ (pageSize - 1)
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
		// The boot module (initrd.go) stays out until it is unpacked.
		if m, me := in.Module&^(pageSize-1), in.Module+in.ModuleSize; in.ModuleSize != 0 && m < end && me > start {
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

// addRegion records [start, end); high regions wait for highMemInit.
func addRegion(start, end uintptr, high bool) {
	start = (start + pageSize - 1) &^ (pageSize - 1)
	end &^= pageSize - 1
	if start >= end || nregions == len(regions) {
		return
	}
	if high {
		// Not usable yet: park it with next == end until highMemInit.
		regions[nregions] = region{end, end}
		highStart[nregions] = start
	} else {
		regions[nregions] = region{start, end}
		framesAll += int64((end - start) / pageSize)
	}
	nregions++
}

// highStart holds the start of each region above 4 GiB until it is enabled.
var highStart [len(regions)]uintptr

// highMemInit maps RAM above 4 GiB into the physical map (2 MiB pages,
// directories from low memory) and hands it to the allocator.
func highMemInit() {
	for i := 0; i < nregions; i++ {
		start := highStart[i]
		if start == 0 {
			continue
		}
		end := regions[i].end
		for a := start &^ (1<<30 - 1); a < end; a += 1 << 30 {
			if !physMapGiB(a) {
				klog("boot: no memory to map RAM above 4 GiB\n")
				return
			}
		}
		frameLock.Lock()
		regions[i].next = start
		framesAll += int64((end - start) / pageSize)
		framesFree += int64((end - start) / pageSize)
		frameLock.Unlock()
		highStart[i] = 0
	}
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
