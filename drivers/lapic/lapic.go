//go:build amd64

// Package lapic drives the local APIC in xAPIC (MMIO) mode: enable and end
// of interrupt through TamaGo's amd64/lapic, plus the APIC ID,
// inter-processor interrupts and the one-shot timer, which that driver
// does not cover (its ID reads only 4 bits; its IPI writes the ICR with a
// locked read-modify-write, which QEMU's TCG runs with every other vCPU
// stopped). Registers are written with plain stores (mmio.Write32).
//
// Kernel-context: no allocation, no runtime calls. The register page must be
// mapped uncached (the boot page tables map the top GiB so). Every function
// acts on the calling CPU's local APIC; call them with interrupts off (an
// IPI is two register writes that an interrupt handler must not split).
package lapic

import (
	"sync/atomic"
	"unsafe"

	"github.com/usbarmory/tamago/amd64/lapic"

	"yolk/arch/amd64"
	"yolk/drivers/clock"
	"yolk/drivers/mmio"
)

// Register offsets and ICR fields (Intel SDM Vol. 3A, 11.4–11.6).
const (
	regID      = 0x020
	regSVR     = 0x0F0
	regICRLo   = 0x300
	regICRHi   = 0x310
	regLVTTmr  = 0x320
	regTmrInit = 0x380
	regTmrCur  = 0x390
	regTmrDiv  = 0x3E0

	lvtMasked = 1 << 16

	icrPending = 1 << 12 // delivery status: send pending

	// assert is the ICR's level bit (bit 14, which TamaGo calls
	// ICR_INIT); every IPI is sent with it set.
	assert = 1 << 14
)

var apic lapic.LAPIC

func reg(off uintptr) *uint32 {
	a := uintptr(apic.Base) + off
	return (*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&a)))
}

func read(off uintptr) uint32     { return atomic.LoadUint32(reg(off)) }
func write(off uintptr, v uint32) { mmio.Write32(uintptr(apic.Base)+off, v) }

// Setup finds the local APIC's register page (the same address on every
// CPU) and globally enables the APIC of the calling CPU. Call it once, on
// the boot CPU, before Init.
func Setup() {
	msr := amd64.Rdmsr(amd64.MSR_APIC_BASE)
	apic.Base = uint32(msr & 0xfffff000) // xAPIC: below 4 GiB
}

// Init enables the calling CPU's local APIC with the given spurious vector
// and masks its timer.
func Init(spurious uint8) {
	amd64.Wrmsr(amd64.MSR_APIC_BASE, amd64.Rdmsr(amd64.MSR_APIC_BASE)|1<<11) // global enable
	write(regSVR, uint32(spurious))
	apic.Enable()
	write(regLVTTmr, lvtMasked)
	write(regTmrDiv, 0xB) // divide by 1
}

// ID is the calling CPU's xAPIC ID (8 bits).
func ID() uint32 { return read(regID) >> 24 }

// EOI signals the end of the current interrupt.
func EOI() { apic.ClearInterrupt() }

// send waits until the previous IPI has left (delivery status idle: always
// at once under QEMU, a few hundred cycles on hardware), then writes the
// destination and the command, which sends. The ICR's high half holds
// only the destination (bits 56–63) above reserved bits, written as zero,
// as Linux does.
func send(apicID uint32, vector int, flags int) {
	for read(regICRLo)&icrPending != 0 {
		amd64.Pause()
	}
	write(regICRHi, apicID<<24)
	write(regICRLo, uint32(flags)&^0xff|uint32(vector)&0xff)
}

// IPI sends a fixed interrupt with vector to the CPU with apicID.
func IPI(apicID uint32, vector uint8) {
	send(apicID, int(vector), assert|lapic.ICR_DLV_IRQ)
}

// NMI sends a non-maskable interrupt to the CPU with apicID.
func NMI(apicID uint32) {
	send(apicID, 0, assert|lapic.ICR_DLV_NMI)
}

// StartAP sends INIT and then STARTUP with the real-mode entry page (the
// 4 KiB page below 1 MiB whose number is page) to the CPU with apicID.
// STARTUP is sent twice, as the MP specification says; a CPU that already
// started ignores the second one. The caller waits for the CPU to report.
//
// The waits are those of current processors (Linux skips the MP
// specification's 10 ms after INIT on them too): 10 µs after INIT and
// between the STARTUPs, timed with the TSC, which must be calibrated.
func StartAP(apicID uint32, page uint8) {
	send(apicID, 0, assert|lapic.ICR_DLV_INIT)
	spin(10_000)
	send(apicID, int(page), assert|lapic.ICR_DLV_SIPI)
	spin(10_000)
	send(apicID, int(page), assert|lapic.ICR_DLV_SIPI)
}

func spin(ns int64) {
	for end := clock.Nanotime() + ns; clock.Nanotime() < end; {
		amd64.Pause()
	}
}

// OneShot starts the timer: vector fires after count ticks.
func OneShot(vector uint8, count uint32) {
	write(regLVTTmr, uint32(vector))
	write(regTmrInit, count)
}

// Reload restarts the one-shot timer from count with the vector the last
// OneShot set: one register write instead of two (under emulation each is
// a trip through the machine's device lock).
func Reload(count uint32) { write(regTmrInit, count) }

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
