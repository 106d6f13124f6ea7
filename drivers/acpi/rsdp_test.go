package acpi

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// TestScanRSDP: an RSDP at Firecracker's 0xE0000, at the top of the BIOS
// area, in the EBDA; none, a bad checksum, off a 16-byte boundary.
func TestScanRSDP(t *testing.T) {
	for _, c := range []struct {
		name string
		at   uintptr
		ebda uint16
		bad  func(b []byte)
		want uintptr
	}{
		{"firecracker", 0xE0000, 0, nil, 0xE0000},
		{"xsdp", 0xFFFD0, 0, nil, 0xFFFD0},
		{"ebda", 0x9FC00, 0x9FC0, nil, 0x9FC00},
		{"ebda not named", 0x9FC00, 0, nil, 0},
		{"checksum", 0xE0000, 0, func(b []byte) { b[9]++ }, 0},
		{"unaligned", 0xE0008, 0, nil, 0},
		{"none", 0, 0, nil, 0},
	} {
		low := make([]byte, 1<<20)
		if c.at != 0 {
			r := rsdp(2, 0x1000, 0x2000)
			if c.bad != nil {
				c.bad(r)
			}
			copy(low[c.at:], r)
		}
		binary.LittleEndian.PutUint16(low[0x40E:], c.ebda)
		if got := ScanRSDP(uintptr(unsafe.Pointer(&low[0]))); got != c.want {
			t.Errorf("%s: ScanRSDP = %#x, want %#x", c.name, got, c.want)
		}
	}
}
