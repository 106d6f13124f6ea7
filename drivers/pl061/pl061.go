// Package pl061 drives an ARM PrimeCell PL061 GPIO controller's inputs
// as interrupt sources: QEMU virt's power key is its pin 3 (fdt.PowerKey).
//
// Kernel-context: no allocation, no runtime calls.
package pl061

import "yolk/drivers/mmio"

// Registers (PL061 TRM, 3.2); the pin bits are 0-7.
const (
	gpioDir = 0x400 // 1: output
	gpioIS  = 0x404 // interrupt sense: 1 level, 0 edge
	gpioIBE = 0x408 // both edges
	gpioIEV = 0x40C // event: 1 rising edge or high level
	gpioIE  = 0x410 // interrupt mask: 1 enabled
	gpioMIS = 0x418 // masked interrupt status
	gpioIC  = 0x41C // interrupt clear (write 1)
)

// ArmRising makes pin (0-7) of the controller at base an input that
// interrupts on its rising edge, a press of a key that drives the line
// high (QEMU's gpio-key holds it high for 100 ms).
func ArmRising(base uintptr, pin uint32) {
	b := uint32(1) << (pin & 7)
	mmio.Write32(base+gpioIE, mmio.Read32(base+gpioIE)&^b)
	mmio.Write32(base+gpioDir, mmio.Read32(base+gpioDir)&^b)
	mmio.Write32(base+gpioIS, mmio.Read32(base+gpioIS)&^b)
	mmio.Write32(base+gpioIBE, mmio.Read32(base+gpioIBE)&^b)
	mmio.Write32(base+gpioIEV, mmio.Read32(base+gpioIEV)|b)
	mmio.Write32(base+gpioIC, b)
	mmio.Write32(base+gpioIE, mmio.Read32(base+gpioIE)|b)
}

// Take reports whether pin's interrupt is pending, and clears it.
func Take(base uintptr, pin uint32) bool {
	b := uint32(1) << (pin & 7)
	if mmio.Read32(base+gpioMIS)&b == 0 {
		return false
	}
	mmio.Write32(base+gpioIC, b)
	return true
}
