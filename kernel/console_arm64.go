package kernel

import "yolk/drivers/pl011"

// The console is the PL011 the device tree names (virt: 0x09000000).
var uart = pl011.UART{Base: 0x09000000}

// uartClock is the PL011's reference clock: QEMU virt's (its device tree's
// apb-pclk, 24 MHz) unless the board says otherwise (piConsole).
var uartClock uint32 = 24_000_000

func consoleInit() { uart.Init(uartClock, 115200) }

// conPut sends one byte (the caller holds the console).
func conPut(c byte) { uart.Put(c) }
