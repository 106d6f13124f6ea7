package kernel

import (
	"strings"
	"testing"
	"unsafe"

	"yolk/qemu"
)

func parse(t *testing.T, line string) (args, env []string) {
	t.Helper()
	var buf [4096]byte
	copy(buf[:], line)
	nargs, nenv, gomemlimitOff, homeSet, strace = 0, 0, -1, false, false
	parseCmdline(uintptr(unsafe.Pointer(&buf[0])))
	for i := 0; i < nargs; i++ {
		args = append(args, string(cstr(argOff[i])))
	}
	for i := 0; i < nenv; i++ {
		env = append(env, string(cstr(envOff[i])))
	}
	return args, env
}

// TestCmdlineRoundTrip parses what the host tool writes.
func TestCmdlineRoundTrip(t *testing.T) {
	env := []string{"USER=gopher", "GREETING=hello world", `Q=a"b\c`, "EMPTY="}
	args := []string{"-exit", "3", "two words", "", `"quoted"`, "KEY=value", "--", "yolk.strace=1"}
	line, err := qemu.Cmdline(env, args)
	if err != nil {
		t.Fatal(err)
	}
	gotArgs, gotEnv := parse(t, line)
	if want := append([]string{argv0}, args...); strings.Join(gotArgs, "|") != strings.Join(want, "|") {
		t.Errorf("args %q, want %q (line %q)", gotArgs, want, line)
	}
	if strings.Join(gotEnv, "|") != strings.Join(env, "|") {
		t.Errorf("env %q, want %q (line %q)", gotEnv, env, line)
	}
	if strace {
		t.Errorf("yolk.strace=1 after -- turned tracing on")
	}
}

func TestCmdlineKernelOptionsAndGODEBUG(t *testing.T) {
	args, env := parse(t, "yolk.strace=1 GODEBUG=gctrace=1 GOMEMLIMIT=1MiB plain")
	if !strace {
		t.Errorf("yolk.strace=1 not applied")
	}
	if len(args) != 2 || args[1] != "plain" {
		t.Errorf("args %q", args)
	}
	if gomemlimitOff < 0 || len(env) != 2 || env[0] != "GODEBUG=gctrace=1" {
		t.Errorf("env %q, GOMEMLIMIT at %d", env, gomemlimitOff)
	}
	strace = false
}

// A boot loader's own options before the start mark (the Raspberry Pi
// firmware's, in front of cmdline.txt's line) are not the program's; a
// line without the mark is read whole.
func TestCmdlineStartMark(t *testing.T) {
	line, err := qemu.Cmdline([]string{"USER=gopher"}, []string{"-run", "x"})
	if err != nil {
		t.Fatal(err)
	}
	fw := "coherent_pool=1M 8250.nr_uarts=0 bcm2708_fb.fbwidth=656 vc_mem.mem_base=0x3ec00000 console=ttyS0,115200 "
	args, env := parse(t, fw+"yolk.start "+line)
	if strings.Join(args, "|") != "yolk|-run|x" || strings.Join(env, "|") != "USER=gopher" {
		t.Errorf("after the mark: args %q, env %q", args, env)
	}
	args, env = parse(t, "yolk.start")
	if len(args) != 1 || len(env) != 0 {
		t.Errorf("mark alone: args %q, env %q", args, env)
	}
	args, _ = parse(t, "x.yolk.start yolk.startx y")
	if strings.Join(args, "|") != "yolk|x.yolk.start|y" {
		t.Errorf("no whole-token mark: args %q", args)
	}
}

func TestCmdlineNetOption(t *testing.T) {
	for _, c := range []struct {
		opt           string
		addr, gw, dns [4]byte
		prefix        int
	}{
		{"10.0.2.15/24,10.0.2.2,10.0.2.3", [4]byte{10, 0, 2, 15}, [4]byte{10, 0, 2, 2}, [4]byte{10, 0, 2, 3}, 24},
		{"192.168.7.2/32,192.168.7.1", [4]byte{192, 168, 7, 2}, [4]byte{192, 168, 7, 1}, [4]byte{}, 32},
		{"10.0.2.15,10.0.2.2", [4]byte{}, [4]byte{}, [4]byte{}, 0},     // no prefix
		{"10.0.2.15/0,10.0.2.2", [4]byte{}, [4]byte{}, [4]byte{}, 0},   // prefix out of range
		{"10.0.2.15/33,10.0.2.2", [4]byte{}, [4]byte{}, [4]byte{}, 0},  // prefix out of range
		{"10.0.2.256/24,10.0.2.2", [4]byte{}, [4]byte{}, [4]byte{}, 0}, // not an address
		{"10.0.2.15/24", [4]byte{}, [4]byte{}, [4]byte{}, 0},           // no gateway
		{"10.0.2.15/24,10.0.2.2,", [4]byte{}, [4]byte{}, [4]byte{}, 0}, // empty DNS
		{"10.0.2.15/24,10.0.2.2,10.0.2.3x", [4]byte{}, [4]byte{}, [4]byte{}, 0},
	} {
		netConf.prefix, netConf.addr, netConf.gw, netConf.dns, netConfBad = 0, [4]byte{}, [4]byte{}, [4]byte{}, false
		parse(t, "yolk.net="+c.opt+" x")
		if netConfBad != (c.prefix == 0) {
			t.Errorf("yolk.net=%s: malformed %v", c.opt, netConfBad)
		}
		if netConf.prefix != c.prefix || netConf.addr != c.addr || netConf.gw != c.gw || netConf.dns != c.dns {
			t.Errorf("yolk.net=%s: %v/%d gw %v dns %v, want %v/%d gw %v dns %v", c.opt,
				netConf.addr, netConf.prefix, netConf.gw, netConf.dns, c.addr, c.prefix, c.gw, c.dns)
		}
	}
	netConf.prefix, netConfBad = 0, false
}

// QEMU microvm's virtio_mmio.device= entries (appended after everything,
// "--" included) are the kernel's, never the program's arguments.
func TestCmdlineVirtioMMIO(t *testing.T) {
	nmmioDevices = 0
	args, env := parse(t, "A=1 -- x virtio_mmio.device=512@0xfeb00e00:12 virtio_mmio.device=1K@0xfeb00c00:11:3 virtio_mmio.device=512@bad:1")
	if strings.Join(args, "|") != "yolk|x" || strings.Join(env, "|") != "A=1" {
		t.Errorf("args %q env %q", args, env)
	}
	if nmmioDevices != 2 || mmioDevices[0].base != 0xfeb00e00 || mmioDevices[0].irq != 12 ||
		mmioDevices[1].base != 0xfeb00c00 || mmioDevices[1].irq != 11 {
		t.Errorf("%d devices: %+v", nmmioDevices, mmioDevices[:nmmioDevices])
	}
	nmmioDevices = 0
}
