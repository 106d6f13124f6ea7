package blk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/clock"
	"yolk/drivers/nvme"
	"yolk/drivers/virtio"
	"yolk/drivers/virtioblk"
	"yolk/kernel/abi"
	"yolk/sched"
)

// NVMe namespaces in the table (docs/nvme.md): each controller on PCI
// bus 0 (pc, q35) is opened by drivers/nvme with an I/O queue pair per
// CPU, and each of its namespaces is a device of kind KindNVMe named
// nvme<C>n<NSID>, major 259 (Linux's blkext) and minors in the order
// found, read and written through the same seam as virtio-blk's disks
// (rw, Flush, Discard). The controllers' interrupts are pin-based INTx
// on the line firmware wrote, routed by the kernel like virtio's.

const (
	// MaxNVMe is how many NVMe controllers the table takes.
	MaxNVMe = 2

	classNVMe = 0x010802 // mass storage, non-volatile memory, NVM Express
)

// nvmes are the NVMe controllers; info[i] is device i's Info when it is
// an NVMe namespace (the table's accessors answer from it).
type nvmes[E Env[E]] struct {
	c    [MaxNVMe]nvme.Ctrl[nvenv[E]]
	irq  [MaxNVMe]uint32
	n    int
	info [MaxDevs]virtioblk.Info
}

// The controllers' queue locks, the tasks waiting for their commands,
// and whether tasks run (Started): the drivers' environment, nvenv, is
// a controller's index, and reaches these without the table.
var (
	nvLocks   [MaxNVMe][nvme.MaxQueues + 1]sched.TWALock
	nvWQ      sched.WaitQueue
	nvStarted uint32 // atomic
)

// nvenv is controller c's environment (drivers/nvme's Env).
type nvenv[E Env[E]] struct{ c int }

func (n nvenv[E]) Lock(q int)                  { nvLocks[n.c][q].Lock() }
func (n nvenv[E]) Unlock(q int)                { nvLocks[n.c][q].Unlock() }
func (nvenv[E]) Now() int64                    { return clock.Nanotime() }
func (nvenv[E]) CPU() int                      { return sched.This().ID }
func (nvenv[E]) Copy(d, s uintptr, n int) bool { return env[E]().Copy(d, s, n) }
func (nvenv[E]) Note(s string)                 { env[E]().Note(s) }
func (nvenv[E]) Log(s string)                  { env[E]().Log(s) }
func (nvenv[E]) LogDec(v int64)                { env[E]().LogDec(v) }

// Wait blocks the task while *addr == val, until deadline (0: none);
// before tasks run it returns true at once and the driver polls.
func (nvenv[E]) Wait(addr *uint32, val uint32, deadline int64) bool {
	if atomic.LoadUint32(&nvStarted) == 0 {
		return true
	}
	a := uintptr(unsafe.Pointer(addr))
	return sched.Block(&nvWQ, a, a, val, deadline)
}

func (nvenv[E]) Wake(addr *uint32) {
	if atomic.LoadUint32(&nvStarted) != 0 {
		nvWQ.Wake(uintptr(unsafe.Pointer(addr)), 1<<30)
	}
}

// ProbeNVMe opens the NVMe controllers on PCI bus 0 (class 01/08/02),
// through pc's configuration access, with an I/O queue pair per CPU up
// to cpus, and adds their namespaces to the table. It returns the
// interrupt lines of those in use (the ISA IRQ firmware wrote in the
// Interrupt Line register), a bit each, for the kernel to route:
// level-triggered, active high. physOff is the physical map's base
// (BAR0 must lie below 4 GiB).
func (d *Devs[E]) ProbeNVMe(pc virtio.PCIConfig, physOff uintptr, cpus int) (lines uint32) {
	e := env[E]()
	for f := pc.Next(0, 0); f >= 0; f = pc.Next(0, f+1) {
		bdf := virtio.BDF(0, uint8(f>>3), uint8(f&7))
		if pc.Class(bdf) != classNVMe {
			continue
		}
		bar, be := pc.BAR(bdf, 0)
		line := uint32(pc.Read8(bdf, 0x3c)) // Interrupt Line
		e.Note("blk: NVMe controller (pci 0:")
		e.LogDec(int64(f >> 3))
		e.Log(".")
		e.LogDec(int64(f & 7))
		e.Log(", irq ")
		e.LogDec(int64(line))
		e.Log(")")
		switch {
		case d.nv.n == MaxNVMe:
			e.Log(" not used: more controllers than the table takes\n")
			continue
		case be != virtio.OK:
			e.Log(" not used: BAR0: ")
			e.Log(be.String())
			e.Log("\n")
			continue
		case bar+nvme.RegsSize > 4<<30:
			e.Log(" not used: BAR0 above 4 GiB, outside the physical map\n")
			continue
		case line == 0 || line >= 16:
			e.Log(" not used: no interrupt line (firmware set none)\n")
			continue
		}
		pc.Enable(bdf)
		ci := d.nv.n
		c := &d.nv.c[ci]
		if oe := nvme.Open(c, nvenv[E]{c: ci}, uintptr(bar)+physOff, e, cpus); oe != nvme.OK {
			e.Log(" not used: ")
			e.Log(oe.String())
			e.Log("\n")
			continue
		}
		c.Name = [8]byte{'n', 'v', 'm', 'e', byte('0' + ci)}
		d.nv.irq[ci] = line
		d.nv.n++
		lines |= 1 << line
		in := c.Info()
		e.Log(" ")
		e.Log(trimmed(in.Model[:]))
		e.Log(", serial ")
		e.Log(trimmed(in.Serial[:]))
		e.Log(", ")
		e.LogDec(int64(in.Queues))
		e.Log(" I/O queue pairs, INTx")
		if in.VWC {
			e.Log(", write cache")
		}
		e.Log("\n")
		for k := range c.Namespaces() {
			d.addNVMe(ci, k)
		}
	}
	return lines
}

// addNVMe adds namespace k of controller ci to the table and makes its
// /dev node.
func (d *Devs[E]) addNVMe(ci, k int) {
	e := env[E]()
	c := &d.nv.c[ci]
	ns, cin := c.Namespace(k), c.Info()
	if d.n == MaxDevs {
		e.Note("blk: nvme")
		e.LogDec(int64(ci))
		e.Log("n")
		e.LogDec(int64(ns.ID))
		e.Log(" not used: more disks than the table holds (")
		e.LogDec(MaxDevs)
		e.Log(")\n")
		return
	}
	minor := 0
	for j := 0; j < d.n; j++ {
		if d.devs[j].kind == KindNVMe {
			minor++
		}
	}
	i := d.n
	x := &d.devs[i]
	x.kind, x.irq, x.ctrl, x.ns = KindNVMe, 0, uint8(ci), uint8(k) // irq 0: Interrupt asks the controller, not the device
	x.vb.Name = [8]byte{'n', 'v', 'm', 'e', byte('0' + ci), 'n', byte('0' + ns.ID%10)}
	x.rdev = unix.Mkdev(MajorNVMe, uint32(minor))
	in := &d.nv.info[i]
	*in = virtioblk.Info{Sectors: ns.Sectors, BlockSize: ns.BlockSize, PhysBlock: ns.BlockSize, ReadOnly: ns.ReadOnly,
		Flush: cin.VWC, MaxTransfer: cin.MaxTransfer * nvme.Batch} // RW sends up to Batch commands at once
	if cin.ONCS&4 != 0 {
		in.MaxDiscard = 1 << 31
	}
	d.n++
	e.Node(d.Name(i), x.rdev)
	e.Note("blk: ")
	e.Log(unsafe.String(&x.vb.Name[0], len(d.Name(i))))
	e.Log(" ")
	logSize(e, in)
}

// info is device i's Info: its driver's, or the one made for an NVMe
// namespace.
func (d *Devs[E]) info(i int) *virtioblk.Info {
	if d.devs[i].kind == KindNVMe {
		return &d.nv.info[i]
	}
	return d.devs[i].vb.Info()
}

// rw moves n bytes at sector of device i to or from addr (the driver
// copies through its Copy): each driver's RW.
func (d *Devs[E]) rw(i int, sector uint64, addr uintptr, n int, write bool) abi.Errno {
	x := &d.devs[i]
	if x.kind == KindNVMe {
		return abi.Errno(d.nv.c[x.ctrl].RW(int(x.ns), sector, addr, n, write))
	}
	return abi.Errno(x.vb.RW(sector, addr, n, write))
}

// flush and discard are each driver's Flush and Discard (NVMe has no
// write-zeroes here: EOPNOTSUPP).
func (d *Devs[E]) flush(i int) abi.Errno {
	x := &d.devs[i]
	if x.kind == KindNVMe {
		return abi.Errno(d.nv.c[x.ctrl].Flush(int(x.ns)))
	}
	return abi.Errno(x.vb.Flush())
}

func (d *Devs[E]) discard(i int, sector, count uint64, zeroes bool) abi.Errno {
	x := &d.devs[i]
	if x.kind != KindNVMe {
		return abi.Errno(x.vb.Discard(sector, count, zeroes))
	}
	if zeroes {
		return abi.EOPNOTSUPP
	}
	return abi.Errno(d.nv.c[x.ctrl].Discard(int(x.ns), sector, count))
}

// nvInterrupt asks the NVMe controllers on line irq.
func (d *Devs[E]) nvInterrupt(irq uint32) {
	for c := 0; c < d.nv.n; c++ {
		if d.nv.irq[c] == irq {
			d.nv.c[c].Interrupt()
		}
	}
}

// NVMe is controller c, for the self-tests' and /proc's counters; nil
// if there is none.
func (d *Devs[E]) NVMe(c int) *nvme.Ctrl[nvenv[E]] {
	if c < 0 || c >= d.nv.n {
		return nil
	}
	return &d.nv.c[c]
}

// trimmed is b without its trailing spaces and NULs (Identify's ASCII
// fields).
func trimmed(b []byte) string {
	n := len(b)
	for n > 0 && (b[n-1] == ' ' || b[n-1] == 0) {
		n--
	}
	if n == 0 {
		return ""
	}
	return unsafe.String(&b[0], n)
}
