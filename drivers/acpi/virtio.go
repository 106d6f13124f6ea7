package acpi

// MMIODevice is a virtio-mmio transport the DSDT lists: its registers and
// its interrupt (a global system interrupt).
type MMIODevice struct {
	Base, Size uint32
	GSI        uint32
	Level      bool // level-triggered (else edge)
	ActiveLow  bool
}

// virtioHID is the _HID of a virtio-mmio transport (Linaro's), which QEMU
// microvm's DSDT gives each of its transports.
const virtioHID = "LNRO0005"

// VirtioMMIO finds the virtio-mmio transports in the DSDT (through the
// FADT): each string "LNRO0005" and the first Memory32Fixed and Extended
// Interrupt resource descriptors within the next 96 bytes and before the
// next such string — the shape of
// QEMU microvm's Device (VRnn) { _HID, _UID, _CCA, _CRS }. It is a scan of
// the bytes, not an AML interpreter. It fills out and returns how many it
// found (ErrTooManyDevices when more than fit: the count is of those that did).
func VirtioMMIO(rsdp, off uintptr, out []MMIODevice) (int, Error) {
	m := mem(off)
	fadt, e := Find(rsdp, off, "FACP")
	if e != OK {
		return 0, e
	}
	flen, _ := m.table(fadt)
	dsdt := uintptr(0)
	if flen >= 148 {
		dsdt = uintptr(m.u64(fadt + 140)) // X_DSDT
	}
	if dsdt == 0 && flen >= 44 {
		dsdt = uintptr(m.u32(fadt + 40))
	}
	if dsdt == 0 || !m.is(dsdt, "DSDT") {
		return 0, ErrNotFound
	}
	n, e := m.table(dsdt)
	if e != OK {
		return 0, e
	}
	end := dsdt + n
	k := 0
	for p := dsdt + hdrLen; p+uintptr(len(virtioHID)) <= end; p++ {
		if !m.is(p, virtioHID) {
			continue
		}
		var d MMIODevice
		found := 0
		for q := p + uintptr(len(virtioHID)); q < p+96 && q < end && found != 3; q++ {
			if q+uintptr(len(virtioHID)) <= end && m.is(q, virtioHID) {
				break // the next device's: this one has no resources
			}
			switch {
			case found&1 == 0 && q+12 <= end && m.u8(q) == 0x86 && m.u8(q+1) == 9 && m.u8(q+2) == 0: // Memory32Fixed
				d.Base, d.Size = m.u32(q+4), m.u32(q+8)
				found |= 1
			case found&2 == 0 && q+9 <= end && m.u8(q) == 0x89 && m.u8(q+1) >= 6 && m.u8(q+2) == 0 && m.u8(q+4) >= 1: // Extended Interrupt
				f := m.u8(q + 3)
				d.Level, d.ActiveLow = f&2 == 0, f&4 != 0
				d.GSI = m.u32(q + 5)
				found |= 2
			}
		}
		if found != 3 || d.Base == 0 {
			continue
		}
		if k == len(out) {
			return k, ErrTooManyDevices
		}
		out[k] = d
		k++
	}
	return k, OK
}
