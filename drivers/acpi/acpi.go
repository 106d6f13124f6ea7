// Package acpi finds the processors of the machine in the firmware's ACPI
// tables (RSDP, then RSDT or XSDT, then the MADT), so the kernel knows which
// local APICs to start, and records the IO APICs for interrupt routing. It
// reads tables; it does not interpret AML or touch any device (the
// virtio-mmio transports of QEMU microvm's DSDT are found by a byte scan:
// virtio.go).
//
// Kernel-context: it runs at boot, before the Go runtime. No allocation, no
// runtime calls, no pointer stores: it reads physical memory at a fixed
// offset (0 on the identity map, the physical map's base later) and writes
// only pointer-free records into the caller's arrays. A table's length is
// checked (header to 1 MiB, no wrap) before the rest of it is read, and its
// checksum before its contents are used; the offset must map every table
// (on amd64 the physical map covers 4 GiB; an XSDT may point higher).
// Memory is read a byte at a time (the compiler does not merge the loads),
// so nothing assumes alignment, and the package is arch-neutral.
package acpi

import "unsafe"

// Error is the outcome of a look-up; OK is zero. It is a small code, not a
// Go error, so that returning one allocates nothing.
type Error uint8

const (
	OK                Error = iota
	ErrNoRSDP               // the boot protocol passed no RSDP (address 0)
	ErrRSDPSignature        // no "RSD PTR " at the RSDP address
	ErrRSDPChecksum         // the RSDP's (or XSDP's extended) checksum fails
	ErrRSDPLength           // the XSDP's length is below 36 or absurd
	ErrRootSignature        // the root table is not "RSDT" / "XSDT"
	ErrTableLength          // a table is shorter than its header, absurdly long, wraps, or has a partial entry
	ErrTableChecksum        // a table's bytes do not sum to zero
	ErrNotFound             // the root table lists no table with that signature
	ErrMADTEntry            // a MADT entry is shorter than its type or runs past the table
	ErrTooManyCPUs          // more usable processors than the caller's array; the count is still exact
	ErrTooManyIOAPICs       // more IO APICs than the caller's array; the count is still exact
	ErrTooManyDevices       // more virtio-mmio devices in the DSDT than the caller's array
)

var errText = [...]string{
	OK:                "ok",
	ErrNoRSDP:         "no RSDP",
	ErrRSDPSignature:  "bad RSDP signature",
	ErrRSDPChecksum:   "bad RSDP checksum",
	ErrRSDPLength:     "bad XSDP length",
	ErrRootSignature:  "root table is neither RSDT nor XSDT",
	ErrTableLength:    "bad table length",
	ErrTableChecksum:  "bad table checksum",
	ErrNotFound:       "table not found",
	ErrMADTEntry:      "bad MADT entry",
	ErrTooManyCPUs:    "more CPUs than fit",
	ErrTooManyIOAPICs: "more IO APICs than fit",
	ErrTooManyDevices: "more devices than fit",
}

func (e Error) String() string {
	if int(e) < len(errText) {
		return errText[e]
	}
	return "unknown acpi error"
}

// Layouts (ACPI 6.5, 5.2.5 RSDP, 5.2.6 header, 5.2.12 MADT).
const (
	rsdpLen     = 20 // the ACPI 1.0 part the first checksum covers
	xsdpLen     = 36
	hdrLen      = 36
	madtHdrLen  = 44
	maxTableLen = 1 << 20 // a MADT for 65536 x2APICs is 1 MiB

	flagPCATCompat = 1 << 0
)

// Processor flags (MADT entry types 0 and 9).
const (
	FlagEnabled       = 1 << 0
	FlagOnlineCapable = 1 << 1 // meaningful from MADT revision 5 (ACPI 6.3)
)

// CPU is one usable processor, from a Processor Local APIC entry (type 0)
// or a Processor Local x2APIC entry (type 9).
type CPU struct {
	APICID uint32 // local APIC ID; 32-bit x2APIC ID if X2APIC
	UID    uint32 // ACPI processor UID (8 bits in a type-0 entry)
	Flags  uint32 // FlagEnabled: running now; else FlagOnlineCapable: may be started
	X2APIC bool
}

// IOAPIC is one IO APIC (type 1).
type IOAPIC struct {
	ID      uint8
	Addr    uint32 // physical address of its registers
	GSIBase uint32 // first global system interrupt it serves
}

// MADT is what ReadMADT found besides the arrays it filled.
type MADT struct {
	LAPICAddr  uint64 // local APIC registers, after any type-5 override
	PCATCompat bool   // dual 8259s present (mask them before using the APICs)
	CPUs       int    // usable processors in the table, even beyond len(cpus)
	Disabled   int    // processor entries neither enabled nor online capable
	IOAPICs    int    // IO APICs in the table, even beyond len(ioapics)
}

// ReadMADT finds the MADT through the RSDP at physical address rsdp, reading
// physical address p at p+off. It stores the usable processors, in table
// order, in cpus and the IO APICs in ioapics, as many as fit. A processor is
// usable if it is enabled or (MADT revision 5 and later) online capable.
// ErrTooManyCPUs and ErrTooManyIOAPICs mean that everything else is valid
// and the arrays hold the first len(cpus) / len(ioapics) entries.
func ReadMADT(rsdp, off uintptr, cpus []CPU, ioapics []IOAPIC) (MADT, Error) {
	var r MADT
	a, e := Find(rsdp, off, "APIC")
	if e != OK {
		return r, e
	}
	m := mem(off)
	end := a + uintptr(m.u32(a+4))
	if end-a < madtHdrLen {
		return r, ErrTableLength
	}
	rev := m.u8(a + 8)
	r.LAPICAddr = uint64(m.u32(a + 36))
	r.PCATCompat = m.u32(a+40)&flagPCATCompat != 0
	for p := a + madtHdrLen; p < end; {
		if end-p < 2 {
			return r, ErrMADTEntry
		}
		typ, n := m.u8(p), uintptr(m.u8(p+1))
		if n < minEntryLen(typ) || n > end-p {
			return r, ErrMADTEntry
		}
		switch typ {
		case 0:
			r.addCPU(cpus, rev, CPU{UID: uint32(m.u8(p + 2)), APICID: uint32(m.u8(p + 3)), Flags: m.u32(p + 4)})
		case 9:
			r.addCPU(cpus, rev, CPU{APICID: m.u32(p + 4), Flags: m.u32(p + 8), UID: m.u32(p + 12), X2APIC: true})
		case 1:
			if r.IOAPICs < len(ioapics) {
				ioapics[r.IOAPICs] = IOAPIC{ID: m.u8(p + 2), Addr: m.u32(p + 4), GSIBase: m.u32(p + 8)}
			}
			r.IOAPICs++
		case 5:
			r.LAPICAddr = m.u64(p + 4)
		}
		p += n
	}
	switch {
	case r.CPUs > len(cpus):
		return r, ErrTooManyCPUs
	case r.IOAPICs > len(ioapics):
		return r, ErrTooManyIOAPICs
	}
	return r, OK
}

func (r *MADT) addCPU(cpus []CPU, rev uint8, c CPU) {
	if c.Flags&FlagEnabled == 0 && (rev < 5 || c.Flags&FlagOnlineCapable == 0) {
		r.Disabled++
		return
	}
	if r.CPUs < len(cpus) {
		cpus[r.CPUs] = c
	}
	r.CPUs++
}

// minEntryLen is the length of the MADT entry types ReadMADT reads, and the
// two bytes of type and length for the rest.
func minEntryLen(typ uint8) uintptr {
	switch typ {
	case 0:
		return 8
	case 1, 5:
		return 12
	case 9:
		return 16
	}
	return 2
}

// Find returns the physical address of the table with the 4-byte signature
// sig, after checking the RSDP, the root table and that table. The root
// table is the XSDT if the RSDP has revision 2 or later and gives one, else
// the RSDT. Null entries in the root table are skipped.
func Find(rsdp, off uintptr, sig string) (uintptr, Error) {
	m := mem(off)
	root, size, e := m.root(rsdp)
	if e != OK {
		return 0, e
	}
	if size == 8 && !m.is(root, "XSDT") || size == 4 && !m.is(root, "RSDT") {
		return 0, ErrRootSignature
	}
	n, e := m.table(root)
	if e != OK {
		return 0, e
	}
	if (n-hdrLen)&(size-1) != 0 {
		return 0, ErrTableLength
	}
	for p := root + hdrLen; p < root+n; p += size {
		t := uintptr(m.u32(p))
		if size == 8 {
			t = uintptr(m.u64(p))
		}
		if t == 0 || !m.is(t, sig) {
			continue
		}
		if _, e := m.table(t); e != OK {
			return 0, e
		}
		return t, OK
	}
	return 0, ErrNotFound
}

// mem reads physical memory at a fixed offset.
type mem uintptr

// root checks the RSDP and returns the root table's address and entry size.
func (m mem) root(rsdp uintptr) (uintptr, uintptr, Error) {
	if rsdp == 0 {
		return 0, 0, ErrNoRSDP
	}
	if !m.is(rsdp, "RSD PTR ") {
		return 0, 0, ErrRSDPSignature
	}
	if m.sum(rsdp, rsdpLen) != 0 {
		return 0, 0, ErrRSDPChecksum
	}
	if m.u8(rsdp+15) >= 2 {
		n := uintptr(m.u32(rsdp + 20))
		if n < xsdpLen || n > 4096 {
			return 0, 0, ErrRSDPLength
		}
		if m.sum(rsdp, n) != 0 {
			return 0, 0, ErrRSDPChecksum
		}
		if x := uintptr(m.u64(rsdp + 24)); x != 0 {
			return x, 8, OK
		}
	}
	return uintptr(m.u32(rsdp + 16)), 4, OK
}

// table checks the length and checksum of the table at a and returns its
// length.
func (m mem) table(a uintptr) (uintptr, Error) {
	n := uintptr(m.u32(a + 4))
	if n < hdrLen || n > maxTableLen || a+n < a {
		return 0, ErrTableLength
	}
	if m.sum(a, n) != 0 {
		return 0, ErrTableChecksum
	}
	return n, OK
}

func (m mem) sum(a, n uintptr) uint8 {
	var s uint8
	for i := uintptr(0); i < n; i++ {
		s += m.u8(a + i)
	}
	return s
}

func (m mem) is(a uintptr, sig string) bool {
	for i := 0; i < len(sig); i++ {
		if m.u8(a+uintptr(i)) != sig[i] {
			return false
		}
	}
	return len(sig) != 0
}

func (m mem) u8(pa uintptr) uint8 { return *at[uint8](pa + uintptr(m)) }

func (m mem) u32(pa uintptr) uint32 {
	return uint32(m.u8(pa)) | uint32(m.u8(pa+1))<<8 | uint32(m.u8(pa+2))<<16 | uint32(m.u8(pa+3))<<24
}

func (m mem) u64(pa uintptr) uint64 { return uint64(m.u32(pa)) | uint64(m.u32(pa+4))<<32 }

// at converts an address to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
