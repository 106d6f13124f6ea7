package kernel

import (
	"sync/atomic"

	"yolk/arch/arm64"
	"yolk/boot"
	"yolk/drivers/bcm2836"
	"yolk/drivers/fdt"
	"yolk/drivers/gic"
	"yolk/drivers/gtimer"
	"yolk/drivers/pl061"
	"yolk/sched"
)

// The interrupt controller behind one set of calls: the GIC (QEMU virt,
// from the device tree) or, on the Raspberry Pi 3, the BCM2836 local
// controller (timers, mailbox IPIs) with the BCM2835 ARM controller for the
// UART. A CPU's sched.CPU.IRQ is its GIC target or its Pi core number.

// onPi says the kernel runs on the Raspberry Pi 3 (boot.Board).
func onPi() bool { return boot.Board == boot.BoardRPi3 }

// intcReady: the controller is set up (stopOthers may send IPIs).
var intcReady bool

// intcInit sets up the controller and the boot CPU's side of it, and
// finds the timer's interrupt.
func intcInit(c *sched.CPU) {
	if onPi() {
		bcm2836.Init(bcm2836.LocalBase, bcm2836.ARMCtrlBase)
	} else {
		gicInit()
	}
	intcReady = true
	cpuInterrupts(0, c)
}

// gicInit sets up the GIC the device tree names.
func gicInit() {
	g, e := dt.GIC()
	if e != fdt.OK {
		fatal("boot: no GIC in the device tree")
	}
	if ge := gic.Init(gic.Config{Version: g.Version, Dist: uintptr(g.Dist), CPU: uintptr(g.CPU),
		Redist: uintptr(g.Redist), RedistSize: uintptr(g.RedistSize)}); ge != gic.OK {
		klog("gic: ")
		kprint(ge.String())
		kprint("\n")
		fatal("boot: GIC set-up failed")
	}
	if t, e := dt.Timer(); e == fdt.OK && t.Virt.ID != 0 {
		timerIRQ = t.Virt.ID
	}
}

// cpuInterrupts sets up this CPU's side of the controller and enables its
// IPIs and timer interrupt.
func cpuInterrupts(id int, c *sched.CPU) {
	if onPi() {
		core := int(arm64.MPIDR() & 0xff)
		c.IRQ = uint64(core)
		bcm2836.InitCPU(core)
		bcm2836.EnableTimer(core)
		return
	}
	gc, e := gic.InitCPU()
	if e != gic.OK {
		klog("gic: ")
		kprint(e.String())
		kprint("\n")
		fatal("gic: CPU interface set-up failed")
	}
	percpu[id].gic = gc
	c.IRQ = uint64(gc.Target)
	for _, sgi := range [...]uint32{vecWake, vecSignal, vecStop} {
		gic.Enable(gc, sgi, gic.DefaultPriority)
	}
	gic.Enable(gc, sched.LockKickSGI, sched.KickPriority)
	gic.Enable(gc, timerIRQ, gic.DefaultPriority)
}

// sendIPI raises vec at CPU cpu.
func sendIPI(cpu int, vec uint32) {
	if onPi() {
		bcm2836.Send(int(sched.CPUAt(cpu).IRQ), vec)
		return
	}
	gic.SendSGI(gic.Target(sched.CPUAt(cpu).IRQ), vec)
}

// conIRQEnable routes the UART's receive interrupt to the boot CPU and
// turns it on at the controller.
func conIRQEnable() {
	if onPi() {
		bcm2836.Enable(conIRQ) // GPU interrupts go to core 0 (bcm2836.Init)
		return
	}
	gic.SetEdge(percpu[0].gic, conIRQ, false)
	gic.Route(conIRQ, gic.Target(sched.CPUAt(0).IRQ))
	gic.Enable(percpu[0].gic, conIRQ, gic.DefaultPriority)
}

// irq acknowledges and handles the pending interrupt (the GIC's one; every
// pending source on the Pi); it reports whether the timer or a wake-up was
// among them (preemptUser looks at the ready queues after those).
func irq(p *perCPU) (preempt bool) {
	if onPi() {
		return irqPi(p)
	}
	iar := gic.Ack()
	id := gic.ID(iar)
	switch {
	case id == gic.Spurious:
		return false
	case id == timerIRQ:
		timerIRQTaken(p)
		preempt = true
	case id == conIRQ && conIRQ != 0:
		conInInterrupt()
	case id == nicIRQ && nicIRQ != 0:
		nicInterrupt()
	case shares.IsIRQ(id):
		shares.Interrupt(id)
	case blks.IsIRQ(id):
		blks.Interrupt(id)
	case id == powerKey.Controller.IRQ && id != 0:
		if pl061.Take(uintptr(powerKey.Controller.Base), powerKey.Pin) {
			powerButton()
		}
	case id == vecStop && atomic.LoadUint32(&stopping) != 0:
		gic.EOI(iar)
		stopHere()
	case id == vecWake:
		// The idle loop looks at the ready queue; application code's
		// return path too (another CPU queued a woken task).
		p.timerWoke = false
		preempt = true
	case id == vecSignal, id == sched.LockKickSGI:
		// Nothing to do: the return path looks for signals, a lock
		// waiter at its lock (a kick that came after its halt ended).
	}
	gic.EOI(iar)
	return preempt
}

func irqPi(p *perCPU) (preempt bool) {
	core := int(sched.This().IRQ)
	src := bcm2836.Pending(core)
	if src&bcm2836.SrcMailbox != 0 {
		v := bcm2836.TakeMailbox(core)
		if v&(1<<vecStop) != 0 && atomic.LoadUint32(&stopping) != 0 {
			stopHere()
		}
		if v&(1<<vecWake) != 0 {
			p.timerWoke = false
			preempt = true
		}
		// vecSignal: nothing to do (as above).
	}
	if src&bcm2836.SrcGPU != 0 && conIRQ != 0 && bcm2836.PeripheralPending(conIRQ) {
		conInInterrupt()
	}
	if src&bcm2836.SrcCNTV != 0 {
		timerIRQTaken(p)
		preempt = true
	}
	return preempt
}

// timerIRQTaken handles this CPU's timer interrupt. Level-triggered: the
// timer is stopped before the interrupt ends, re-armed by timerInterrupt if
// anything is still due.
func timerIRQTaken(p *perCPU) {
	gtimer.Stop()
	p.timer.armed = 0
	p.timerWoke = timerInterrupt(p.fromUser)
}
