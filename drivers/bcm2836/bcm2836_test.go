package bcm2836

import (
	"testing"
	"unsafe"
)

// The driver against plain memory standing in for the two register blocks:
// which register each call writes, at the offsets of the QA7 and BCM2835
// documents (the QEMU raspi3b boot of the self-tests checks the behaviour).
func TestRegisters(t *testing.T) {
	var loc [0x100 / 4]uint32
	var arm [0x28 / 4]uint32
	heapOnly = append(heapOnly, &loc, &arm)
	reg := func(r []uint32, off uintptr) uint32 { return r[off/4] }
	Init(uintptr(unsafe.Pointer(&loc[0])), uintptr(unsafe.Pointer(&arm[0])))
	for _, off := range []uintptr{0x1C, 0x20, 0x24} {
		if reg(arm[:], off) != ^uint32(0) {
			t.Errorf("Init: disable register %#x = %#x, want every interrupt masked", off, reg(arm[:], off))
		}
	}
	loc[0x0C/4] = 3
	Init(uintptr(unsafe.Pointer(&loc[0])), uintptr(unsafe.Pointer(&arm[0])))
	if reg(loc[:], 0x0C) != 0 {
		t.Error("GPU interrupts not routed to core 0")
	}

	loc[0x48/4] = 0xff
	InitCPU(2)
	if reg(loc[:], 0x48) != 0 || reg(loc[:], 0x58) != 1 || reg(loc[:], 0xE0) != ^uint32(0) {
		t.Errorf("InitCPU(2): timers %#x, mailbox control %#x, mailbox 0 clear %#x", reg(loc[:], 0x48), reg(loc[:], 0x58), reg(loc[:], 0xE0))
	}
	EnableTimer(2)
	if reg(loc[:], 0x48) != SrcCNTV {
		t.Errorf("EnableTimer(2): core 2 timer control %#x, want nCNTVIRQ (bit 3)", reg(loc[:], 0x48))
	}

	Enable(UARTIRQ)
	if reg(arm[:], 0x14) != 1<<25 {
		t.Errorf("Enable(57): enable IRQs 2 = %#x, want bit 25", reg(arm[:], 0x14))
	}
	Disable(UARTIRQ)
	if reg(arm[:], 0x20) != 1<<25 {
		t.Errorf("Disable(57): disable IRQs 2 = %#x", reg(arm[:], 0x20))
	}
	arm[0x08/4] = 1 << 25
	if !PeripheralPending(UARTIRQ) || PeripheralPending(UARTIRQ-1) {
		t.Error("PeripheralPending does not read IRQ pending 2")
	}

	Send(3, 2)
	if reg(loc[:], 0xB0) != 1<<2 {
		t.Errorf("Send(3, 2): core 3 mailbox 0 set = %#x", reg(loc[:], 0xB0))
	}
	loc[0x6C/4] = SrcMailbox | SrcCNTV
	if Pending(3) != SrcMailbox|SrcCNTV {
		t.Error("Pending(3) does not read core 3's IRQ source")
	}
	loc[0xF0/4] = 5
	if v := TakeMailbox(3); v != 5 || reg(loc[:], 0xF0) != 5 {
		t.Errorf("TakeMailbox(3) = %#x; written back %#x (write-1-to-clear)", v, reg(loc[:], 0xF0))
	}
}

// heapOnly keeps the buffers this file reaches through uintptrs on the
// heap: a goroutine's stack is copied when it grows, and a uintptr into
// the old copy is not updated (a test in drivers/vgatext failed so in CI).
var heapOnly []any
