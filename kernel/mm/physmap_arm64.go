package mm

import (
	"yolk/arch/arm64"
	"yolk/boot"
)

// The physical map: physical memory again at physBase, in the upper half
// (TTBR1, which shares the root table with TTBR0), with 2 MiB blocks of
// normal memory, so the kernel reaches frames and page tables by physical
// address even where the identity map no longer shows them (BSS pages
// given back to the frame allocator). Its tables are its own: the
// identity map's are split and cleared under the BSS.

const physBase = 0xffffc00000000000 // L0 slot 384, as on amd64

// physOff is 0 until the map exists: boot code runs on the identity map.
var physOff uintptr

// Phys is the kernel address of physical address pa.
func Phys(pa uintptr) uintptr { return pa + physOff }

// PhysOff is what Phys adds to a physical address.
func PhysOff() uintptr { return physOff }

const blockNormal = pteValidBit | pteSH | pteAF // a 2 MiB block, AttrIndx 0

// piPeripherals is where the Raspberry Pi 3's peripherals start: from
// there to 4 GiB, devices, not memory.
const piPeripherals = 0x3F000000

// onPi reports whether the kernel runs on the Raspberry Pi 3.
func onPi() bool { return boot.Board == boot.BoardRPi3 }

// identityPDE is the address of the identity map's level-2 entry for va < 4 GiB.
func identityPDE(va uintptr) uintptr {
	l1 := pteFrame(*at[uint64](Phys(boot.PageTableRoot())))
	l2 := pteFrame(*at[uint64](Phys(l1) + (va>>30)*8))
	return Phys(l2) + (va>>21)&511*8
}

// PhysInit builds the physical map.
func (s Space[E]) PhysInit() {
	root := boot.PageTableRoot()
	l1 := AllocFrame()
	if l1 == 0 {
		s.env.OutOfMemory()
	}
	*at[uint64](root + (physBase>>39)&511*8) = pteTable(l1)
	// RAM below 4 GiB (virt: from 1 GiB; the Pi: from 0), while phys
	// is still the identity.
	pa := uintptr(1 << 30)
	if onPi() {
		pa = 0
	}
	for ; pa < 4<<30; pa += 1 << 30 {
		if !physMapGiB(pa) {
			s.env.OutOfMemory()
		}
	}
	physOff = physBase
}

// physMapGiB maps the GiB of physical memory at pa into the physical map
// with 2 MiB blocks, if it is not mapped yet.
func physMapGiB(pa uintptr) bool {
	root := boot.PageTableRoot()
	l1 := pteFrame(*at[uint64](Phys(root) + (physBase>>39)&511*8))
	e := at[uint64](Phys(l1) + (pa>>30)&511*8)
	if pteValid(*e) {
		return true
	}
	l2 := AllocFrame()
	if l2 == 0 {
		return false
	}
	for i := uintptr(0); i < 512; i++ {
		if b := pa + i<<21; !onPi() || b < piPeripherals {
			*at[uint64](Phys(l2) + i*8) = uint64(b) | blockNormal
		}
	}
	arm64.TableSync()
	*e = pteTable(l2)
	arm64.TableSync()
	return true
}
