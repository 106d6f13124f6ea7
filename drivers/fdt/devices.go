package fdt

import "unsafe"

// Range is a physical address range.
type Range struct {
	Base, Size uint64
}

// Reserved stores the memory reservation block's entries (spec 5.3: ranges
// the kernel must not use, such as firmware) in out and returns how many
// there are, even beyond len(out).
func (f *FDT) Reserved(out []Range) (int, Error) {
	off := f.u32(16)
	if off < hdrLen || off%8 != 0 || off > f.TotalSize {
		return 0, ErrHeader
	}
	n := 0
	for o := off; ; o += 16 {
		if f.TotalSize-o < 16 {
			return n, ErrHeader
		}
		r := Range{Base: f.u64(o), Size: f.u64(o + 8)}
		if r.Base == 0 && r.Size == 0 {
			break
		}
		if n < len(out) {
			out[n] = r
		}
		n++
	}
	if n > len(out) {
		return n, ErrTooMany
	}
	return n, OK
}

func (f *FDT) u64(o uint32) uint64 { return uint64(f.u32(o))<<32 | uint64(f.u32(o+4)) }

// Memory stores the RAM ranges of the enabled /memory nodes (every node
// under the root whose device_type is "memory", every entry of its "reg",
// in the root's #address-cells/#size-cells) in out, skipping empty ones, and
// returns how many there are, even beyond len(out). ErrNotFound: no RAM.
func (f *FDT) Memory(out []Range) (int, Error) {
	it := f.Walk()
	n := 0
	for {
		node, e := f.Next(&it)
		if e == ErrNotFound {
			break
		}
		if e != OK {
			return n, e
		}
		if it.Depth() != 2 || !f.Okay(node) {
			continue
		}
		if p, e := f.Prop(node, "device_type"); e != OK || !f.StringIs(p, "memory") {
			continue
		}
		for i := 0; ; i++ {
			base, size, e := f.RegAt(&it, i)
			if e == ErrNotFound {
				break
			}
			if e != OK {
				return n, e
			}
			if size == 0 {
				continue
			}
			if n < len(out) {
				out[n] = Range{Base: base, Size: size}
			}
			n++
		}
	}
	switch {
	case n == 0:
		return 0, ErrNotFound
	case n > len(out):
		return n, ErrTooMany
	}
	return n, OK
}

// Interrupt is one GIC interrupt specifier decoded: ID is the GIC interrupt
// ID (SPI n is 32+n, PPI n is 16+n), Flags the specifier's third cell
// (trigger type in bits 0-3: 1 rising edge, 4 level high; on GICv2 the PPI
// CPU mask in bits 8-15).
type Interrupt struct {
	ID    uint32
	Flags uint32
}

// Interrupt types in the first cell of a GIC specifier.
const (
	irqSPI = 0
	irqPPI = 1
)

// interrupt decodes the i-th specifier of node n's "interrupts", which has
// cells cells (at least 3: type, number, flags) per specifier.
func (f *FDT) interrupt(n Node, i int, cells uint32) (Interrupt, Error) {
	p, e := f.Prop(n, "interrupts")
	if e != OK {
		return Interrupt{}, e
	}
	if cells < 3 || cells > 4 || p.Len%(4*cells) != 0 {
		return Interrupt{}, ErrValue
	}
	if i < 0 || uint64(i) >= uint64(p.Len/(4*cells)) {
		return Interrupt{}, ErrNotFound
	}
	k := i * int(cells)
	typ, _ := f.U32(p, k)
	num, _ := f.U32(p, k+1)
	flags, _ := f.U32(p, k+2)
	switch {
	case typ == irqSPI && num < 988:
		return Interrupt{ID: 32 + num, Flags: flags}, OK
	case typ == irqPPI && num < 16:
		return Interrupt{ID: 16 + num, Flags: flags}, OK
	}
	return Interrupt{}, ErrValue
}

// GIC is the interrupt controller: version 2 (distributor and CPU
// interface) or 3 (distributor and the first redistributor region).
type GIC struct {
	Version        int
	Dist, DistSize uint64
	// CPU interface (version 2).
	CPU, CPUSize uint64
	// Redistributors (version 3): the first region; each CPU's
	// redistributor is two 64 KiB frames (RD_base, SGI_base) in it.
	Redist, RedistSize uint64
	// InterruptCells is the controller's #interrupt-cells, the size of
	// an interrupt specifier in the tree.
	InterruptCells uint32
}

var gicV2Compat = [...]string{"arm,cortex-a15-gic", "arm,gic-400", "arm,cortex-a9-gic", "arm,cortex-a7-gic"}

// GIC finds the first enabled GICv2 ("arm,cortex-a15-gic", "arm,gic-400",
// "arm,cortex-a9-gic", "arm,cortex-a7-gic") or GICv3 ("arm,gic-v3") node.
func (f *FDT) GIC() (GIC, Error) {
	it := f.Walk()
	for {
		n, e := f.Next(&it)
		if e != OK {
			return GIC{}, e
		}
		if !f.Okay(n) {
			continue
		}
		g := GIC{}
		if f.Compatible(n, "arm,gic-v3") {
			g.Version = 3
		} else {
			for _, c := range gicV2Compat {
				if f.Compatible(n, c) {
					g.Version = 2
					break
				}
			}
		}
		if g.Version == 0 {
			continue
		}
		if g.Dist, g.DistSize, e = f.RegAt(&it, 0); e != OK {
			return GIC{}, e
		}
		if g.Version == 2 {
			g.CPU, g.CPUSize, e = f.RegAt(&it, 1)
		} else {
			g.Redist, g.RedistSize, e = f.RegAt(&it, 1)
		}
		if e != OK {
			return GIC{}, e
		}
		g.InterruptCells = 3
		if p, e := f.Prop(n, "#interrupt-cells"); e == OK {
			g.InterruptCells, _ = f.U32(p, 0)
		}
		return g, OK
	}
}

// Timer is the generic timer's per-CPU interrupts (PPIs), in the order of
// the "arm,armv8-timer" binding. On QEMU virt: 29, 30, 27, 26.
type Timer struct {
	SecurePhys, Phys, Virt, HypPhys Interrupt
}

// Timer finds the "arm,armv8-timer" node and decodes its "interrupts" with
// the GIC's #interrupt-cells.
func (f *FDT) Timer() (Timer, Error) {
	g, e := f.GIC()
	if e != OK {
		return Timer{}, e
	}
	it := f.Walk()
	n, e := f.FindCompatible(&it, "arm,armv8-timer")
	if e != OK {
		return Timer{}, e
	}
	var irq [4]Interrupt
	for i := range irq {
		if irq[i], e = f.interrupt(n, i, g.InterruptCells); e != OK {
			return Timer{}, e
		}
	}
	return Timer{SecurePhys: irq[0], Phys: irq[1], Virt: irq[2], HypPhys: irq[3]}, OK
}

// UART is a PL011: its registers and interrupt ID (0 if the node has none).
type UART struct {
	Base, Size uint64
	IRQ        uint32
}

// PL011 finds the console UART: the node /chosen's stdout-path names (a
// path or an alias in /aliases, options after ':' ignored) if it is an
// "arm,pl011", else the first enabled "arm,pl011" node. Its IRQ is decoded
// as a GIC specifier (0 without a GIC: the interrupt-parent is not
// followed).
func (f *FDT) PL011() (UART, Error) {
	var icells uint32 // 0: no GIC, no IRQ
	if g, e := f.GIC(); e == OK {
		icells = g.InterruptCells
	}
	if it, ok := f.stdout(); ok && f.Compatible(it.Node(), "arm,pl011") && f.Okay(it.Node()) {
		return f.uart(&it, icells)
	}
	it := f.Walk()
	if _, e := f.FindCompatible(&it, "arm,pl011"); e != OK {
		return UART{}, e
	}
	return f.uart(&it, icells)
}

func (f *FDT) uart(it *Iter, icells uint32) (UART, Error) {
	base, size, e := f.RegAt(it, 0)
	if e != OK {
		return UART{}, e
	}
	u := UART{Base: base, Size: size}
	if irq, e := f.interrupt(it.Node(), 0, icells); e == OK {
		u.IRQ = irq.ID
	}
	return u, OK
}

// stdout resolves /chosen's stdout-path (or linux,stdout-path).
func (f *FDT) stdout() (Iter, bool) {
	chosen, _, e := f.Find("/chosen")
	if e != OK {
		return Iter{}, false
	}
	p, e := f.Prop(chosen, "stdout-path")
	if e != OK {
		if p, e = f.Prop(chosen, "linux,stdout-path"); e != OK {
			return Iter{}, false
		}
	}
	path := f.str(p)
	for i := 0; i < len(path); i++ {
		if path[i] == ':' {
			path = path[:i]
			break
		}
	}
	if len(path) > 0 && path[0] != '/' {
		aliases, _, e := f.Find("/aliases")
		if e != OK {
			return Iter{}, false
		}
		if p, e = f.Prop(aliases, path); e != OK {
			return Iter{}, false
		}
		path = f.str(p)
	}
	it, e := f.FindIter(path)
	return it, e == OK
}

// str views a NUL-terminated string property in place (empty if it is
// not terminated). The string points into the blob: keep it on the stack.
func (f *FDT) str(p Prop) string {
	if p.Len == 0 || f.u8(p.Off+p.Len-1) != 0 {
		return ""
	}
	l, _ := f.strlen(p.Off, p.Off+p.Len)
	if l == 0 {
		return ""
	}
	return unsafe.String(at[byte](f.Base+uintptr(p.Off)), int(l))
}

// Conduit is how PSCI calls reach the firmware.
type Conduit uint8

const (
	ConduitNone Conduit = iota
	ConduitHVC          // HVC #0: firmware at EL2 (QEMU's own PSCI when the guest runs at EL1)
	ConduitSMC          // SMC #0: firmware at EL3 (QEMU with virtualization=on or secure=on)
)

// PSCI reads /psci's "method".
func (f *FDT) PSCI() (Conduit, Error) {
	n, _, e := f.Find("/psci")
	if e != OK {
		return ConduitNone, e
	}
	p, e := f.Prop(n, "method")
	if e != OK {
		return ConduitNone, e
	}
	switch {
	case f.StringIs(p, "hvc"):
		return ConduitHVC, OK
	case f.StringIs(p, "smc"):
		return ConduitSMC, OK
	}
	return ConduitNone, ErrValue
}

// CPU is one processor: its MPIDR affinity fields (Aff3 in bits 32-39,
// Aff2-Aff0 in bits 0-23, as in MPIDR_EL1) from its "reg".
type CPU struct {
	MPIDR uint64
	Node  Node
}

// CPUs stores the enabled /cpus/cpu nodes (device_type "cpu"), in tree
// order, in out and returns how many there are, even beyond len(out).
func (f *FDT) CPUs(out []CPU) (int, Error) {
	it := f.Walk()
	n := 0
	in := false // inside /cpus
	for {
		node, e := f.Next(&it)
		if e == ErrNotFound {
			break
		}
		if e != OK {
			return n, e
		}
		switch d := it.Depth(); {
		case d == 2:
			in = f.NameIs(node, "cpus")
			continue
		case d != 3 || !in:
			continue
		}
		if p, e := f.Prop(node, "device_type"); e != OK || !f.StringIs(p, "cpu") || !f.Okay(node) {
			continue
		}
		c := it.Parent()
		if c.Addr > 2 {
			return n, ErrCells
		}
		p, e := f.Prop(node, "reg")
		if e != OK {
			return n, e
		}
		mpidr, e := f.Cells(p, 0, c.Addr)
		if e != OK {
			return n, e
		}
		if n < len(out) {
			out[n] = CPU{MPIDR: mpidr, Node: node}
		}
		n++
	}
	switch {
	case n == 0:
		return 0, ErrNotFound
	case n > len(out):
		return n, ErrTooMany
	}
	return n, OK
}

// Device is a memory-mapped device node: its first register range and its
// first interrupt (a GIC interrupt ID; 0 if it has none or there is no
// GIC).
type Device struct {
	Base, Size uint64
	IRQ        uint32
	IRQFlags   uint32 // the specifier's third cell: 1 rising edge, 4 level high
}

// NextDevice continues the walk it to the next enabled node compatible
// with s (a fresh Walk starts at the root) and decodes it; ErrNotFound
// after the last. QEMU virt's 32 "virtio,mmio" transports are found so.
func (f *FDT) NextDevice(it *Iter, s string) (Device, Error) {
	var icells uint32
	if g, e := f.GIC(); e == OK {
		icells = g.InterruptCells
	}
	if _, e := f.FindCompatible(it, s); e != OK {
		return Device{}, e
	}
	base, size, e := f.RegAt(it, 0)
	if e != OK {
		return Device{}, e
	}
	d := Device{Base: base, Size: size}
	if irq, e := f.interrupt(it.Node(), 0, icells); e == OK {
		d.IRQ, d.IRQFlags = irq.ID, irq.Flags
	}
	return d, OK
}
