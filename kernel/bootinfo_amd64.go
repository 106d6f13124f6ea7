package kernel

import (
	"yolk/boot"
	"yolk/sched"
)

// bootTLS is the boot CPU's TLS block until sched runs: its g slot names
// bootG (entry_amd64.s).
var bootTLS [2]uintptr

// pvhBoot: a VMM loaded the kernel through its PVH entry (QEMU -kernel,
// Firecracker, Cloud Hypervisor), not a Multiboot2 loader (machineExit).
var pvhBoot bool

// bootInfoInit brings the console up and reads the boot information: the
// Multiboot2 information at info when magic (the entry's EAX) says a
// Multiboot2 loader started the kernel, the PVH start-info block
// otherwise.
func bootInfoInit(c *sched.CPU, info, magic uintptr) {
	consoleInit()
	if uint32(magic) == boot.Multiboot2Magic {
		klog("boot: yolk kernel, Multiboot2 entry\n")
		if !boot.ParseMultiboot2(info, &bootInfo) {
			fatal("boot: the Multiboot2 information has no memory map")
		}
	} else {
		klog("boot: yolk kernel, PVH entry\n")
		pvhBoot = true
		if !boot.ParsePVH(info, &bootInfo) {
			fatal("boot: no PVH start-info block (boot with QEMU -kernel and a PVH note, or through GRUB's multiboot2)")
		}
	}
	screenInit(&bootInfo)
}
