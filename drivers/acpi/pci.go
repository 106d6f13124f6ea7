package acpi

// PCIHost is a PCI Express host bridge as the tables describe it: where
// its memory-mapped configuration space (ECAM, PCIe 7.2.2) is and the
// bridge's 32-bit memory window, where BARs may be placed.
type PCIHost struct {
	// ECAM is the physical address of bus 0's configuration space (as
	// the MCFG gives it even when its buses start later): bus b, device
	// d, function f at ECAM + b<<20 + d<<15 + f<<12.
	ECAM             uint64
	Segment          uint16
	BusStart, BusEnd uint8
	FromMCFG         bool // the MCFG gave ECAM; else the DSDT's _CBA

	// Mem32 is the bridge's 32-bit memory window, [Mem32Base,
	// Mem32Base+Mem32Size), from its _CRS; Mem32Size 0: not found.
	Mem32Base, Mem32Size uint32
}

// Layouts: the MCFG (PCI Firmware 3.2, 4.1.2) and the resource
// descriptors of a _CRS (ACPI 6.5, 6.4.3.5).
const (
	mcfgEntries = hdrLen + 8 // the header, then 8 reserved bytes
	mcfgEntry   = 16         // base (8), segment (2), start bus, end bus, reserved (4)

	resDWord = 0x87 // DWord Address Space Descriptor: length 0x17
	resQWord = 0x8a // QWord Address Space Descriptor: length 0x2b
	resWord  = 0x88 // Word Address Space Descriptor: length 0x0d
)

// pnp0a08 is a PCI Express root bridge's _HID, as a string (QEMU's
// microvm) and as a compressed EISA ID (an integer: Cloud Hypervisor,
// QEMU q35); pnp0a03 a PCI root bridge's.
var (
	pnp0a08EISA = [4]byte{0x41, 0xd0, 0x0a, 0x08}
	pnp0a03EISA = [4]byte{0x41, 0xd0, 0x0a, 0x03}
)

// FindPCIHost finds segment 0's host bridge: its ECAM from the MCFG's
// entry for segment 0, or, when there is no MCFG (QEMU 7.2's microvm),
// from the DSDT's _CBA (Name or Method returning a DWord or QWord
// constant) after the host bridge's _HID; and its 32-bit memory window
// from the first memory DWord Address Space Descriptor (or a QWord one
// below 4 GiB) after that _HID. Byte scans of the DSDT, not an AML
// interpreter. ErrNotFound if neither table gives an ECAM.
func FindPCIHost(rsdp, off uintptr) (PCIHost, Error) {
	var h PCIHost
	m := mem(off)
	if a, e := Find(rsdp, off, "MCFG"); e == OK {
		n, _ := m.table(a)
		for p := a + mcfgEntries; p+mcfgEntry <= a+n; p += mcfgEntry {
			if seg := uint16(m.u8(p+8)) | uint16(m.u8(p+9))<<8; seg == 0 {
				h.ECAM, h.BusStart, h.BusEnd, h.FromMCFG = m.u64(p), m.u8(p+10), m.u8(p+11), true
				break
			}
		}
	}
	f, e := ReadFADT(rsdp, off)
	if e == OK {
		h.pciDSDT(m, f.DSDT)
	}
	if h.ECAM == 0 {
		return PCIHost{}, ErrNotFound
	}
	return h, OK
}

// pciDSDT fills in what the DSDT says of the host bridge: the window,
// and the ECAM and bus range when the MCFG gave none.
func (h *PCIHost) pciDSDT(m mem, dsdt uintptr) {
	end, e := m.dsdt(dsdt)
	if e != OK {
		return
	}
	p := dsdt + hdrLen
	for ; p+8 <= end; p++ {
		if m.is(p, "PNP0A08") || m.is(p, "PNP0A03") || m.eisa(p, pnp0a08EISA) || m.eisa(p, pnp0a03EISA) {
			break
		}
	}
	for q := p; q+8 <= end && h.ECAM == 0; q++ {
		if m.is(q, "_CBA") {
			h.ECAM, _ = m.constant(q+4, end)
		}
	}
	// The first Name (_CRS, Buffer) after the _HID with a memory range
	// in it is the bridge's (the interrupt links before it have only
	// interrupts).
	for q := p; q+8 <= end && h.Mem32Size == 0; q++ {
		if m.is(q, "_CRS") && m.u8(q+4) == 0x11 {
			if a, n, ok := m.buffer(q+5, end); ok {
				h.resources(m, a, a+n)
			}
		}
	}
}

// buffer reads a DefBuffer's PkgLength and BufferSize at p (just after
// BufferOp) and returns where its bytes are and how many.
func (m mem) buffer(p, end uintptr) (uintptr, uintptr, bool) {
	if p >= end {
		return 0, 0, false
	}
	lead := m.u8(p)
	pkg := p + 1 + uintptr(lead>>6) // the package's bytes follow its length
	size := pkg
	var n uintptr
	switch {
	case size+2 <= end && m.u8(size) == 0x0a:
		n, size = uintptr(m.u8(size+1)), size+2
	case size+3 <= end && m.u8(size) == 0x0b:
		n, size = uintptr(m.u8(size+1))|uintptr(m.u8(size+2))<<8, size+3
	default:
		return 0, 0, false
	}
	if n > end-size {
		return 0, 0, false
	}
	return size, n, true
}

// resources walks the resource template in [a, end) (ACPI 6.5, 6.4):
// the bus range (a Word Address Space Descriptor of bus numbers) and
// the largest memory range below 4 GiB (DWord or QWord).
func (h *PCIHost) resources(m mem, a, end uintptr) {
	for a < end {
		tag := m.u8(a)
		if tag&0x80 == 0 { // a small item: its length in the tag
			if tag>>3 == 0x0f { // End Tag
				return
			}
			a += 1 + uintptr(tag&7)
			continue
		}
		if a+3 > end {
			return
		}
		n := uintptr(m.u8(a+1)) | uintptr(m.u8(a+2))<<8
		if n > end-a-3 {
			return
		}
		typ := m.u8(a + 3)
		var base, max, size uint64
		switch {
		case tag == resWord && n >= 0x0d && typ == 2 && !h.FromMCFG:
			h.BusStart, h.BusEnd = m.u8(a+8), m.u8(a+10)
		case tag == resDWord && n >= 0x17 && typ == 0:
			base, max, size = uint64(m.u32(a+10)), uint64(m.u32(a+14)), uint64(m.u32(a+22))
		case tag == resQWord && n >= 0x2b && typ == 0:
			base, max, size = m.u64(a+14), m.u64(a+22), m.u64(a+38)
		}
		if size != 0 && size < 1<<32 && size > uint64(h.Mem32Size) && max >= base && max-base == size-1 && max < 1<<32 {
			h.Mem32Base, h.Mem32Size = uint32(base), uint32(size)
		}
		a += 3 + n
	}
}

// eisa reports whether an AML DWord constant (0x0C, then 4 bytes) of id
// is at p.
func (m mem) eisa(p uintptr, id [4]byte) bool {
	if m.u8(p) != 0x0c {
		return false
	}
	for i, b := range id {
		if m.u8(p+1+uintptr(i)) != b {
			return false
		}
	}
	return true
}

// constant reads the integer a name's object gives at p (just after the
// name): Name's DWordPrefix or QWordPrefix constant, or a Method whose
// body is Return of one (flags, ReturnOp, then the constant).
func (m mem) constant(p, end uintptr) (uint64, bool) {
	if p+2 <= end && m.u8(p) == 0x00 && m.u8(p+1) == 0xa4 { // Method flags 0, ReturnOp
		p += 2
	}
	switch {
	case p+5 <= end && m.u8(p) == 0x0c:
		return uint64(m.u32(p + 1)), true
	case p+9 <= end && m.u8(p) == 0x0e:
		return m.u64(p + 1), true
	}
	return 0, false
}
