package kernel

import (
	"yolk/drivers/fdt"
	"yolk/drivers/gic"
	"yolk/drivers/pl061"
	"yolk/drivers/virtio"
	"yolk/sched"
)

// powerKey is QEMU virt's power key, a PL061 pin (powerInit): IRQ 0 if
// there is none.
var powerKey fdt.GPIOKey

// powerInit arms the device tree's power key to interrupt this CPU.
func powerInit(c *sched.CPU) {
	k, e := dt.PowerKey()
	if e != fdt.OK || k.Controller.Base >= 1<<30 || k.Controller.IRQ == 0 {
		return
	}
	powerKey = k
	pl061.ArmRising(uintptr(k.Controller.Base), k.Pin)
	gic.SetEdge(percpu[0].gic, k.Controller.IRQ, k.Controller.IRQFlags&0xf != 4)
	gic.Route(k.Controller.IRQ, gic.Target(c.IRQ))
	gic.Enable(percpu[0].gic, k.Controller.IRQ, gic.DefaultPriority)
}

// virtioInit finds the network device and the shares (share.go) among
// the device tree's virtio-mmio transports (QEMU virt: 32 of them, most
// empty) and routes their GIC interrupts to this (the boot) CPU, edge or
// level as the node says. The first network device that opens is the
// NIC. The Raspberry Pi 3 has none: loopback only, no shares.
func virtioInit(c *sched.CPU) {
	netConfCheck()
	if onPi() {
		return
	}
	it := dt.Walk()
	for {
		d, e := dt.NextDevice(&it, "virtio,mmio")
		if e != fdt.OK {
			return
		}
		if d.Base >= 1<<30 || d.Size < virtio.MMIOSize || d.IRQ == 0 {
			continue // outside the identity map's device GiB, or no interrupt
		}
		// The first GiB is identity-mapped as device memory (boot).
		v, ve := virtio.OpenMMIO(uintptr(d.Base))
		if ve != virtio.OK {
			if ve == virtio.ErrLegacy {
				nicRefused("mmio", d.Base, ve)
			}
			continue
		}
		if virtioAttach(v, "mmio", d.Base, d.IRQ) {
			gic.SetEdge(percpu[0].gic, d.IRQ, d.IRQFlags&0xf != 4)
			gic.Route(d.IRQ, gic.Target(c.IRQ))
			gic.Enable(percpu[0].gic, d.IRQ, gic.DefaultPriority)
			virtioCatchUp(d.IRQ)
		}
	}
}
