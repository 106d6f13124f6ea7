// Package gic drives the Arm Generic Interrupt Controller, version 2
// (distributor and memory-mapped CPU interface) or version 3 (distributor,
// one redistributor per CPU, and the system-register CPU interface ICC_*),
// behind one API: distributor set-up on the boot CPU, per-CPU set-up,
// enable/disable/route an interrupt, acknowledge and end it, and send a
// software-generated interrupt (SGI) to a CPU. QEMU virt has a GICv2 by
// default and a GICv3 with gic-version=3; the addresses come from the
// device tree (package fdt). It is our own: TamaGo's arm64/gic does not
// assemble with the stock Go toolchain for linux/arm64.
//
// Every interrupt is Group 1 (GICv3: non-secure Group 1, signalled as IRQ
// at EL1) except on GICv2, where the kernel owns a GIC without security
// extensions (QEMU virt) and Group 0 with FIQs off is an IRQ too; firmware
// that ran before us on a secure GIC has set the groups, and our writes to
// them are ignored. LPIs, ITS, GICv4 and the virtual CPU interface are not
// used. On GICv3 the code that drops from EL2 to EL1 must first call
// EnableSREAtEL2, or EL1 cannot use the system registers.
//
// Kernel-context: no allocation, no runtime calls; the state is integers
// set by Init. Init runs once, before InitCPU on any CPU; InitCPU runs on
// each CPU with interrupts masked. Configuration (Enable, Disable, SetEdge,
// Route) read-modify-writes registers shared by several interrupts: the
// caller serialises it (boot, or under the kernel's lock). Ack, EOI and
// SendSGI may run on every CPU at once.
package gic

import "yolk/drivers/mmio"

// Interrupt ID spaces (GIC architecture specification IHI 0069H, 2.2).
const (
	SGIBase  = 0    // 0-15: software generated, per CPU
	PPIBase  = 16   // 16-31: private peripheral, per CPU (timers: 26, 27, 29, 30 on virt)
	SPIBase  = 32   // 32-1019: shared peripheral (virt's PL011: 33)
	MaxSPI   = 1019 // the last SPI ID
	Spurious = 1023 // what Ack returns when no interrupt is pending
	LPIBase  = 8192 // GICv3 message-based interrupts (not used)

	// DefaultPriority is given to every interrupt at set-up; lower
	// values are more urgent.
	DefaultPriority = 0xA0
)

// IsSGI, IsPPI and IsSPI classify an interrupt ID.
func IsSGI(id uint32) bool { return id < PPIBase }
func IsPPI(id uint32) bool { return id >= PPIBase && id < SPIBase }
func IsSPI(id uint32) bool { return id >= SPIBase && id <= MaxSPI }

// Error is the outcome of set-up; OK is zero.
type Error uint8

const (
	OK           Error = iota
	ErrVersion         // the configuration's version is neither 2 nor 3
	ErrNoRedist        // GICv3: no redistributor has the calling CPU's affinity
	ErrSRE             // GICv3: ICC_SRE_EL1.SRE stays 0 (EL2 did not allow system-register access)
	ErrNotInit         // InitCPU before Init
	ErrTimeout         // a register-write-pending or wake bit did not clear
	ErrBadConfig       // missing addresses
	errCount
)

var errText = [...]string{
	OK:           "ok",
	ErrVersion:   "GIC version not 2 or 3",
	ErrNoRedist:  "no redistributor for this CPU",
	ErrSRE:       "GICv3 system registers disabled",
	ErrNotInit:   "GIC not initialised",
	ErrTimeout:   "GIC register did not settle",
	ErrBadConfig: "GIC addresses missing",
}

func (e Error) String() string {
	if e < errCount {
		return errText[e]
	}
	return "unknown gic error"
}

// Config is where the controller is (fdt.GIC gives it).
type Config struct {
	Version int
	Dist    uintptr
	CPU     uintptr // GICv2 CPU interface
	Redist  uintptr // GICv3 first redistributor region
	// RedistSize bounds the search for the calling CPU's redistributor
	// (0: until a frame says it is the last).
	RedistSize uintptr
}

// Target names a CPU for SendSGI and Route: on GICv2 its CPU interface
// mask (one bit, from the banked ITARGETSR0), on GICv3 its MPIDR
// affinity (Aff3 in bits 32-39, Aff2-Aff0 in bits 0-23).
type Target uint64

// CPU is the calling CPU's view, returned by InitCPU; keep it in the
// per-CPU block and pass it back.
type CPU struct {
	Target Target
	rd     uintptr // GICv3: this CPU's redistributor (RD_base)
}

// Register access; hosted tests replace them with a model.
var (
	read32  = mmio.Read32
	write32 = mmio.Write32
	read64  = mmio.Read64
	write64 = mmio.Write64
)

// The configuration, set by Init.
var (
	version           int
	dist, cpuif       uintptr
	redist, redistEnd uintptr
	lines             uint32 // interrupt IDs the distributor implements (32 * (ITLinesNumber+1))
	bootTarget        Target
)

// spin bounds the waits for the GIC; QEMU answers at once, hardware in a
// few hundred cycles.
const spin = 1 << 24

// Distributor registers common to both versions (IHI 0048B 4.3; IHI 0069H 12.9).
const (
	gicdCTLR       = 0x000
	gicdTYPER      = 0x004
	gicdIGROUPR    = 0x080
	gicdISENABLER  = 0x100
	gicdICENABLER  = 0x180
	gicdICPENDR    = 0x280
	gicdICACTIVER  = 0x380
	gicdIPRIORITYR = 0x400
	gicdITARGETSR  = 0x800 // GICv2
	gicdICFGR      = 0xC00
	gicdSGIR       = 0xF00  // GICv2
	gicdIROUTER    = 0x6000 // GICv3, 8 bytes per SPI from ID 0
)

// Init sets up the distributor from the calling (boot) CPU: every SPI
// disabled, not pending, Group 1 (GICv3), level-triggered, priority
// DefaultPriority, routed to the calling CPU; then enables the
// distributor. Call InitCPU on each CPU afterwards, the boot CPU first.
func Init(c Config) Error {
	if c.Dist == 0 || (c.Version == 2 && c.CPU == 0) || (c.Version == 3 && c.Redist == 0) {
		return ErrBadConfig
	}
	switch c.Version {
	case 2, 3:
	default:
		return ErrVersion
	}
	version, dist, cpuif, redist = c.Version, c.Dist, c.CPU, c.Redist
	redistEnd = 0
	if c.RedistSize != 0 {
		redistEnd = c.Redist + c.RedistSize
	}
	if version == 2 {
		return initDistV2()
	}
	return initDistV3()
}

// spis configures the SPIs' registers shared by both versions.
func spis(group uint32) {
	for id := uint32(SPIBase); id < lines; id += 32 {
		write32(dist+gicdICENABLER+uintptr(id/8), 0xFFFFFFFF)
		write32(dist+gicdICPENDR+uintptr(id/8), 0xFFFFFFFF)
		write32(dist+gicdICACTIVER+uintptr(id/8), 0xFFFFFFFF)
		write32(dist+gicdIGROUPR+uintptr(id/8), group)
	}
	for id := uint32(SPIBase); id < lines; id += 4 {
		write32(dist+gicdIPRIORITYR+uintptr(id), DefaultPriority*0x01010101)
	}
	for id := uint32(SPIBase); id < lines; id += 16 {
		write32(dist+gicdICFGR+uintptr(id/4), 0) // level-sensitive
	}
}

func readLines() {
	lines = 32 * (read32(dist+gicdTYPER)&0x1F + 1)
	if lines > MaxSPI+1 {
		lines = MaxSPI + 1
	}
}

// Lines is the number of interrupt IDs the distributor implements
// (SGIs, PPIs and SPIs: 32 * (GICD_TYPER.ITLinesNumber + 1), at most 1020).
func Lines() uint32 { return lines }

// Version is 2 or 3 after Init.
func Version() int { return version }

// Enable sets interrupt id's priority (lower is more urgent; a GIC may
// ignore low bits) and enables it: an SGI or PPI for the calling CPU c, an
// SPI for whichever CPU it is routed to.
func Enable(c CPU, id uint32, prio uint8) {
	base := regsFor(c, id)
	if base == 0 {
		return
	}
	shift := 8 * (id % 4)
	p := base + gicdIPRIORITYR + uintptr(id&^3)
	write32(p, read32(p)&^(0xFF<<shift)|uint32(prio)<<shift)
	write32(base+gicdISENABLER+uintptr(id/32*4), 1<<(id%32))
}

// Disable disables interrupt id (for c if it is an SGI or PPI).
func Disable(c CPU, id uint32) {
	base := regsFor(c, id)
	if base == 0 {
		return
	}
	write32(base+gicdICENABLER+uintptr(id/32*4), 1<<(id%32))
	if version == 3 {
		waitRWP(c, id)
	}
}

// SetEdge makes PPI or SPI id edge-triggered (true) or level-sensitive
// (false, the default). SGIs are always edge-triggered.
func SetEdge(c CPU, id uint32, edge bool) {
	if IsSGI(id) {
		return
	}
	base := regsFor(c, id)
	if base == 0 {
		return
	}
	r := base + gicdICFGR + uintptr(id/16*4)
	bit := uint32(2) << (2 * (id % 16)) // Int_config[1]
	v := read32(r) &^ bit
	if edge {
		v |= bit
	}
	write32(r, v)
}

// Route sends SPI id to the CPU t.
func Route(id uint32, t Target) {
	if !IsSPI(id) {
		return
	}
	if version == 2 {
		r := dist + gicdITARGETSR + uintptr(id&^3)
		shift := 8 * (id % 4)
		write32(r, read32(r)&^(0xFF<<shift)|uint32(t&0xFF)<<shift)
		return
	}
	write64(dist+gicdIROUTER+uintptr(id)*8, uint64(t)&affMask)
}

// regsFor is the frame holding interrupt id's enable, priority and
// configuration registers: the distributor, or on GICv3 for an SGI or PPI
// the calling CPU's SGI_base frame; 0 (do nothing) before Init, or for a
// CPU that InitCPU did not return.
func regsFor(c CPU, id uint32) uintptr {
	if version == 3 && id < SPIBase {
		if c.rd == 0 {
			return 0
		}
		return c.rd + gicrSGIBase
	}
	return dist
}

// ID is the interrupt ID in a value Ack returned.
func ID(iar uint32) uint32 {
	if version == 2 {
		return iar & 0x3FF // bits 10-12: the SGI's source CPU
	}
	return iar & 0xFFFFFF
}

// Ack acknowledges the highest-priority pending interrupt and returns the
// raw acknowledge value: pass it to ID, and back to EOI when done. ID
// Spurious means nothing was pending (do not EOI it).
func Ack() uint32 {
	if version == 2 {
		return read32(cpuif + giccIAR)
	}
	return uint32(readIAR1())
}

// EOI ends the interrupt Ack returned (priority drop and deactivation).
func EOI(iar uint32) {
	if version == 2 {
		write32(cpuif+giccEOIR, iar)
		return
	}
	writeEOIR1(uint64(iar))
}

// SendSGI raises SGI id (0-15) on CPU t. Memory writes before it are
// visible to t's handler.
func SendSGI(t Target, id uint32) {
	if version == 2 {
		write32(dist+gicdSGIR, SGIR(t, id))
		return
	}
	writeSGI1R(SGI1R(t, id))
}

// SetPriorityMask sets the calling CPU's priority mask: only interrupts
// more urgent than v (a lower value) are signalled to it; 0xFF lets every
// priority through (the set-up's value). A CPU that waits for one urgent
// interrupt with WFI while the others stay pending masks them with it.
func SetPriorityMask(v uint8) {
	if version == 2 {
		write32(cpuif+giccPMR, uint32(v))
		return
	}
	writePMR(uint64(v))
}

// SendSGIOthers raises SGI id on every CPU but the caller.
func SendSGIOthers(id uint32) {
	if version == 2 {
		write32(dist+gicdSGIR, 1<<24|id&0xF)
		return
	}
	writeSGI1R(1<<40 | uint64(id&0xF)<<24) // IRM: all but self
}
