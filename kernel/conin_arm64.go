package kernel

import (
	"yolk/sched"
)

// conIRQ is the PL011's interrupt ID (an SPI from the device tree; 0: none).
var conIRQ uint32

// conInInit routes the PL011's receive interrupt to this (the boot) CPU and
// turns it on.
func conInInit(c *sched.CPU) {
	if conIRQ == 0 {
		klog("console: the UART has no interrupt in the device tree: no console input\n")
		return
	}
	conIRQEnable()
	uart.EnableRX()
}

// conInInterrupt is the receive interrupt's handler (irq does the EOI).
func conInInterrupt() {
	uart.AckRX()
	if conIn.Receive() {
		conIn.WQ.Wake(0, sched.MaxTasks)
	}
}

func conRxGet() (byte, bool) {
	for {
		c, ok, bad := uart.Get()
		if !ok || !bad {
			return c, ok
		}
		// A framing or parity error: drop the byte.
	}
}

func conRxEnable(on bool) {
	if on {
		uart.EnableRX()
	} else {
		uart.DisableRX()
	}
}
