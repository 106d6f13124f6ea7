package kernel

import (
	"yolk/kernel/calllog"
	"yolk/kernel/cmdline"
	"yolk/sched"
)

// The command line is read by package cmdline; here is what it means:
// the program's arguments and environment (initstack.go), the kernel
// options, the network's address and microvm's virtio-mmio devices.
// cenv is what the kernel supplies to it (cmdline.Env).

const (
	maxArgs = 64
	maxEnv  = 64
)

var (
	cmdBuf [4096]byte // tokens, NUL-terminated, unquoted
	argOff [maxArgs]int
	envOff [maxEnv]int
	nargs  int
	nenv   int
	// gomemlimitOff is set if the command line set GOMEMLIMIT.
	gomemlimitOff = -1
	// homeSet: the command line set HOME.
	homeSet bool
)

const argv0 = cmdline.Argv0

// parseCmdline reads the command line the loader left at p (0: none).
func parseCmdline(p uintptr) {
	var s *[4096]byte
	if p != 0 {
		s = at[[4096]byte](p)
	}
	cmdline.Parse[cenv](s, &cmdBuf)
}

// initrdOption finds "yolk.initrd=0xADDR,SIZE" on the command line at p.
func initrdOption(p uintptr) (addr, size uintptr) { return cmdline.Initrd(at[[4096]byte](p)) }

type cenv struct{}

func (cenv) Arg(off int) {
	if nargs < maxArgs {
		argOff[nargs] = off
		nargs++
	}
}

func (cenv) Env(off int, tok []byte) {
	if cmdline.HasPrefix(tok, "GOMEMLIMIT=") {
		gomemlimitOff = off
	}
	if cmdline.HasPrefix(tok, "HOME=") {
		homeSet = true
	}
	if nenv < maxEnv {
		envOff[nenv] = off
		nenv++
	}
}

func (cenv) Option(opt []byte) { kernelOption(opt) }

func (cenv) MMIODevice(base, irq uint64) {
	if nmmioDevices < len(mmioDevices) {
		mmioDevices[nmmioDevices].base, mmioDevices[nmmioDevices].irq = base, irq
		nmmioDevices++
	}
}

func kernelOption(opt []byte) {
	switch string(opt) {
	case "strace=1":
		calllog.Trace = true
	case "vdso=0":
		vdsoOff = true
	case "syscallstats=1":
		calllog.Stats = true
	case "readyq=locked":
		sched.UseLockedReadyQueue()
	default:
		if v, ok := cmdline.CutPrefix(opt, "idlepoll="); ok {
			sched.IdlePoll = int64(cmdline.Atoi(v)) * 1000
		}
		if v, ok := cmdline.CutPrefix(opt, "net="); ok {
			netOption(v)
		}
		if v, ok := cmdline.CutPrefix(opt, "share="); ok {
			shares.Option(v)
		}
		if v, ok := cmdline.CutPrefix(opt, "disk="); ok {
			disks.Add(v)
		}
		if v, ok := cmdline.CutPrefix(opt, "root="); ok {
			disks.AddRoot(v)
		}
		if v, ok := cmdline.CutPrefix(opt, "exe="); ok && len(v) > 1 && v[0] == '/' && len(v) < len(exePath) {
			exeLen = copy(exePath[:], v)
		}
		if v, ok := cmdline.CutPrefix(opt, "cwd="); ok && len(v) < len(cwdPath) {
			cwdLen = copy(cwdPath[:], v)
		}
	}
}

func cstr(off int) []byte {
	e := off
	for cmdBuf[e] != 0 {
		e++
	}
	return cmdBuf[off:e]
}

// netConf is the network address yolk.net=ADDR/PREFIX,GATEWAY[,DNS] gave
// (IPv4, dotted quads; prefix 1 to 32), for the network service
// (SysNICInfo); prefix 0: none (yolk.net=dhcp, or no option: the service
// asks DHCP), or a malformed option (reported).
var netConf struct {
	addr, gw, dns [4]byte
	prefix        int
}

// netConfBad: a yolk.net option was malformed (and ignored).
var netConfBad bool

func netOption(v []byte) {
	if string(v) == "dhcp" {
		netConf.prefix = 0
		return
	}
	c, ok := cmdline.ParseNet(v)
	if !ok {
		netConfBad = true // reported by virtioInit (the console may not print yet)
		return
	}
	netConf.addr, netConf.gw, netConf.dns, netConf.prefix = c.Addr, c.GW, c.DNS, c.Prefix
	etcDNS = c.DNS // resolv.conf's nameserver
}

// mmioDevices are QEMU microvm's virtio_mmio.device entries (base, IRQ),
// at most len of them.
var (
	mmioDevices  [8]struct{ base, irq uint64 }
	nmmioDevices int
)
