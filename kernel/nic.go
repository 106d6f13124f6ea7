package kernel

import (
	"sync/atomic"

	"yolk/drivers/virtio"
	"yolk/drivers/virtionet"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The network device: one virtio-net NIC (drivers/virtionet), found at
// boot by the arch's virtioInit (nic_$GOARCH.go: the device tree's
// virtio-mmio nodes on arm64 virt; microvm's virtio_mmio.device= entries
// on the command line, else PCI bus 0, on amd64), its interrupt routed to
// the boot CPU. The handler (nicInterrupt) moves received frames into the
// driver's ring and signals the eventfd the network service named
// (SysNICNotify), which its goroutine waits on through Go's netpoller;
// sys_nic.go has the private calls. A machine without a NIC boots as
// before; a NIC that fails to open is one line on the console and the
// machine goes on without it.

var (
	nic     virtionet.NIC
	nicLock sched.TWALock // every call on nic: the handler and the system calls run on different CPUs
	// nicEventfd is 1 + the eventfd descriptor the handler signals, 0 for none (atomic).
	nicEventfd int32
	nicIRQ     uint32 // the NIC's interrupt: amd64 the I/O APIC's GSI, arm64 the GIC ID; 0: none
)

// netConfCheck reports a malformed yolk.net option (the arch's virtioInit
// calls it first).
func netConfCheck() {
	if netConfBad {
		klog("boot: yolk.net: want ADDR/PREFIX,GATEWAY[,DNS] (IPv4): ignored\n")
	}
}

// nicMem gives the driver frames through the physical map.
type nicMem struct{}

func (nicMem) Page() (uintptr, uint64) {
	f := mm.AllocFrame()
	if f == 0 {
		return 0, 0
	}
	return mm.Phys(f), uint64(f)
}

// nicOpen opens the network device d and prints the one line saying so,
// or why not; where and base name it there ("mmio", "pci").
func nicOpen(d virtio.Device, where string, base uint64, irq uint32) bool {
	var te virtio.Error
	e := virtionet.Open(&nic, d, nicMem{}, &te)
	klog("net: virtio-net (")
	kprint(where)
	kprint(" ")
	kprintHex(base, 1)
	kprint(", irq ")
	kprintDec(int64(irq))
	kprint(")")
	if e != virtionet.OK {
		kprint(" not used: ")
		kprint(e.String())
		if e == virtionet.ErrTransport {
			kprint(": ")
			kprint(te.String())
		}
		kprint("\n")
		return false
	}
	nicIRQ = irq
	kprint(" MAC ")
	mac := nic.MAC()
	for i, b := range mac {
		if i > 0 {
			kprint(":")
		}
		kprintHex2(b)
	}
	if !nic.LinkUp() {
		kprint(", link down")
	}
	kprint("\n")
	return true
}

func kprintHex2(b byte) {
	const digits = "0123456789abcdef"
	kprint(digits[b>>4 : b>>4+1])
	kprint(digits[b&15 : b&15+1])
}

// nicInterrupt is the NIC's interrupt handler (the caller ends the
// interrupt at the controller): frames into the ring, buffers back to the
// device, and the service's eventfd signalled if anything arrived.
func nicInterrupt() {
	nicLock.Lock()
	got := nic.Interrupt()
	nicLock.Unlock()
	if got > 0 {
		nicSignal()
	}
}

// nicSignal adds 1 to the service's eventfd, as a write(2) of 1 would.
// The descriptor is checked to be an eventfd still; one the program
// closed and reused for another eventfd gets the wake-up instead, which
// costs it a spurious read and nothing else.
func nicSignal() {
	fd := int(atomic.LoadInt32(&nicEventfd)) - 1
	if fd < 0 {
		return
	}
	fileLock.Lock() // an interrupt comes only while the CPU runs the program: never held here
	f := getFile(fd, fileEventfd)
	if f != nil {
		atomic.AddUint64(&f.count, 1)
		atomic.AddUint32(&f.seq, 1)
	}
	fileLock.Unlock()
	if f != nil {
		epollNotify()
	}
}
