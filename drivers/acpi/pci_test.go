package acpi

import (
	"os"
	"testing"
)

// mcfg is an MCFG with one entry per (base, segment, start, end).
func mcfg(entries ...[4]uint64) []byte {
	b := make([]byte, 8)
	for _, e := range entries {
		b = cat(b, le64(e[0]), []byte{byte(e[1]), byte(e[1] >> 8), byte(e[2]), byte(e[3])}, make([]byte, 4))
	}
	return sdt("MCFG", 1, b)
}

// amlHostBridge is a PCIe root bridge the way Cloud Hypervisor writes
// its first segment: _HID as a compressed EISA ID, a _CRS of bus
// numbers 0-0, a DWordMemory window and a QWordMemory window above
// 4 GiB, after an interrupt link whose _CRS holds an interrupt only.
func amlHostBridge(lo, hi uint32) []byte {
	link := cat([]byte{0x08}, []byte("_CRS"), []byte{0x11, 0x0e, 0x0a, 0x0b, 0x89, 6, 0, 1, 1}, le32(16), []byte{0x79, 0})
	res := cat(
		[]byte{resWord, 0x0d, 0, 2, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, // bus 0..0, length 1
		[]byte{resDWord, 0x17, 0, 0, 0x0c, 1}, le32(0), le32(lo), le32(hi), le32(0), le32(hi-lo+1),
		[]byte{resQWord, 0x2b, 0, 0, 0x0c, 1}, le64(0), le64(1<<36), le64(1<<37-1), le64(0), le64(1<<36),
		[]byte{0x79, 0})
	crs := cat([]byte{0x08}, []byte("_CRS"), []byte{0x11, 0x40 | byte((len(res)+4)&15), byte((len(res) + 4) >> 4), 0x0a, byte(len(res))}, res)
	return cat([]byte{0x08}, []byte("_HID"), []byte{0x0c}, pnp0a08EISA[:], link, crs)
}

// hostMachine is a hardware-reduced machine whose DSDT is aml, with an
// MCFG if mc is not nil.
func hostMachine(t *testing.T, aml, mc []byte) (uintptr, uintptr) {
	im := &image{base: 0xe0000}
	rp := im.add(make([]byte, rsdpLen))
	dsdt := im.add(sdt("DSDT", 2, aml))
	tables := []uintptr{im.add(sdt("FACP", 6, fadtBody(dsdt, true)))}
	if mc != nil {
		tables = append(tables, im.add(mc))
	}
	rs := im.add(rsdt(tables...))
	copy(im.bytes(rp), rsdp(0, uint32(rs), 0))
	return rp, im.load(t)
}

func TestFindPCIHost(t *testing.T) {
	qemu, err := os.ReadFile("testdata/microvm-pcie.dsdt")
	if err != nil {
		t.Fatal(err)
	}
	qemuAML := qemu[hdrLen:] // QEMU 7.2 microvm,acpi=on,pcie=on: no MCFG, _CBA in the DSDT
	for _, tc := range []struct {
		name string
		aml  []byte
		mc   []byte
		want PCIHost
		err  Error
	}{
		{"microvm", qemuAML, nil, PCIHost{ECAM: 0xe0000000, BusStart: 0, BusEnd: 0xff, Mem32Base: 0xc0000000, Mem32Size: 0x20000000}, OK},
		{"cloud-hypervisor", amlHostBridge(0xc0000000, 0xe7ffffff), mcfg([4]uint64{0x3000000000, 1, 0, 0}, [4]uint64{0xe8000000, 0, 0, 0}),
			PCIHost{ECAM: 0xe8000000, FromMCFG: true, Mem32Base: 0xc0000000, Mem32Size: 0x28000000}, OK},
		// The MCFG wins over _CBA; its bus range over the _CRS's.
		{"both", qemuAML, mcfg([4]uint64{0xb0000000, 0, 0, 0x3f}), PCIHost{ECAM: 0xb0000000, BusEnd: 0x3f, FromMCFG: true, Mem32Base: 0xc0000000, Mem32Size: 0x20000000}, OK},
		{"none", amlS5(0x0a, 5), nil, PCIHost{}, ErrNotFound},
		// No host bridge in the DSDT: the MCFG alone, no window.
		{"mcfg only", amlS5(0x0a, 5), mcfg([4]uint64{0xe0000000, 0, 0, 0xff}), PCIHost{ECAM: 0xe0000000, BusEnd: 0xff, FromMCFG: true}, OK},
	} {
		rp, off := hostMachine(t, tc.aml, tc.mc)
		h, e := FindPCIHost(rp, off)
		if e != tc.err || h != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, h, e, tc.want, tc.err)
		}
	}
}

// TestFindPCIHostTruncated cuts the real DSDT at every length: the scan
// stays within the table (image.load faults a read past it) and finds
// no window from a cut buffer.
func TestFindPCIHostTruncated(t *testing.T) {
	qemu, err := os.ReadFile("testdata/microvm-pcie.dsdt")
	if err != nil {
		t.Fatal(err)
	}
	for n := hdrLen; n < len(qemu); n += 7 {
		rp, off := hostMachine(t, qemu[hdrLen:n], nil)
		h, e := FindPCIHost(rp, off)
		if e == OK && (h.ECAM != 0xe0000000 || h.Mem32Size != 0 && h.Mem32Base != 0xc0000000) {
			t.Errorf("cut at %d: %+v", n, h)
		}
	}
}
