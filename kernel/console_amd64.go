package kernel

import "yolk/drivers/uart16550"

// The console is COM1, a 16550 UART.
var com1 = uart16550.UART{Base: uart16550.COM1}

func consoleInit() { com1.Init() }

// conPut sends one byte (the caller holds the console).
func conPut(c byte) { com1.Put(c) }
