// Command prog calls every exported function of the arm64 drivers (and of
// virtio, which the arm64 kernel will link for virt's virtio-mmio), for
// arm64check's disassembly test. It is never run.
package main

import (
	"yolk/drivers/fdt"
	"yolk/drivers/gic"
	"yolk/drivers/gtimer"
	"yolk/drivers/mmio"
	"yolk/drivers/pl011"
	"yolk/drivers/psci"
	"yolk/drivers/semihosting"
)

var sink uint64

func main() {
	f, _ := fdt.Open(0x40000000, 1<<20)
	var r [4]fdt.Range
	var c [8]fdt.CPU
	var name [32]byte
	f.Memory(r[:])
	f.Reserved(r[:])
	f.CPUs(c[:])
	g, _ := f.GIC()
	f.Timer()
	f.PSCI()
	u, _ := f.PL011()
	it := f.Walk()
	n, _ := f.FindCompatible(&it, "arm,pl011")
	f.Name(n, name[:])
	f.NameIs(n, "pl011")
	f.Okay(n)
	p, _ := f.Prop(n, "reg")
	f.U32(p, 0)
	f.Cells(p, 0, 2)
	f.StringIs(p, "x")
	f.HasString(p, "x")
	f.Reg(n, it.Parent(), 0)
	f.RegAt(&it, 0)
	it.Node()
	it.Depth()
	f.Next(&it)
	f.FindIter("/soc")
	f.Find("/chosen")
	f.Root()

	gic.Init(gic.Config{Version: g.Version, Dist: uintptr(g.Dist), CPU: uintptr(g.CPU), Redist: uintptr(g.Redist), RedistSize: uintptr(g.RedistSize)})
	cpu, _ := gic.InitCPU()
	gic.Enable(cpu, 27, 0x80)
	gic.Disable(cpu, 27)
	gic.SetEdge(cpu, 33, true)
	gic.Route(33, cpu.Target)
	i := gic.Ack()
	sink += uint64(gic.ID(i) + gic.Lines() + uint32(gic.Version()))
	gic.EOI(i)
	gic.SendSGI(cpu.Target, 1)
	gic.SendSGIOthers(1)
	gic.EnableSREAtEL2()
	sink += gic.SGI1R(cpu.Target, 1) + uint64(gic.SGIR(cpu.Target, 1)+gic.Affinity(0))

	uart := pl011.UART{Base: uintptr(u.Base)}
	uart.Init(pl011.VirtClock, 115200)
	uart.Write(name[:])
	uart.Put('x')
	uart.Get()
	uart.EnableRX()
	sink += uint64(uart.Pending())
	uart.AckRX()
	uart.DisableRX()
	uart.Flush()

	sink += gtimer.Freq() + gtimer.Count() + gtimer.Ticks(5, 6) + gtimer.Nanoseconds(1, 2) + gtimer.Deadline()
	gtimer.SetTimeout(100)
	gtimer.SetDeadline(100)
	gtimer.Mask()
	gtimer.Unmask()
	gtimer.Stop()
	gtimer.Fired()
	gtimer.SetupAtEL2()

	mmio.Write64(0x1000, mmio.Read64(0x1000))
	mmio.Write32(0x1000, mmio.Read32(0x1000))
	mmio.Write16(0x1000, mmio.Read16(0x1000))
	mmio.Write8(0x1000, mmio.Read8(0x1000))

	virtioCalls()

	psci.Init(psci.ConduitHVC)
	psci.Version()
	psci.CPUOn(1, 0x40080000, 0)
	psci.AffinityInfo(1)
	psci.SystemOff()
	psci.SystemReset()
	psci.CPUOff()

	semihosting.Exit(3)
	semihosting.ExitReason(semihosting.RunTimeErrorUnknown, 0)
}
