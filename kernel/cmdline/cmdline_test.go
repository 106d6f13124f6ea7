package cmdline

import (
	"strings"
	"testing"

	"yolk/qemu"
)

// hostEnv records what Parse hands the kernel.
type hostEnv struct{}

var (
	buf     [4096]byte
	args    []string
	envs    []string
	options []string
	devices [][2]uint64
)

func cstr(off int) string {
	e := off
	for buf[e] != 0 {
		e++
	}
	return string(buf[off:e])
}

func (hostEnv) Arg(off int) { args = append(args, cstr(off)) }
func (hostEnv) Env(off int, tok []byte) {
	if cstr(off) != string(tok) {
		panic("Env's token is not the buffer's")
	}
	envs = append(envs, cstr(off))
}
func (hostEnv) Option(opt []byte)           { options = append(options, string(opt)) }
func (hostEnv) MMIODevice(base, irq uint64) { devices = append(devices, [2]uint64{base, irq}) }

func parse(line string) {
	args, envs, options, devices = nil, nil, nil, nil
	var s [4096]byte
	copy(s[:], line)
	Parse[hostEnv](&s, &buf)
}

// TestCmdlineRoundTrip parses what the host tool writes.
func TestCmdlineRoundTrip(t *testing.T) {
	env := []string{"USER=gopher", "GREETING=hello world", `Q=a"b\c`, "EMPTY="}
	a := []string{"-exit", "3", "two words", "", `"quoted"`, "KEY=value", "--", "yolk.strace=1"}
	line, err := qemu.Cmdline(env, a)
	if err != nil {
		t.Fatal(err)
	}
	parse(line)
	if want := append([]string{Argv0}, a...); strings.Join(args, "|") != strings.Join(want, "|") {
		t.Errorf("args %q, want %q (line %q)", args, want, line)
	}
	if strings.Join(envs, "|") != strings.Join(env, "|") {
		t.Errorf("env %q, want %q (line %q)", envs, env, line)
	}
	if len(options) != 0 {
		t.Errorf("options %q: yolk.strace=1 after -- is an argument", options)
	}
}

func TestCmdlineOptions(t *testing.T) {
	parse("yolk.strace=1 GODEBUG=gctrace=1 yolk.net=dhcp plain")
	if strings.Join(options, "|") != "strace=1|net=dhcp" || strings.Join(envs, "|") != "GODEBUG=gctrace=1" ||
		strings.Join(args, "|") != "yolk|plain" {
		t.Errorf("options %q env %q args %q", options, envs, args)
	}
	args = nil
	Parse[hostEnv](nil, &buf)
	if len(args) != 1 || args[0] != Argv0 {
		t.Errorf("no line: args %q", args)
	}
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
	parse(fw + "yolk.start " + line)
	if strings.Join(args, "|") != "yolk|-run|x" || strings.Join(envs, "|") != "USER=gopher" {
		t.Errorf("after the mark: args %q, env %q", args, envs)
	}
	parse("yolk.start")
	if len(args) != 1 || len(envs) != 0 {
		t.Errorf("mark alone: args %q, env %q", args, envs)
	}
	parse("x.yolk.start yolk.startx y")
	if strings.Join(args, "|") != "yolk|x.yolk.start|y" {
		t.Errorf("no whole-token mark: args %q", args)
	}
}

func TestCmdlineNet(t *testing.T) {
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
		n, ok := ParseNet([]byte(c.opt))
		if ok != (c.prefix != 0) {
			t.Errorf("yolk.net=%s: ok %v", c.opt, ok)
		}
		if ok && (n.Prefix != c.prefix || n.Addr != c.addr || n.GW != c.gw || n.DNS != c.dns) {
			t.Errorf("yolk.net=%s: %+v", c.opt, n)
		}
	}
}

// QEMU microvm's virtio_mmio.device= entries (appended after everything,
// "--" included) are the kernel's, never the program's arguments.
func TestCmdlineVirtioMMIO(t *testing.T) {
	parse("A=1 -- x virtio_mmio.device=512@0xfeb00e00:12 virtio_mmio.device=1K@0xfeb00c00:11:3 virtio_mmio.device=512@bad:1")
	if strings.Join(args, "|") != "yolk|x" || strings.Join(envs, "|") != "A=1" {
		t.Errorf("args %q env %q", args, envs)
	}
	if len(devices) != 2 || devices[0] != [2]uint64{0xfeb00e00, 12} || devices[1] != [2]uint64{0xfeb00c00, 11} {
		t.Errorf("devices %x", devices)
	}
}

func TestCmdlineInitrd(t *testing.T) {
	for line, want := range map[string][2]uintptr{
		"a yolk.initrd=0x1000,4096 b": {0x1000, 4096},
		"yolk.initrd=AbC,7":           {0xabc, 7},
		"xyolk.initrd=0x1000,4096":    {0, 0},
		"yolk.initrd=0x1000":          {0, 0},
		"":                            {0, 0},
	} {
		var s [4096]byte
		copy(s[:], line)
		if a, n := Initrd(&s); a != want[0] || n != want[1] {
			t.Errorf("%q: %#x, %d", line, a, n)
		}
	}
}
