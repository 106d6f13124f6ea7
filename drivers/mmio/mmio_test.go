package mmio

import (
	"testing"
	"unsafe"
)

func TestAccess(t *testing.T) {
	var regs [4]uint64
	a := uintptr(unsafe.Pointer(&regs[0]))
	Write32(a+4, 0xdeadbeef)
	Write64(a+8, 0x0123456789abcdef)
	if got := Read32(a + 4); got != 0xdeadbeef {
		t.Errorf("Read32 = %#x", got)
	}
	if got := Read64(a + 8); got != 0x0123456789abcdef || regs[1] != 0x0123456789abcdef {
		t.Errorf("Read64 = %#x, memory %#x", got, regs[1])
	}
	if regs[0]&0xffffffff != 0 {
		t.Errorf("Write32 at +4 touched +0: %#x", regs[0])
	}
}
