package kernel

import (
	"yolk/arch/arm64"
	"yolk/boot"
	"yolk/drivers/bcm2836"
	"yolk/drivers/fdt"
	"yolk/drivers/mmio"
	"yolk/kernel/mm"
)

// The Raspberry Pi 3 (BCM2837, kernel8.img: yolk build -board rpi3). What
// the device tree does not say is fixed by the SoC: the PL011 on GPIO 14/15
// (the firmware leaves it on the Bluetooth pins), its 48 MHz clock
// (config.txt's init_uart_clock), the interrupt controllers (bcm2836) and
// the spin table the firmware's secondaries wait on (no PSCI).

// piEntryPC keeps the Raspberry Pi 3 entry in the image (nothing else
// refers to it: the image tool finds it in the symbol table).
var piEntryPC uintptr

func init() { piEntryPC = boot.RPi3EntryPC() }

const (
	piImageStart = 0x80000 // kernel8.img; below it only the nil guard
	piUART       = 0x3F201000
	piUARTClock  = 48_000_000
	piGPIO       = 0x3F200000
	piSpinTable  = 0xd8 // core n's slot: 0xd8 + 8n (cpu-release-addr)
)

// GPIO registers (BCM2835 ARM Peripherals, 6.1).
const (
	gpfsel1   = 0x04
	gpfsel3   = 0x0C
	gppud     = 0x94
	gppudclk0 = 0x98
)

// piConsole routes the PL011 to GPIO 14 (TXD0) and 15 (RXD0), function
// ALT0, pulls off, takes it off the Bluetooth pins (GPIO 32/33, ALT3: made
// inputs, or the receiver would listen on two pins), and makes it the
// console.
func piConsole() {
	sel := mmio.Read32(piGPIO + gpfsel1)
	sel &^= 7<<12 | 7<<15
	sel |= 4<<12 | 4<<15
	mmio.Write32(piGPIO+gpfsel1, sel)
	sel = mmio.Read32(piGPIO + gpfsel3)
	mmio.Write32(piGPIO+gpfsel3, sel&^(7<<6|7<<9))
	mmio.Write32(piGPIO+gppud, 0)
	delayCycles(150)
	mmio.Write32(piGPIO+gppudclk0, 1<<14|1<<15)
	delayCycles(150)
	mmio.Write32(piGPIO+gppudclk0, 0)
	uart.Base = piUART
	uartClock = piUARTClock
	conIRQ = bcm2836.UARTIRQ
}

// delayCycles spins about n loop iterations (the GPIO pull set-up wants
// 150 cycles between steps).
func delayCycles(n int) {
	for i := 0; i < n; i++ {
		mmio.Read32(piGPIO + gppud)
	}
}

// piRelease starts the CPU with MPIDR mpidr: it writes the secondary entry
// to the CPU's spin-table slot (the device tree's cpu-release-addr, else
// 0xd8 + 8 × its core number) and sends an event.
func piRelease(mpidr uint64) {
	slot := uintptr(piSpinTable + 8*(mpidr&0xff))
	if a, ok := releaseAddr(mpidr); ok {
		slot = a
	}
	arm64.SpinRelease(mm.Phys(slot), boot.RPi3SecondaryPC())
}

// releaseAddr finds the cpu-release-addr of the CPU node whose reg is mpidr.
func releaseAddr(mpidr uint64) (uintptr, bool) {
	n, e := dt.CPUs(dtCPUs[:])
	if e != fdt.OK {
		return 0, false
	}
	for _, c := range dtCPUs[:min(n, len(dtCPUs))] {
		if c.MPIDR&mpidrAff != mpidr {
			continue
		}
		p, e := dt.Prop(c.Node, "cpu-release-addr")
		if e != fdt.OK {
			return 0, false
		}
		a, e := dt.Cells(p, 0, p.Len/4)
		return uintptr(a), e == fdt.OK && a != 0
	}
	return 0, false
}
