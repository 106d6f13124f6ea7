package acpi

// GAS is a Generic Address Structure (ACPI 6.5, 5.2.3.2): a register in
// memory (Space 0) or I/O space (Space 1).
type GAS struct {
	Space, Width uint8
	Addr         uint64
}

// Address spaces of a GAS.
const (
	SpaceMemory = 0
	SpaceIO     = 1
)

// FADT is what the kernel uses of the Fixed ACPI Description Table (ACPI
// 6.5, 5.2.9): the power-management registers of a PC's chipset (the
// PM1 event and control blocks, the PM timer, the SCI and the SMI command
// that switches the chipset to ACPI mode) or, on a hardware-reduced
// machine (QEMU microvm, Cloud Hypervisor, Firecracker 1.8), the sleep
// control register, and where the DSDT is.
type FADT struct {
	SCI        uint16 // the SCI's ISA IRQ (an interrupt source override may move it)
	SMICmd     uint32 // the SMI command port, 0 if ACPI mode is always on
	ACPIEnable uint8  // the value written to SMICmd to enter ACPI mode
	PM1aEvt    uint32 // I/O port of PM1a's status (enable at PM1aEvt+PM1EvtLen/2); 0: none
	PM1EvtLen  uint8
	PM1aCnt    uint32 // I/O port of PM1a's control register; 0: none
	PM1bCnt    uint32
	PMTimer    uint32 // I/O port of the 3.579545 MHz PM timer; 0: none
	Timer32    bool   // the PM timer has 32 bits (else 24)
	HWReduced  bool   // hardware-reduced ACPI: no PM1 blocks, no SCI_EN, no PM timer
	SleepCtl   GAS    // hardware-reduced: the sleep control register (Addr 0: none)
	DSDT       uintptr
}

// FADT flags (ACPI 6.5, Table 5.10).
const (
	fadtTimerExt  = 1 << 8
	fadtHWReduced = 1 << 20
)

// PMTimerHz is the ACPI PM timer's rate.
const PMTimerHz = 3579545

// ReadFADT finds the FADT ("FACP") through the RSDP and reads it. Fields
// past the table's length (an ACPI 1.0 FADT is 116 bytes) stay zero; the
// 32-bit I/O port fields win over the extended GAS ones, which are used
// when the port fields are zero and the GAS is in I/O space.
func ReadFADT(rsdp, off uintptr) (FADT, Error) {
	var f FADT
	a, e := Find(rsdp, off, "FACP")
	if e != OK {
		return f, e
	}
	m := mem(off)
	n, _ := m.table(a)
	if n < 116 {
		return f, ErrTableLength
	}
	gas := func(o uintptr) GAS {
		if o+12 > n {
			return GAS{}
		}
		return GAS{Space: m.u8(a + o), Width: m.u8(a + o + 1), Addr: m.u64(a + o + 4)}
	}
	port := func(o, x uintptr) uint32 {
		if p := m.u32(a + o); p != 0 {
			return p
		}
		if g := gas(x); g.Space == SpaceIO && g.Addr < 1<<16 {
			return uint32(g.Addr)
		}
		return 0
	}
	f.SCI = uint16(m.u8(a+46)) | uint16(m.u8(a+47))<<8
	f.SMICmd = m.u32(a + 48)
	f.ACPIEnable = m.u8(a + 52)
	f.PM1aEvt = port(56, 148)
	f.PM1aCnt = port(64, 172)
	f.PM1bCnt = port(68, 184)
	f.PMTimer = port(76, 208)
	f.PM1EvtLen = m.u8(a + 88)
	if m.u8(a+91) < 4 {
		f.PMTimer = 0
	}
	flags := m.u32(a + 112)
	f.Timer32 = flags&fadtTimerExt != 0
	f.HWReduced = flags&fadtHWReduced != 0
	f.SleepCtl = gas(244)
	if n >= 148 {
		f.DSDT = uintptr(m.u64(a + 140))
	}
	if f.DSDT == 0 {
		f.DSDT = uintptr(m.u32(a + 40))
	}
	return f, OK
}

// dsdt checks the DSDT at a and returns its end.
func (m mem) dsdt(a uintptr) (uintptr, Error) {
	if a == 0 || !m.is(a, "DSDT") {
		return 0, ErrNotFound
	}
	n, e := m.table(a)
	if e != OK {
		return 0, e
	}
	return a + n, OK
}

// SleepType is the SLP_TYPa value of the DSDT's \_S5 (soft off) package,
// the value a PM1a control write or the sleep control register takes to
// power the machine off: the bytes Name(_S5_, Package(n) {a, ...}) as
// ASL compilers and QEMU write them (a is ZeroOp, OneOp or a BytePrefix
// constant). A byte scan, not an AML interpreter: ok is false when there
// is no such name.
func SleepType(dsdt, off uintptr) (typ uint8, ok bool) {
	m := mem(off)
	end, e := m.dsdt(dsdt)
	if e != OK {
		return 0, false
	}
	for p := dsdt + hdrLen + 1; p+8 <= end; p++ {
		if !m.is(p, "_S5_") || m.u8(p-1) != 0x08 && m.u8(p-1) != '\\' || m.u8(p+4) != 0x12 {
			continue
		}
		q := p + 5 + 1 + uintptr(m.u8(p+5)>>6) + 1 // PkgLength, NumElements
		if q+2 > end {
			return 0, false
		}
		switch v := m.u8(q); v {
		case 0x00, 0x01:
			return v, true
		case 0x0A:
			return m.u8(q + 1), true
		}
		return 0, false
	}
	return 0, false
}

// GED is the Generic Event Device of a hardware-reduced machine (its
// _HID "ACPI0013"): where its event register is and its interrupt.
type GED struct {
	Base      uint64 // the event selector (QEMU: reading it returns and clears the events)
	GSI       uint32
	Level     bool
	ActiveLow bool
}

// GED events as QEMU's device reports them (hw/acpi/generic_event_device.c).
const GEDPowerDown = 1 << 1

// FindGED finds the GED in the DSDT: the string "ACPI0013", then within
// the next 256 bytes its Extended Interrupt descriptor and the first
// OperationRegion in system memory (QEMU's Device (GED) { _HID, _UID,
// _CRS, OperationRegion (EREG, SystemMemory, base, 4) ... }). A byte
// scan, not an AML interpreter.
func FindGED(dsdt, off uintptr) (GED, bool) {
	m := mem(off)
	end, e := m.dsdt(dsdt)
	if e != OK {
		return GED{}, false
	}
	for p := dsdt + hdrLen; p+8 <= end; p++ {
		if !m.is(p, "ACPI0013") {
			continue
		}
		var g GED
		found := 0
		for q := p + 8; q < p+256 && q+12 <= end && found != 3; q++ {
			switch {
			case found&1 == 0 && m.u8(q) == 0x89 && m.u8(q+1) >= 6 && m.u8(q+2) == 0 && m.u8(q+4) >= 1:
				f := m.u8(q + 3)
				g.Level, g.ActiveLow, g.GSI = f&2 == 0, f&4 != 0, m.u32(q+5)
				found |= 1
			case found&2 == 0 && m.u8(q) == 0x5B && m.u8(q+1) == 0x80 && m.u8(q+6) == 0: // OperationRegion, SystemMemory
				switch m.u8(q + 7) {
				case 0x0C:
					g.Base = uint64(m.u32(q + 8))
				case 0x0E:
					if q+16 <= end {
						g.Base = m.u64(q + 8)
					}
				}
				found |= 2
			}
		}
		if found == 3 && g.Base != 0 {
			return g, true
		}
	}
	return GED{}, false
}

// ISAOverride is the MADT's Interrupt Source Override for ISA IRQ irq
// (type 2): the GSI it arrives on and its MPS flags (bits 0-1 polarity:
// 1 high, 3 low; bits 2-3 trigger: 1 edge, 3 level). ok is false when
// the MADT overrides nothing for irq (then the GSI is irq).
func ISAOverride(rsdp, off uintptr, irq uint8) (gsi uint32, flags uint16, ok bool) {
	a, e := Find(rsdp, off, "APIC")
	if e != OK {
		return uint32(irq), 0, false
	}
	m := mem(off)
	end := a + uintptr(m.u32(a+4))
	for p := a + madtHdrLen; p+2 <= end; {
		typ, n := m.u8(p), uintptr(m.u8(p+1))
		if n < 2 || n > end-p {
			break
		}
		if typ == 2 && n >= 10 && m.u8(p+3) == irq {
			return m.u32(p + 4), uint16(m.u8(p+8)) | uint16(m.u8(p+9))<<8, true
		}
		p += n
	}
	return uint32(irq), 0, false
}

// HPETBase is the address of the HPET's registers from the "HPET" table
// (its Generic Address at offset 40); ErrNotFound if there is no table or
// it is not in memory space.
func HPETBase(rsdp, off uintptr) (uint64, Error) {
	a, e := Find(rsdp, off, "HPET")
	if e != OK {
		return 0, e
	}
	m := mem(off)
	if n, _ := m.table(a); n < 56 || m.u8(a+40) != SpaceMemory || m.u64(a+44) == 0 {
		return 0, ErrNotFound
	}
	return m.u64(a + 44), OK
}
