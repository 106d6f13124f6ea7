package acpi

import (
	"reflect"
	"testing"
)

// amlVirtio is QEMU microvm's AML for one virtio-mmio transport: Device
// (VRnn) { Name (_HID, "LNRO0005"), Name (_UID, n), Name (_CCA, One),
// Name (_CRS, ResourceTemplate { Memory32Fixed, Interrupt }) }, with the
// interrupt descriptor's flags byte given (bit 1 edge, bit 2 active low).
func amlVirtio(n byte, base, gsi uint32, flags byte) []byte {
	crs := cat([]byte{0x86, 9, 0, 1}, le32(base), le32(0x200), []byte{0x89, 6, 0, flags, 1}, le32(gsi), []byte{0x79, 0})
	body := cat([]byte("VR0"), []byte{'0' + n},
		[]byte{0x08}, []byte("_HID"), []byte{0x0d}, []byte(virtioHID), []byte{0},
		[]byte{0x08}, []byte("_UID"), []byte{0x0a, n},
		[]byte{0x08}, []byte("_CCA"), []byte{0x01},
		[]byte{0x08}, []byte("_CRS"), []byte{0x11, byte(2 + len(crs)), 0x0a, byte(len(crs))}, crs)
	return cat([]byte{0x5b, 0x82, byte(1 + len(body))}, body)
}

// withDSDT is a machine whose FADT (long, with X_DSDT, or short, with
// the 32-bit DSDT field only) points at a DSDT of body.
func withDSDT(body []byte, long bool) (*image, uintptr) {
	im := &image{base: 0xe0000}
	rp := im.add(make([]byte, rsdpLen))
	dsdt := im.add(sdt("DSDT", 2, body))
	fb := make([]byte, 8) // up to the 32-bit DSDT field's end (offset 44)
	copy(fb[4:], le32(uint32(dsdt)))
	if long {
		fb = make([]byte, 148-hdrLen)
		copy(fb[140-hdrLen:], le64(uint64(dsdt)))
	}
	facp := im.add(sdt("FACP", 6, fb))
	rs := im.add(rsdt(facp))
	copy(im.bytes(rp), rsdp(0, uint32(rs), 0))
	return im, rp
}

func TestVirtioMMIO(t *testing.T) {
	other := cat([]byte{0x5b, 0x82, 12}, []byte("COM1"), []byte{0x08}, []byte("_HID"), []byte{0x0c, 0x41, 0xd0, 0x05, 0x01})
	noRes := cat([]byte{0x08}, []byte("_HID"), []byte{0x0d}, []byte(virtioHID), []byte{0}) // no _CRS after it
	body := cat(other, amlVirtio(0, 0xfeb00000, 24, 0x01), noRes, amlVirtio(1, 0xfeb00200, 25, 0x01|0x02|0x04))
	want := []MMIODevice{
		{Base: 0xfeb00000, Size: 0x200, GSI: 24, Level: true},
		{Base: 0xfeb00200, Size: 0x200, GSI: 25, Level: false, ActiveLow: true},
	}
	for _, long := range []bool{true, false} {
		im, rp := withDSDT(body, long)
		var out [4]MMIODevice
		n, e := VirtioMMIO(rp, im.load(t), out[:])
		if e != OK || !reflect.DeepEqual(out[:n], want) {
			t.Errorf("long FADT %v: %d %v %+v, want %+v", long, n, e, out[:n], want)
		}
		if n, e := VirtioMMIO(rp, im.load(t), out[:1]); n != 1 || e != ErrTooManyDevices {
			t.Errorf("one slot: %d %v, want 1 ErrTooManyDevices", n, e)
		}
	}
	// No FADT: nothing found, an error.
	m := machine(madt(3, lapicBase, 0))
	if n, e := VirtioMMIO(m.rsdp, m.load(t), make([]MMIODevice, 4)); n != 0 || e == OK {
		t.Errorf("FADT without a DSDT: %d %v, want an error", n, e)
	}
	// A DSDT that ends inside a device's resources: it is not read past.
	cut := amlVirtio(0, 0xfeb00000, 24, 1)
	im, rp := withDSDT(cut[:len(cut)-12], true)
	if n, e := VirtioMMIO(rp, im.load(t), make([]MMIODevice, 4)); n != 0 || e != OK {
		t.Errorf("truncated device: %d %v, want 0 OK", n, e)
	}
}
