package acpi

import (
	"testing"
)

// amlS5 is Name (_S5_, Package (4) { typ, Zero, Zero, Zero }) as QEMU
// writes it (typ is an AML integer's encoding: ZeroOp, OneOp or
// BytePrefix n).
func amlS5(typ ...byte) []byte {
	pkg := cat([]byte{4}, typ, []byte{0, 0, 0})
	return cat([]byte{0x08}, []byte("_S5_"), []byte{0x12, byte(1 + len(pkg))}, pkg)
}

// amlGED is QEMU's Device (GED) { _HID "ACPI0013", _UID, _CRS {
// Interrupt (edge, active high) gsi }, OperationRegion (EREG,
// SystemMemory, base, 4) } (hw/acpi/generic_event_device.c).
func amlGED(base, gsi uint32) []byte {
	crs := cat([]byte{0x89, 6, 0, 0x03, 1}, le32(gsi), []byte{0x79, 0})
	body := cat([]byte("GED_"),
		[]byte{0x08}, []byte("_HID"), []byte{0x0d}, []byte("ACPI0013"), []byte{0},
		[]byte{0x08}, []byte("_UID"), []byte{0x0d}, []byte("GED"), []byte{0},
		[]byte{0x08}, []byte("_CRS"), []byte{0x11, byte(2 + len(crs)), 0x0a, byte(len(crs))}, crs,
		[]byte{0x5b, 0x80}, []byte("EREG"), []byte{0x00, 0x0c}, le32(base), []byte{0x0a, 4})
	return cat([]byte{0x5b, 0x82, byte(1 + len(body))}, body)
}

// fadtBody is a 276-byte FADT's body (after the header) as QEMU's q35
// (fixed hardware) or microvm (hardware-reduced) write it.
func fadtBody(dsdt uintptr, hwReduced bool) []byte {
	b := make([]byte, 276-hdrLen)
	put32 := func(o int, v uint32) { copy(b[o-hdrLen:], le32(v)) }
	put32(40, uint32(dsdt))
	copy(b[140-hdrLen:], le64(uint64(dsdt)))
	if hwReduced {
		put32(112, fadtHWReduced)
		copy(b[244-hdrLen:], cat([]byte{SpaceMemory, 8, 0, 1}, le64(0xfea00200)))
		return b
	}
	b[46-hdrLen] = 9
	put32(48, 0xb2)
	b[52-hdrLen] = 2
	put32(56, 0x600)
	put32(64, 0x604)
	put32(76, 0x608)
	b[88-hdrLen], b[89-hdrLen], b[91-hdrLen] = 4, 2, 4
	put32(112, fadtTimerExt)
	return b
}

func TestPowerTables(t *testing.T) {
	for _, hw := range []bool{false, true} {
		im := &image{base: 0xe0000}
		rp := im.add(make([]byte, rsdpLen))
		aml := cat(amlVirtio(0, 0xfeb00000, 24, 0x01), amlGED(0xfea00000, 23), amlS5(0x0a, 5))
		if !hw {
			aml = amlS5(0x00)
		}
		dsdt := im.add(sdt("DSDT", 2, aml))
		facp := im.add(sdt("FACP", 6, fadtBody(dsdt, hw)))
		iso := cat([]byte{2, 10, 0, 9}, le32(9), []byte{0x0d, 0})
		ma := im.add(madt(3, lapicBase, 1, lapicEntry(0, 0, 1), iso))
		rs := im.add(rsdt(facp, ma))
		copy(im.bytes(rp), rsdp(0, uint32(rs), 0))
		off := im.load(t)

		f, e := ReadFADT(rp, off)
		if e != OK || f.DSDT != dsdt || f.HWReduced != hw {
			t.Fatalf("hw %v: ReadFADT = %+v, %v", hw, f, e)
		}
		typ, ok := SleepType(f.DSDT, off)
		g, gok := FindGED(f.DSDT, off)
		if hw {
			if f.SleepCtl != (GAS{Space: SpaceMemory, Width: 8, Addr: 0xfea00200}) || f.PM1aCnt != 0 || f.PMTimer != 0 {
				t.Errorf("hardware-reduced FADT: %+v", f)
			}
			if typ != 5 || !ok {
				t.Errorf("microvm's \\_S5: %d, %v; want 5", typ, ok)
			}
			if want := (GED{Base: 0xfea00000, GSI: 23}); g != want || !gok {
				t.Errorf("FindGED = %+v, %v; want %+v", g, gok, want)
			}
			continue
		}
		want := FADT{SCI: 9, SMICmd: 0xb2, ACPIEnable: 2, PM1aEvt: 0x600, PM1EvtLen: 4, PM1aCnt: 0x604, PMTimer: 0x608, Timer32: true, DSDT: dsdt}
		if f != want {
			t.Errorf("q35's FADT: %+v\nwant %+v", f, want)
		}
		if typ != 0 || !ok || gok {
			t.Errorf("q35: \\_S5 %d, %v (want 0, true); a GED %v", typ, ok, gok)
		}
		if gsi, flags, ok := ISAOverride(rp, off, 9); gsi != 9 || flags != 0x0d || !ok {
			t.Errorf("ISAOverride(9) = %d, %#x, %v", gsi, flags, ok)
		}
		if gsi, _, ok := ISAOverride(rp, off, 4); gsi != 4 || ok {
			t.Errorf("ISAOverride(4) = %d, %v; want 4, false", gsi, ok)
		}
	}
}

// TestSleepTypeTruncated: a _S5_ whose package runs to the DSDT's end is
// not read past it, and a complete one at the end is.
func TestSleepTypeTruncated(t *testing.T) {
	for _, c := range []struct {
		aml []byte
		ok  bool
	}{
		{cat([]byte{0x08}, []byte("_S5_"), []byte{0x12, 6, 4}), false},
		{cat([]byte{0x08}, []byte("_S5_"), []byte{0x12, 6, 4, 0x0a, 7}), true},
	} {
		im, rp := withDSDT(c.aml, true)
		off := im.load(t)
		d, e := Find(rp, off, "FACP")
		if e != OK {
			t.Fatal(e)
		}
		typ, ok := SleepType(uintptr(mem(off).u64(d+140)), off)
		if ok != c.ok || ok && typ != 7 {
			t.Errorf("% x: %d, %v; want ok %v", c.aml, typ, ok, c.ok)
		}
	}
}
