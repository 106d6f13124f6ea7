package virtio

import (
	"slices"
	"testing"
)

// TestPCIPorts reaches the same configuration-space model through a model
// of the ports 0xCF8/0xCFC: the address register's encoding, dword reads,
// and a 16-bit write at 0xCFC+2 for the upper half.
func TestPCIPorts(t *testing.T) {
	s := newPCISpace(t)
	bdf := BDF(0, pciDev, 0)
	buildVirtioFn(s.fn(bdf), 0x1041, standardCaps)
	var addr uint32
	saved := [...]any{inl, outl, outw}
	t.Cleanup(func() {
		inl, outl, outw = saved[0].(func(uint16) uint32), saved[1].(func(uint16, uint32)), saved[2].(func(uint16, uint16))
	})
	decode := func() (uint16, uintptr) {
		if addr&(1<<31) == 0 || addr&3 != 0 {
			t.Errorf("0xCF8 = %#x: enable bit clear or low bits set", addr)
		}
		return uint16(addr >> 8), uintptr(addr & 0xfc)
	}
	outl = func(port uint16, v uint32) {
		if port != portConfigAddress {
			t.Fatalf("outl %#x", port)
		}
		addr = v
	}
	inl = func(port uint16) uint32 {
		if port != portConfigData {
			t.Fatalf("inl %#x", port)
		}
		b, r := decode()
		return uint32(s.cfgRead(b, r, 4))
	}
	outw = func(port uint16, v uint16) {
		if port&^2 != portConfigData {
			t.Fatalf("outw %#x", port)
		}
		b, r := decode()
		s.cfgWrite(b, r+uintptr(port&2), 2, uint64(v))
	}
	c := PCIConfig{}
	var out [4]PCIFunction
	n, err := c.Virtio(0, out[:])
	if err != OK || !slices.Equal(out[:n], []PCIFunction{{bdf, 0x1041, TypeNet}}) {
		t.Fatalf("Virtio = %v, %v", out[:n], err)
	}
	if portAddr(BDF(1, 2, 3), 0x3e) != 0x8001133c {
		t.Errorf("portAddr = %#x", portAddr(BDF(1, 2, 3), 0x3e))
	}
	caps, err := c.Caps(bdf)
	if err != OK || caps.Notify.Addr != bar4Addr+0x3000 || caps.NotifyMul != notifyMul {
		t.Errorf("Caps = %+v, %v", caps, err)
	}
	c.Write16(bdf, cfgCommand, 0x6)
	if got := c.Read16(bdf, cfgCommand); got != 6 || c.Read16(bdf, cfgStatus) != statusCaps {
		t.Errorf("command %#x, status %#x", got, c.Read16(bdf, cfgStatus))
	}
	// A write to the upper half goes to 0xCFE; the model refuses any
	// register but the command, so check only the port arithmetic.
	if portConfigData+uint16(cfgStatus)&2 != 0xcfe {
		t.Errorf("upper-half port")
	}
}
