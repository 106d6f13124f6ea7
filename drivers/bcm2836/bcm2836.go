// Package bcm2836 drives the interrupt controllers of the Raspberry Pi 3's
// BCM2837: the per-core "ARM local" controller of the BCM2836 (Quad-A7
// control, QA7_rev3.4) at 0x40000000 — the generic timers' interrupts, four
// mailboxes per core that serve as inter-processor interrupts, and the
// routing of the GPU's interrupts to one core — and the BCM2835 ARM
// interrupt controller at 0x3F00B200 (BCM2835 ARM Peripherals, 7.5), where
// the peripherals' interrupts (the PL011's is 57) are enabled.
//
// Inter-processor interrupts use mailbox 0: a vector is a bit of it (0-31),
// set by the sender and cleared by the receiver, so any number of vectors
// may be pending at once. The GIC this replaces delivers one ID per
// acknowledge; Pending returns every source at once instead.
//
// Kernel-context: no allocation, no runtime calls; the state is the two
// base addresses set by Init. Enable, EnableTimer and EnableMailbox
// read-modify-write registers shared by several interrupts: the caller
// serialises them (boot). Pending, TakeMailbox and Send may run on every
// CPU at once.
package bcm2836

import "yolk/drivers/mmio"

// The BCM2837's addresses (as seen by the ARM cores).
const (
	LocalBase   = 0x40000000
	ARMCtrlBase = 0x3F00B200

	UARTIRQ = 57 // the PL011 (GPU interrupt 57: pending/enable bank 2, bit 25)
)

// Local controller registers (QA7_rev3.4, 4.x), per core n.
const (
	gpuRouting   = 0x0C
	timerControl = 0x40 // + 4n: bit 0-3 nCNTPS, nCNTPNS, nCNTHP, nCNTV → IRQ
	mboxControl  = 0x50 // + 4n: bit m: mailbox m → IRQ
	irqSource    = 0x60 // + 4n
	mboxSet      = 0x80 // + 16n + 4m: write 1s to set bits
	mboxClear    = 0xC0 // + 16n + 4m: read; write 1s to clear bits
)

// Interrupt sources (the core's IRQ source register).
const (
	SrcCNTPS   = 1 << 0
	SrcCNTPNS  = 1 << 1
	SrcCNTHP   = 1 << 2
	SrcCNTV    = 1 << 3
	SrcMailbox = 1 << 4 // mailbox 0; 1-3 are bits 5-7
	SrcGPU     = 1 << 8
)

// ARM controller registers (BCM2835 ARM Peripherals, 7.5).
const (
	pending1 = 0x04
	enable1  = 0x10
	disable1 = 0x1C
)

var local, armctrl uintptr

// Init sets the controllers' addresses (LocalBase and ARMCtrlBase on the
// BCM2837), masks every peripheral interrupt and routes the GPU's
// interrupts to core 0.
func Init(localBase, armctrlBase uintptr) {
	local, armctrl = localBase, armctrlBase
	mmio.Write32(armctrl+disable1, ^uint32(0))
	mmio.Write32(armctrl+disable1+4, ^uint32(0))
	mmio.Write32(armctrl+disable1+8, ^uint32(0))
	mmio.Write32(local+gpuRouting, 0)
}

// InitCPU masks every local interrupt of core and enables its IRQ from
// mailbox 0 (the inter-processor interrupts).
func InitCPU(core int) {
	mmio.Write32(local+timerControl+4*uintptr(core), 0)
	mmio.Write32(local+mboxControl+4*uintptr(core), 1)
	mmio.Write32(local+mboxClear+16*uintptr(core), ^uint32(0))
}

// EnableTimer routes core's virtual timer (CNTV) to its IRQ.
func EnableTimer(core int) {
	a := local + timerControl + 4*uintptr(core)
	mmio.Write32(a, mmio.Read32(a)|SrcCNTV)
}

// Enable unmasks peripheral interrupt irq (0-63) in the ARM controller; it
// reaches the core the GPU interrupts are routed to (Init: core 0).
func Enable(irq uint32) { mmio.Write32(armctrl+enable1+4*uintptr(irq/32), 1<<(irq%32)) }

// Disable masks peripheral interrupt irq.
func Disable(irq uint32) { mmio.Write32(armctrl+disable1+4*uintptr(irq/32), 1<<(irq%32)) }

// Pending returns core's pending interrupt sources (Src*).
func Pending(core int) uint32 { return mmio.Read32(local + irqSource + 4*uintptr(core)) }

// PeripheralPending reports whether peripheral interrupt irq is pending.
func PeripheralPending(irq uint32) bool {
	return mmio.Read32(armctrl+pending1+4*uintptr(irq/32))&(1<<(irq%32)) != 0
}

// TakeMailbox returns and clears the vectors pending in core's mailbox 0.
func TakeMailbox(core int) uint32 {
	a := local + mboxClear + 16*uintptr(core)
	v := mmio.Read32(a)
	if v != 0 {
		mmio.Write32(a, v)
	}
	return v
}

// Send raises vector vec (0-31) at core through its mailbox 0.
func Send(core int, vec uint32) { mmio.Write32(local+mboxSet+16*uintptr(core), 1<<vec) }
