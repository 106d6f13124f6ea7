package kernel

import (
	"yolk/boot"
	"yolk/drivers/uart16550"
	"yolk/drivers/vgatext"
	"yolk/kernel/mm"
)

// The console is COM1, a 16550 UART, and also, when the boot loader left
// one (GRUB under BIOS: boot.Info.Text), the EGA text screen, which shows
// the same bytes from the moment the boot information has been read.
var (
	com1     = uart16550.UART{Base: uart16550.COM1}
	screen   vgatext.Screen
	screenPA uintptr // physical address of the text screen; 0: none
)

func consoleInit() { com1.Init() }

// screenInit clears the text screen in, if there is a usable one, and
// starts showing the console there.
func screenInit(in *boot.Info) {
	s := vgatext.Screen{Cols: in.TextCols, Rows: in.TextRows, Pitch: in.TextPitch}
	if in.Text == 0 || !s.Valid() {
		return
	}
	screen = s
	screen.Clear(mm.Phys(in.Text))
	screenPA = in.Text
}

// conPut sends one byte (the caller holds the console). While it waits
// for the transmitter — at 115200 baud on a real PC a long write keeps a
// CPU here for seconds, interrupts off — it answers TLB shootdowns, whose
// initiator would otherwise give up on this CPU after 5 s.
func conPut(c byte) {
	for !com1.TxReady() {
		mm.ShootdownPoll()
	}
	com1.Put(c)
	if screenPA != 0 {
		screen.Put(mm.Phys(screenPA), c)
	}
}
