package virtio

// A PCIe host bridge without firmware behind it (QEMU microvm with
// pcie=on, booted through PVH) leaves the functions' BARs at 0, and a
// VMM's bridge (Cloud Hypervisor) may place 64-bit BARs above 4 GiB,
// where the kernel's physical map does not reach; neither wires INTx for
// virtio (Cloud Hypervisor's virtio-pci devices interrupt through MSI-X
// only). PCIBus opens a function there: its memory BARs placed in the
// bridge's 32-bit window if they are unassigned or out of reach, its
// interrupts sent as one MSI-X message.

// Further configuration-space fields and bits.
const (
	cfgIntLine = 0x3c
	cmdIO      = 1 << 0
	capMSIX    = 0x11 // the MSI-X capability's ID (PCI Local Bus 3.0, 6.8.2)

	msixEnable   = 1 << 15 // Message Control: MSI-X on
	msixFuncMask = 1 << 14 // Message Control: every vector masked
	msixEntry    = 16      // a table entry: address low, high, data, vector control

	// NoVector is VIRTIO_MSI_NO_VECTOR: no MSI-X vector for a queue or
	// configuration changes.
	NoVector = 0xffff
)

// Window is a range of bus addresses [Base, End) for memory BARs, and the
// next free address in it.
type Window struct {
	Base, End, next uint64
}

// NewWindow is the window of size bytes at base, all of it free.
func NewWindow(base, size uint64) Window {
	return Window{Base: base, End: base + size, next: base}
}

// take reserves size bytes (a power of two) aligned to their size.
func (w *Window) take(size uint64) (uint64, bool) {
	a := (w.next + size - 1) &^ (size - 1)
	if size == 0 || a < w.next || a+size < a || a+size > w.End {
		return 0, false
	}
	w.next = a + size
	return a, true
}

// PCIBus is how the kernel opens bus 0's virtio functions: the
// configuration access, where the physical map puts physical address 0
// (PhysOff) and how far it reaches (Limit), the window BARs are placed in
// (End 0: the firmware's BARs are used as they are), and the MSI-X
// message every device sends (MSIAddr 0: INTx, on the line firmware
// wrote in the Interrupt Line register).
type PCIBus struct {
	Config  PCIConfig
	PhysOff uintptr
	Limit   uint64
	Window  Window
	MSIAddr uint64
	MSIData uint32
}

// Reserve moves the window's next free address past every memory BAR
// already inside it of the functions on bus 0, so that a BAR placed later
// overlaps none of them. It probes their sizes.
func (b *PCIBus) Reserve() {
	c := b.Config
	for dev := uint8(0); dev < 32; dev++ {
		fns := uint8(1)
		if c.Read16(BDF(0, dev, 0), cfgVendor) == 0xffff {
			continue
		}
		if c.Read8(BDF(0, dev, 0), cfgHeaderType)&0x80 != 0 {
			fns = 8
		}
		for fn := uint8(0); fn < fns; fn++ {
			bdf := BDF(0, dev, fn)
			if c.Read16(bdf, cfgVendor) == 0xffff || c.Read8(bdf, cfgHeaderType)&0x7f != 0 {
				continue // absent, or a bridge (its BARs are two at most, and its windows are not BARs)
			}
			for i := uint8(0); i < 6; i++ {
				a, size, wide, mem := c.probeBAR(bdf, i)
				if mem && size != 0 && a >= b.Window.Base && a < b.Window.End && a+size > b.Window.next {
					b.Window.next = a + size
				}
				if wide {
					i++
				}
			}
		}
	}
}

// probeBAR reads memory BAR i's address and, with decoding off for the
// moment, its size (all ones written, the size bits read back, the
// address restored): mem is false for an I/O BAR or none, wide for a
// 64-bit BAR (slot i+1 holds its high half).
func (c PCIConfig) probeBAR(bdf uint16, i uint8) (addr, size uint64, wide, mem bool) {
	off := cfgBAR0 + 4*uint16(i)
	lo := c.Read32(bdf, off)
	if lo&1 != 0 {
		return 0, 0, false, false
	}
	wide = lo>>1&3 == 2 && i < 5
	var hi uint32
	if wide {
		hi = c.Read32(bdf, off+4)
	}
	cmd := c.Read16(bdf, cfgCommand)
	c.Write16(bdf, cfgCommand, cmd&^(cmdMemory|cmdIO))
	c.Write32(bdf, off, 0xffffffff)
	mask := uint64(c.Read32(bdf, off) &^ 0xf)
	c.Write32(bdf, off, lo)
	if wide {
		c.Write32(bdf, off+4, 0xffffffff)
		mask |= uint64(c.Read32(bdf, off+4)) << 32
		c.Write32(bdf, off+4, hi)
	} else if mask != 0 {
		mask |= 0xffffffff << 32
	}
	c.Write16(bdf, cfgCommand, cmd)
	if mask == 0 {
		return 0, 0, wide, false // not implemented
	}
	return uint64(lo&^0xf) | uint64(hi)<<32, -mask, wide, true
}

// assign places each memory BAR of the function at bdf that is
// unassigned (0) or does not end below Limit in the window, aligned to
// its size, memory decoding off meanwhile.
func (b *PCIBus) assign(bdf uint16) Error {
	c := b.Config
	for i := uint8(0); i < 6; i++ {
		a, size, wide, mem := c.probeBAR(bdf, i)
		if mem && size != 0 && (a == 0 || a+size > b.Limit || a+size < a) {
			na, ok := b.Window.take(size)
			if !ok {
				return ErrBARWindow
			}
			cmd := c.Read16(bdf, cfgCommand)
			c.Write16(bdf, cfgCommand, cmd&^cmdMemory)
			off := cfgBAR0 + 4*uint16(i)
			c.Write32(bdf, off, uint32(na)|c.Read32(bdf, off)&0xf)
			if wide {
				c.Write32(bdf, off+4, uint32(na>>32))
			}
			c.Write16(bdf, cfgCommand, cmd)
		}
		if wide {
			i++
		}
	}
	return OK
}

// findCap returns the offset of the function's first capability with ID
// id, 0 if none; the walk is bounded as Caps' is.
func (c PCIConfig) findCap(bdf uint16, id uint8) uint16 {
	if c.Read16(bdf, cfgStatus)&statusCaps == 0 {
		return 0
	}
	var seen uint64
	for p := uint16(c.Read8(bdf, cfgCapPtr) &^ 3); p != 0; p = uint16(c.Read8(bdf, p+1) &^ 3) {
		if p < capListMin || p > capListMax-4 || seen&(1<<(p/4)) != 0 {
			return 0
		}
		seen |= 1 << (p / 4)
		if c.Read8(bdf, p) == id {
			return p
		}
	}
	return 0
}

// enableMSIX points MSI-X table entry 0 of the function at bdf at the
// message (addr, data), unmasks it and enables MSI-X (which turns INTx
// off), and marks d to give each queue vector 0.
func (b *PCIBus) enableMSIX(bdf uint16, d *Device) Error {
	c := b.Config
	p := c.findCap(bdf, capMSIX)
	if p == 0 {
		return ErrNoMSIX
	}
	tbl := c.Read32(bdf, p+4)
	base, e := c.bar(bdf, uint8(tbl&7))
	if e != OK || tbl&7 > 5 {
		return ErrNoMSIX
	}
	at := base + uint64(tbl&^7)
	if at < base || at+msixEntry > b.Limit {
		return ErrBARLimit
	}
	t := uintptr(at) + b.PhysOff
	write32(t+12, 1) // masked while it changes
	write32(t, uint32(b.MSIAddr))
	write32(t+4, uint32(b.MSIAddr>>32))
	write32(t+8, b.MSIData)
	write32(t+12, 0)
	ctl := c.Read16(bdf, p+2)
	c.Write16(bdf, p+2, ctl&^msixFuncMask|msixEnable)
	d.msix = true
	return OK
}

// Open opens the virtio function at bdf: its BARs placed in the window
// where needed (Window.End nonzero), its structures checked to lie
// below Limit, OpenPCI, then its interrupt: MSI-X (MSIAddr nonzero; line
// 0) or the INTx line firmware wrote (ErrNoIRQ if none). A device that
// opened and then failed is reset.
func (b *PCIBus) Open(bdf uint16) (d Device, line uint8, e Error) {
	c := b.Config
	if b.Window.End != 0 {
		if e = b.assign(bdf); e != OK {
			return d, 0, e
		}
	}
	caps, e := c.Caps(bdf)
	if e != OK {
		return d, 0, e
	}
	for _, s := range [...]PCIStruct{caps.Common, caps.Notify, caps.ISR, caps.Device} {
		if s.Addr+uint64(s.Length) > b.Limit {
			return d, 0, ErrBARLimit
		}
	}
	if d, e = OpenPCI(c, bdf, b.PhysOff); e != OK {
		return d, 0, e
	}
	if b.MSIAddr != 0 {
		e = b.enableMSIX(bdf, &d)
	} else if line = c.Read8(bdf, cfgIntLine); line == 0 || line >= 16 {
		e = ErrNoIRQ
	}
	if e != OK {
		d.Reset()
		return Device{}, 0, e
	}
	return d, line, OK
}
