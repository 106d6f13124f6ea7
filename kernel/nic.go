package kernel

import (
	"sync/atomic"

	"yolk/drivers/virtio"
	"yolk/drivers/virtionet"
	"yolk/kernel/mm"
	"yolk/kernel/nic"
)

// The network device: one virtio-net NIC, package nic (nicDev: its
// interrupt handler and the private calls the network service makes),
// found at boot by the arch's virtioInit (nic_$GOARCH.go: the device
// tree's virtio-mmio nodes on arm64 virt; microvm's virtio_mmio.device=
// entries on the command line, else PCI bus 0, on amd64), its interrupt
// routed to the boot CPU. A machine without a NIC boots as before; a NIC
// that fails to open is one line on the console and the machine goes on
// without it. nicenv is package nic's environment: the driver's pages,
// the eventfd the service names, the command line's address.

var (
	nicDev nic.NIC[nicenv]
	nicIRQ uint32 // the NIC's interrupt: amd64 the I/O APIC's GSI, arm64 the GIC ID; 0: none
)

type nicenv struct{ nicMem }

func (nicenv) IsEventfd(fd int) bool { return isEventfd(fd) }

// Signal adds 1 to eventfd fd, if it is one still.
func (nicenv) Signal(fd int) {
	fileLock.Lock() // an interrupt comes only while the CPU runs the program: never held here
	f := getFile(fd, fileEventfd)
	if f != nil {
		atomic.AddUint64(&f.count, 1)
		atomic.AddUint32(&f.seq, 1)
	}
	fileLock.Unlock()
	if f != nil {
		epollNotify(f.seqAddr())
	}
}

func (nicenv) Conf() nic.Conf {
	return nic.Conf{Addr: netConf.addr, Gateway: netConf.gw, DNS: netConf.dns, Prefix: netConf.prefix}
}

// isEventfd reports whether descriptor fd is an eventfd.
func isEventfd(fd int) bool {
	fileLock.Lock()
	ok := getFile(fd, fileEventfd) != nil
	fileLock.Unlock()
	return ok
}

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

// nicRefused says why virtio device (where, base) is not used.
func nicRefused(where string, base uint64, e virtio.Error) {
	klog("net: virtio device (")
	kprint(where)
	kprint(" ")
	kprintHex(base, 1)
	kprint(") not used: ")
	kprint(e.String())
	kprint("\n")
}

// nicOpen opens the network device d and prints the one line saying so,
// or why not (a NIC already open: the kernel drives one); where and base
// name it there ("mmio", "pci").
func nicOpen(d virtio.Device, where string, base uint64, irq uint32) bool {
	var te virtio.Error
	second, e := nicDev.Present(), virtionet.OK
	if !second {
		e = nicDev.Open(d, &te)
	}
	klog("net: virtio-net (")
	kprint(where)
	kprint(" ")
	kprintHex(base, 1)
	kprint(", irq ")
	kprintDec(int64(irq))
	kprint(")")
	if second {
		kprint(" not used: the kernel drives one NIC, already open\n")
		return false
	} else if e != virtionet.OK {
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
	mac := nicDev.MAC()
	for i, b := range mac {
		if i > 0 {
			kprint(":")
		}
		kprintHex2(b)
	}
	if nicDev.Offload() {
		kprint(", transmit offloads (checksum, TSO)")
	}
	if nicDev.RxOffload() {
		kprint(", receive offloads (checksum, coalesced TCP)")
	}
	if !nicDev.LinkUp() {
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
// interrupt at the controller).
func nicInterrupt() { nicDev.Interrupt() }
