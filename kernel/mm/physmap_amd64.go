package mm

import (
	"yolk/arch/amd64"
	"yolk/boot"
)

// The physical map: the first 4 GiB of physical memory again at physBase,
// so the kernel reaches frames and page tables by physical address even
// where the identity map no longer shows them (BSS pages given back to the
// frame allocator, the unmapped first 2 MiB). It shares the identity map's
// page directories except the first, which it copies before the kernel
// splits or unmaps anything there.

const physBase = 0xffffc00000000000 // PML4 slot 384

// physOff is 0 until the map exists: boot code runs on the identity map.
var physOff uintptr

// Phys is the kernel address of physical address pa.
func Phys(pa uintptr) uintptr { return pa + physOff }

// PhysOff is what Phys adds to a physical address.
func PhysOff() uintptr { return physOff }

// identityPDE is the address of the identity map's 2 MiB entry for va < 4 GiB.
func identityPDE(va uintptr) uintptr {
	pdpt := uintptr(*at[uint64](Phys(boot.PageTableRoot())) & pteAddr)
	pd := uintptr(*at[uint64](Phys(pdpt) + (va>>30)*8) & pteAddr)
	return Phys(pd) + (va>>21)&511*8
}

// PhysInit builds the physical map.
func (s Space[E]) PhysInit() {
	root := boot.PageTableRoot()
	idPDPT := uintptr(*at[uint64](root) & pteAddr)
	pdpt, pd0 := AllocFrame(), AllocFrame()
	if pdpt == 0 || pd0 == 0 {
		s.env.OutOfMemory()
	}
	copy(bytesAt(pd0, PageSize), bytesAt(uintptr(*at[uint64](idPDPT)&pteAddr), PageSize))
	*at[uint64](pdpt) = uint64(pd0) | ptePresent | pteWrite
	for i := uintptr(1); i < 4; i++ {
		*at[uint64](pdpt + i*8) = *at[uint64](idPDPT + i*8)
	}
	*at[uint64](root + (physBase>>39)&511*8) = uint64(pdpt) | ptePresent | pteWrite
	amd64.SetCR3(amd64.CR3())
	physOff = physBase
}

// physMapGiB maps the GiB of physical memory at pa (>= 4 GiB) into the
// physical map with 2 MiB pages, if it is not mapped yet.
func physMapGiB(pa uintptr) bool {
	root := boot.PageTableRoot()
	pdpt := uintptr(*at[uint64](Phys(root) + (physBase>>39)&511*8) & pteAddr)
	e := at[uint64](Phys(pdpt) + (pa>>30)&511*8)
	if *e&ptePresent != 0 {
		return true
	}
	pd := AllocFrame()
	if pd == 0 {
		return false
	}
	for i := uintptr(0); i < 512; i++ {
		*at[uint64](Phys(pd) + i*8) = uint64(pa+i<<21) | ptePresent | pteWrite | ptePS
	}
	*e = uint64(pd) | ptePresent | pteWrite
	return true
}
