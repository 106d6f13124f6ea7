package kernel

import (
	"testing"
	"unsafe"

	"yolk/kernel/calllog"
)

// The command line's meaning to the kernel (kernel/cmdline reads it;
// its tests are there).

func parse(t *testing.T, line string) (args, env []string) {
	t.Helper()
	var buf [4096]byte
	heapOnly = append(heapOnly, &buf)
	copy(buf[:], line)
	nargs, nenv, gomemlimitOff, homeSet, calllog.Trace = 0, 0, -1, false, false
	parseCmdline(uintptr(unsafe.Pointer(&buf[0])))
	for i := 0; i < nargs; i++ {
		args = append(args, string(cstr(argOff[i])))
	}
	for i := 0; i < nenv; i++ {
		env = append(env, string(cstr(envOff[i])))
	}
	return args, env
}

func TestCmdlineKernelOptionsAndGODEBUG(t *testing.T) {
	args, env := parse(t, "yolk.strace=1 GODEBUG=gctrace=1 GOMEMLIMIT=1MiB HOME=/h plain")
	if !calllog.Trace {
		t.Errorf("yolk.strace=1 not applied")
	}
	if len(args) != 2 || args[0] != argv0 || args[1] != "plain" {
		t.Errorf("args %q", args)
	}
	if gomemlimitOff < 0 || !homeSet || len(env) != 3 || env[0] != "GODEBUG=gctrace=1" {
		t.Errorf("env %q, GOMEMLIMIT at %d, HOME set %v", env, gomemlimitOff, homeSet)
	}
	calllog.Trace = false
}

func TestCmdlineNetOption(t *testing.T) {
	defer func() {
		netConf.prefix, netConf.addr, netConf.gw, netConf.dns, netConfBad, etcDNS = 0, [4]byte{}, [4]byte{}, [4]byte{}, false, [4]byte{}
	}()
	parse(t, "yolk.net=10.0.2.15/24,10.0.2.2,10.0.2.3 x")
	if netConfBad || netConf.prefix != 24 || netConf.addr != [4]byte{10, 0, 2, 15} || netConf.gw != [4]byte{10, 0, 2, 2} ||
		netConf.dns != [4]byte{10, 0, 2, 3} || etcDNS != netConf.dns {
		t.Errorf("yolk.net: %+v, bad %v, resolv.conf %v", netConf, netConfBad, etcDNS)
	}
	parse(t, "yolk.net=dhcp")
	if netConf.prefix != 0 || netConfBad {
		t.Errorf("yolk.net=dhcp: %+v, bad %v", netConf, netConfBad)
	}
	parse(t, "yolk.net=10.0.2.15/24")
	if netConf.prefix != 0 || !netConfBad {
		t.Errorf("a malformed yolk.net: %+v, bad %v", netConf, netConfBad)
	}
}

func TestCmdlineVirtioMMIO(t *testing.T) {
	nmmioDevices = 0
	parse(t, "x virtio_mmio.device=512@0xfeb00e00:12 virtio_mmio.device=1K@0xfeb00c00:11:3 virtio_mmio.device=512@bad:1")
	if nmmioDevices != 2 || mmioDevices[0].base != 0xfeb00e00 || mmioDevices[0].irq != 12 ||
		mmioDevices[1].base != 0xfeb00c00 || mmioDevices[1].irq != 11 {
		t.Errorf("%d devices: %+v", nmmioDevices, mmioDevices[:nmmioDevices])
	}
	nmmioDevices = 0
}

// heapOnly keeps the buffers this file reaches through uintptrs on the
// heap: a goroutine's stack is copied when it grows, and a uintptr into
// the old copy is not updated (a test in drivers/vgatext failed so in CI).
var heapOnly []any
