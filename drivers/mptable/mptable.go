// Package mptable finds the processors and the IO APICs in the Intel
// MultiProcessor Specification (1.4) tables, for machines without an ACPI
// MADT: Firecracker (up to 1.7, and later ones started without ACPI) and
// QEMU microvm with acpi=off (its firmware, qboot, writes the same table)
// put an MP floating pointer at 0x9FC00, the last KiB of base memory.
//
// Kernel-context, like package acpi: it runs at boot, before the Go
// runtime; no allocation, no runtime calls, no pointer stores. It reads
// physical memory at a fixed offset (the physical map's base) a byte at a
// time, checks every length and checksum before using what they cover, and
// writes pointer-free records (package acpi's CPU and IOAPIC, so the kernel
// keeps one list whichever table it read) into the caller's arrays.
package mptable

import (
	"unsafe"

	"yolk/drivers/acpi"
)

// Error is the outcome of Read; OK is zero.
type Error uint8

const (
	OK                Error = iota
	ErrNotFound             // no "_MP_" floating pointer in the areas the specification names
	ErrPointer              // the floating pointer's length, revision or checksum is wrong
	ErrTableSignature       // the configuration table is not "PCMP"
	ErrTableLength          // its length is below its header, absurd, or past 4 GiB
	ErrTableChecksum        // its base table's bytes do not sum to zero
	ErrEntry                // an entry of unknown type, or running past the table
	ErrTooManyCPUs          // more enabled processors than the caller's array; the count is still exact
	ErrTooManyIOAPICs       // more IO APICs than the caller's array; the count is still exact
)

var errText = [...]string{
	OK:                "ok",
	ErrNotFound:       "no MP floating pointer",
	ErrPointer:        "bad MP floating pointer",
	ErrTableSignature: "MP configuration table signature is not PCMP",
	ErrTableLength:    "bad MP configuration table length",
	ErrTableChecksum:  "MP configuration table checksum",
	ErrEntry:          "bad MP configuration table entry",
	ErrTooManyCPUs:    "more processors than the kernel has room for",
	ErrTooManyIOAPICs: "more IO APICs than the kernel has room for",
}

func (e Error) String() string {
	if int(e) < len(errText) {
		return errText[e]
	}
	return "unknown MP table error"
}

// Table is what Read found besides the arrays it filled.
type Table struct {
	Pointer   uintptr // physical address of the floating pointer
	Default   uint8   // a default configuration's number (no configuration table), else 0
	LAPICAddr uint32  // local APIC registers
	CPUs      int     // enabled processors, even beyond len(cpus)
	BootCPU   uint32  // the APIC ID of the processor flagged as the bootstrap one
	IOAPICs   int     // enabled IO APICs, even beyond len(ioapics)
}

// Layout (MP specification 1.4, chapter 4).
const (
	pointerLen    = 16
	headerLen     = 44
	maxTableLen   = 64 << 10
	defaultIOAPIC = 0xFEC00000
	defaultLAPIC  = 0xFEE00000

	entryProcessor = 0
	entryBus       = 1
	entryIOAPIC    = 2
	entryIOInt     = 3
	entryLocalInt  = 4

	cpuEnabled    = 1 << 0
	cpuBootstrap  = 1 << 1
	ioapicEnabled = 1 << 0

	// pinsPerIOAPIC numbers the global system interrupts of a second IO
	// APIC: the table does not give its pin count (the chip's version
	// register does); every machine this serves has one IO APIC.
	pinsPerIOAPIC = 24
)

// Find returns the physical address of the MP floating pointer, searched
// where the specification (and Linux's smp_scan_config) looks: the first
// KiB of the EBDA that the BIOS data area names, the first KiB of memory,
// the last KiB of 640 KiB base memory, and the BIOS ROM from 0xF0000,
// each on 16-byte boundaries. Memory is read at p+off.
func Find(off uintptr) (uintptr, Error) {
	m := mem(off)
	var areas [4][2]uintptr
	n := 0
	if ebda := uintptr(m.u8(0x40E)) | uintptr(m.u8(0x40F))<<8; ebda != 0 {
		if a := ebda << 4; a >= 0x80000 && a < 0xA0000 {
			areas[n] = [2]uintptr{a, a + 1024}
			n++
		}
	}
	areas[n] = [2]uintptr{0, 1024}
	areas[n+1] = [2]uintptr{0x9FC00, 0xA0000}
	areas[n+2] = [2]uintptr{0xF0000, 0x100000}
	n += 3
	bad := false
	for _, ar := range areas[:n] {
		for a := ar[0]; a+pointerLen <= ar[1]; a += 16 {
			if !m.is(a, "_MP_") {
				continue
			}
			if m.u8(a+8) == 1 && m.sum(a, pointerLen) == 0 {
				return a, OK
			}
			bad = true
		}
	}
	if bad {
		return 0, ErrPointer
	}
	return 0, ErrNotFound
}

// Read finds the MP tables (Find) and stores the enabled processors, in
// table order, in cpus and the enabled IO APICs in ioapics, as many as
// fit; the n-th IO APIC serves global system interrupts from 24·n. A
// floating pointer naming a default configuration (no table) describes
// two processors, APIC IDs 0 and 1, and one IO APIC at 0xFEC00000.
// ErrTooManyCPUs and ErrTooManyIOAPICs mean that everything else is valid
// and the arrays hold the first len(cpus) / len(ioapics) entries.
func Read(off uintptr, cpus []acpi.CPU, ioapics []acpi.IOAPIC) (Table, Error) {
	var r Table
	fp, e := Find(off)
	if e != OK {
		return r, e
	}
	r.Pointer = fp
	m := mem(off)
	if d := m.u8(fp + 11); d != 0 {
		r.Default, r.LAPICAddr = d, defaultLAPIC
		r.addCPU(cpus, 0, cpuEnabled|cpuBootstrap)
		r.addCPU(cpus, 1, cpuEnabled)
		r.addIOAPIC(ioapics, 2, defaultIOAPIC)
		return r, r.fits(cpus, ioapics)
	}
	t := uintptr(m.u32(fp + 4))
	if t == 0 {
		return r, ErrPointer
	}
	if !m.is(t, "PCMP") {
		return r, ErrTableSignature
	}
	n := uintptr(m.u8(t+4)) | uintptr(m.u8(t+5))<<8
	if n < headerLen || n > maxTableLen || t+n > 1<<32 {
		return r, ErrTableLength
	}
	if m.sum(t, n) != 0 {
		return r, ErrTableChecksum
	}
	r.LAPICAddr = m.u32(t + 36)
	end := t + n
	for p := t + headerLen; p < end; {
		size := uintptr(8)
		switch m.u8(p) {
		case entryProcessor:
			size = 20
			if end-p >= size {
				r.addCPU(cpus, uint32(m.u8(p+1)), m.u8(p+3))
			}
		case entryIOAPIC:
			if end-p >= size && m.u8(p+3)&ioapicEnabled != 0 {
				r.addIOAPIC(ioapics, m.u8(p+1), m.u32(p+4))
			}
		case entryBus, entryIOInt, entryLocalInt:
		default:
			return r, ErrEntry
		}
		if end-p < size {
			return r, ErrEntry
		}
		p += size
	}
	return r, r.fits(cpus, ioapics)
}

func (r *Table) addCPU(cpus []acpi.CPU, id uint32, flags uint8) {
	if flags&cpuEnabled == 0 {
		return
	}
	if flags&cpuBootstrap != 0 {
		r.BootCPU = id
	}
	if r.CPUs < len(cpus) {
		cpus[r.CPUs] = acpi.CPU{APICID: id, Flags: acpi.FlagEnabled}
	}
	r.CPUs++
}

func (r *Table) addIOAPIC(ioapics []acpi.IOAPIC, id uint8, addr uint32) {
	if r.IOAPICs < len(ioapics) {
		ioapics[r.IOAPICs] = acpi.IOAPIC{ID: id, Addr: addr, GSIBase: uint32(r.IOAPICs) * pinsPerIOAPIC}
	}
	r.IOAPICs++
}

func (r *Table) fits(cpus []acpi.CPU, ioapics []acpi.IOAPIC) Error {
	switch {
	case r.CPUs > len(cpus):
		return ErrTooManyCPUs
	case r.IOAPICs > len(ioapics):
		return ErrTooManyIOAPICs
	}
	return OK
}

// mem reads physical memory at a fixed offset.
type mem uintptr

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
	return true
}

func (m mem) u8(pa uintptr) uint8 { return *at[uint8](pa + uintptr(m)) }

func (m mem) u32(pa uintptr) uint32 {
	return uint32(m.u8(pa)) | uint32(m.u8(pa+1))<<8 | uint32(m.u8(pa+2))<<16 | uint32(m.u8(pa+3))<<24
}

// at converts an address to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
