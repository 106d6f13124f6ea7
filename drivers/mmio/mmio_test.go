package mmio

import (
	"testing"
	"unsafe"
)

func TestAccess(t *testing.T) {
	var regs [4]uint64
	heapOnly = append(heapOnly, &regs)
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

func TestNarrowAccess(t *testing.T) {
	var regs [2]uint64
	heapOnly = append(heapOnly, &regs)
	a := uintptr(unsafe.Pointer(&regs[0]))
	Write8(a+1, 0xab)
	Write16(a+4, 0xcdef)
	if got := Read8(a + 1); got != 0xab {
		t.Errorf("Read8 = %#x", got)
	}
	if got := Read16(a + 4); got != 0xcdef {
		t.Errorf("Read16 = %#x", got)
	}
	if regs[0] != 0x0000cdef0000ab00 || regs[1] != 0 {
		t.Errorf("memory %#x %#x: a narrow write touched its neighbours", regs[0], regs[1])
	}
}

// heapOnly keeps the buffers this file reaches through uintptrs on the
// heap: a goroutine's stack is copied when it grows, and a uintptr into
// the old copy is not updated (a test in drivers/vgatext failed so in CI).
var heapOnly []any
