package acpi

// ScanRSDP finds the RSDP where a BIOS would leave it, for a boot protocol
// that passed none: Firecracker's PVH start-info block has no RSDP address
// (it writes the RSDP at 0xE0000 and tells only Linux's boot protocol),
// so the kernel searches as Linux's acpi_find_root_pointer does: the first
// KiB of the EBDA that the BIOS data area names, then 0xE0000 to 0xFFFFF,
// on 16-byte boundaries, for "RSD PTR " with valid checksums. It returns
// the RSDP's physical address, 0 if there is none. Memory is read at p+off.
func ScanRSDP(off uintptr) uintptr {
	m := mem(off)
	var areas [2][2]uintptr
	n := 0
	if ebda := uintptr(m.u8(0x40E)) | uintptr(m.u8(0x40F))<<8; ebda != 0 {
		if a := ebda << 4; a >= 0x80000 && a < 0xA0000 {
			areas[n] = [2]uintptr{a, a + 1024}
			n++
		}
	}
	areas[n] = [2]uintptr{0xE0000, 0x100000}
	n++
	for _, ar := range areas[:n] {
		for a := ar[0]; a+rsdpLen <= ar[1]; a += 16 {
			if _, _, e := m.root(a); e == OK {
				return a
			}
		}
	}
	return 0
}
