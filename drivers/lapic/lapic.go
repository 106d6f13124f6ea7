// Package lapic drives the local APIC in xAPIC (MMIO) mode: enable and end
// of interrupt through TamaGo's amd64/lapic, plus the one-shot timer, whose
// registers that driver does not cover.
//
// Kernel-context: no allocation, no runtime calls. The register page must be
// mapped uncached (the boot page tables map the top GiB so).
package lapic

import (
	"sync/atomic"
	"unsafe"

	"github.com/usbarmory/tamago/amd64/lapic"

	"yolk/drivers/x86"
)

// Timer register offsets (Intel SDM Vol. 3A, 11.5.4).
const (
	regSVR     = 0x0F0
	regLVTTmr  = 0x320
	regTmrInit = 0x380
	regTmrCur  = 0x390
	regTmrDiv  = 0x3E0

	lvtMasked = 1 << 16
)

var apic lapic.LAPIC

func reg(off uintptr) *uint32 {
	a := uintptr(apic.Base) + off
	return (*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&a)))
}

func read(off uintptr) uint32     { return atomic.LoadUint32(reg(off)) }
func write(off uintptr, v uint32) { atomic.StoreUint32(reg(off), v) }

// Init enables this CPU's local APIC with the given spurious vector and
// masks its timer.
func Init(spurious uint8) {
	msr := x86.Rdmsr(x86.MSR_APIC_BASE)
	x86.Wrmsr(x86.MSR_APIC_BASE, msr|1<<11) // global enable
	apic.Base = uint32(msr & 0xfffff000)    // xAPIC: below 4 GiB
	write(regSVR, uint32(spurious))
	apic.Enable()
	write(regLVTTmr, lvtMasked)
	write(regTmrDiv, 0xB) // divide by 1
}

// EOI signals the end of the current interrupt.
func EOI() { apic.ClearInterrupt() }

// OneShot starts the timer: vector fires after count ticks.
func OneShot(vector uint8, count uint32) {
	write(regLVTTmr, uint32(vector))
	write(regTmrInit, count)
}

// Count starts the timer counting down from count with its interrupt
// masked (for calibration).
func Count(count uint32) {
	write(regLVTTmr, lvtMasked)
	write(regTmrInit, count)
}

// Stop cancels the timer.
func Stop() {
	write(regTmrInit, 0)
	write(regLVTTmr, lvtMasked)
}

// Current reads the timer's current count.
func Current() uint32 { return read(regTmrCur) }
