package qemu

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"yolk/kernel"
	"yolk/qemu/image"
)

func TestQEMUArgs(t *testing.T) {
	got, err := QEMUArgs(Config{Image: "app.elf", Machine: "q35", Accel: "kvm", Memory: "256M", SMP: 2,
		Env: []string{"A=1"}, Args: []string{"x y"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-machine", "q35", "-accel", "kvm", "-cpu", "host", "-m", "256M", "-smp", "2",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
		"-kernel", "app.elf", "-append", `A=1 -- "x y"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("QEMUArgs =\n%q\nwant\n%q", got, want)
	}
	got, _ = QEMUArgs(Config{Image: "app.elf"})
	if strings.Join(got[:10], " ") != "-machine microvm -accel tcg -cpu max -m 128M -smp 1" {
		t.Errorf("defaults: %q", got[:10])
	}
	for _, bad := range []Config{
		{Image: "a", Machine: "isapc"},
		{Image: "a", Accel: "hvf"},
		{Image: "a", Env: []string{"NOEQUALS"}},
		{Machine: "pc"},
	} {
		if _, err := QEMUArgs(bad); err == nil {
			t.Errorf("QEMUArgs(%+v) accepted", bad)
		}
	}
}

// TestQEMUArgsFirecracker: the Firecracker shape is microvm without ACPI
// or RTC, with an i8042 instead of isa-debug-exit, its NIC on virtio-mmio
// (version 2); shares are refused.
func TestQEMUArgsFirecracker(t *testing.T) {
	got, err := QEMUArgs(Config{Image: "app.elf", Machine: Firecracker, SMP: 2, Net: NetUser})
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(got, " ")
	for _, want := range []string{"-machine microvm,acpi=off,rtc=off ", "-smp 2 ", "-no-reboot ", "-device i8042 ",
		"-global virtio-mmio.force-legacy=false ", "-device virtio-net-device,netdev=net0"} {
		if !strings.Contains(s, want) {
			t.Errorf("QEMUArgs = %q, want %q in it", got, want)
		}
	}
	if strings.Contains(s, "isa-debug-exit") || strings.Contains(s, "-pci") {
		t.Errorf("QEMUArgs = %q: isa-debug-exit or a PCI device", got)
	}
	checkVMMShape(t, Firecracker)
}

// checkVMMShape: a VMM's shape is an amd64 machine without virtio-9p: a
// share is refused and the image is not shared for /proc/self/exe.
func checkVMMShape(t *testing.T, machine string) {
	t.Helper()
	if ArchOfMachine(machine) != "amd64" {
		t.Errorf("ArchOfMachine(%q) = %q", machine, ArchOfMachine(machine))
	}
	if _, err := QEMUArgs(Config{Image: "app.elf", Machine: machine, Shares: []Share{{HostDir: "/tmp", GuestPath: "/mnt"}}}); err == nil || !strings.Contains(err.Error(), "virtio-9p") {
		t.Errorf("a share on the %s shape: %v, want a refusal", machine, err)
	}
	c := Config{Image: "app.elf", Machine: machine}
	cleanup, err := exeShare(&c)
	cleanup()
	if err != nil || len(c.Shares) != 0 || len(c.Env) != 0 {
		t.Errorf("exeShare on the %s shape: %v, shares %v, env %q; want none", machine, err, c.Shares, c.Env)
	}
}

// TestQEMUArgsCloudHypervisor: Cloud Hypervisor's shape is microvm with
// hardware-reduced ACPI and a PCIe host bridge, no PIT or PIC, the CMOS
// clock kept, no isa-debug-exit; its NIC is virtio-net-pci (modern only,
// as Cloud Hypervisor's devices are); shares are refused.
func TestQEMUArgsCloudHypervisor(t *testing.T) {
	got, err := QEMUArgs(Config{Image: "app.elf", Machine: CloudHypervisor, SMP: 2, Net: NetUser})
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(got, " ")
	for _, want := range []string{"-machine microvm,acpi=on,pcie=on,pit=off,pic=off ", "-smp 2 ", "-no-reboot ",
		"-device virtio-net-pci,netdev=net0,disable-legacy=on"} {
		if !strings.Contains(s, want) {
			t.Errorf("QEMUArgs = %q, want %q in it", got, want)
		}
	}
	if strings.Contains(s, "isa-debug-exit") || strings.Contains(s, "i8042") || strings.Contains(s, "rtc=off") || strings.Contains(s, "virtio-mmio") {
		t.Errorf("QEMUArgs = %q: isa-debug-exit, an i8042, no RTC or virtio-mmio", got)
	}
	checkVMMShape(t, CloudHypervisor)
}

func TestParseExitLine(t *testing.T) {
	for line, want := range map[string]int{
		"yolk: exit 0": 0, "yolk: exit 3": 3, "yolk: exit 255": 255, "yolk: exit 125\r": 125,
		"yolk: exit 256": -1, "yolk: exit -1": -1, "yolk: exit +1": -1, "yolk: exit 03": -1,
		"yolk: exit ": -1, "yolk: exit 1 ": -1, " yolk: exit 1": -1, "yolk: exit 1x": -1,
	} {
		n, ok := ParseExitLine(line)
		if (want >= 0) != ok || (ok && n != want) {
			t.Errorf("ParseExitLine(%q) = %d, %v; want %d", line, n, ok, want)
		}
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name string
		in   Result
		code int
		msg  string // substring of the only message; "" for none
	}{
		{"marker agrees", Result{Marker: true, GuestExit: 3, QEMUStatus: 7}, 3, ""},
		{"marker 200 wraps", Result{Marker: true, GuestExit: 200, QEMUStatus: 145}, 200, ""},
		{"marker disagrees", Result{Marker: true, GuestExit: 0, QEMUStatus: 5}, 0, "but QEMU exited with status 5"},
		{"no marker, odd", Result{QEMUStatus: 11}, 5, "exit status 5 taken from QEMU's status 11"},
		{"no marker, 1", Result{QEMUStatus: 1}, 0, "taken from QEMU's status 1"},
		{"qemu error 1", Result{QEMUStatus: 1, QEMUStderr: "qemu-system-x86_64: -kernel x: No such file\n"}, ExitQEMU, "QEMU failed (status 1): qemu-system-x86_64: -kernel x"},
		{"qemu warning, odd", Result{QEMUStatus: 7, QEMUStderr: "qemu-system-x86_64: warning: foo\n"}, 3, "taken from"},
		{"reset", Result{QEMUStatus: 0}, ExitReset, "guest reset without an exit report (triple fault?)"},
		{"signal", Result{QEMUStatus: -1, QEMUStderr: "qemu-system-x86_64: kvm.c: Assertion failed.\n"}, ExitQEMU, "killed by a signal: qemu-system-x86_64: kvm.c"},
		{"even", Result{QEMUStatus: 2}, ExitQEMU, "QEMU failed (status 2)"},
		{"timeout", Result{TimedOut: true, Marker: true, GuestExit: 0, QEMUStatus: -1}, ExitTimeout, "yolk: timeout after 1m30s"},
	}
	for _, c := range cases {
		r := c.in
		decide(&r, 90*time.Second, "qemu-system-x86_64", "amd64", false)
		if r.ExitCode != c.code {
			t.Errorf("%s: exit %d, want %d (%q)", c.name, r.ExitCode, c.code, r.Messages)
		}
		if mismatch := c.name == "marker disagrees"; (r.Mismatch != "") != mismatch {
			t.Errorf("%s: Mismatch %q, want one: %v", c.name, r.Mismatch, mismatch)
		}
		switch {
		case c.msg == "" && len(r.Messages) != 0:
			t.Errorf("%s: unexpected messages %q", c.name, r.Messages)
		case c.msg != "" && (len(r.Messages) != 1 || !strings.Contains(r.Messages[0], c.msg)):
			t.Errorf("%s: messages %q, want one containing %q", c.name, r.Messages, c.msg)
		}
	}
}

// TestDecideReset: on the Firecracker shape the guest resets the machine
// after its exit line and QEMU (-no-reboot) exits 0, whatever the status:
// the line is the status, and an odd QEMU status is no guest's.
func TestDecideReset(t *testing.T) {
	cases := []struct {
		name     string
		in       Result
		code     int
		mismatch bool
		msg      string
	}{
		{"exit 0", Result{Marker: true, GuestExit: 0, QEMUStatus: 0}, 0, false, ""},
		{"exit 3", Result{Marker: true, GuestExit: 3, QEMUStatus: 0}, 3, false, ""},
		{"fault 125", Result{Marker: true, GuestExit: 125, QEMUStatus: 0}, 125, false, ""},
		{"debug-exit status", Result{Marker: true, GuestExit: 3, QEMUStatus: 7}, 3, true, "a power-off or a reset gives 0"},
		{"no marker", Result{QEMUStatus: 0}, ExitReset, false, "without an exit report"},
		{"no marker, odd", Result{QEMUStatus: 1}, ExitQEMU, false, "QEMU failed (status 1)"},
	}
	for _, c := range cases {
		r := c.in
		decide(&r, time.Minute, "qemu-system-x86_64", "amd64", true)
		if r.ExitCode != c.code || (r.Mismatch != "") != c.mismatch {
			t.Errorf("%s: exit %d, mismatch %q; want %d, %v", c.name, r.ExitCode, r.Mismatch, c.code, c.mismatch)
		}
		switch {
		case c.msg == "" && len(r.Messages) != 0:
			t.Errorf("%s: unexpected messages %q", c.name, r.Messages)
		case c.msg != "" && (len(r.Messages) != 1 || !strings.Contains(r.Messages[0], c.msg)):
			t.Errorf("%s: messages %q, want one containing %q", c.name, r.Messages, c.msg)
		}
	}
}

// TestDecideArm64: semihosting's status is the guest's N itself.
func TestDecideArm64(t *testing.T) {
	cases := []struct {
		name     string
		in       Result
		code     int
		mismatch bool
		msg      string
	}{
		{"marker agrees", Result{Marker: true, GuestExit: 3, QEMUStatus: 3}, 3, false, ""},
		{"marker 125", Result{Marker: true, GuestExit: 125, QEMUStatus: 125}, 125, false, ""},
		{"marker disagrees", Result{Marker: true, GuestExit: 0, QEMUStatus: 7}, 0, true, "semihosting gives 0"},
		{"no marker", Result{QEMUStatus: 2}, 2, false, "exit status 2 taken from QEMU's (semihosting) status"},
		{"qemu error", Result{QEMUStatus: 1, QEMUStderr: "qemu-system-aarch64: -kernel x: No such file\n"}, ExitQEMU, false, "QEMU failed (status 1)"},
		{"power off", Result{QEMUStatus: 0}, ExitReset, false, "without an exit report"},
	}
	for _, c := range cases {
		r := c.in
		decide(&r, time.Minute, "qemu-system-aarch64", "arm64", false)
		if r.ExitCode != c.code || (r.Mismatch != "") != c.mismatch {
			t.Errorf("%s: exit %d mismatch %q, want %d, %v", c.name, r.ExitCode, r.Mismatch, c.code, c.mismatch)
		}
		if c.msg != "" && (len(r.Messages) != 1 || !strings.Contains(r.Messages[0], c.msg)) {
			t.Errorf("%s: messages %q, want one containing %q", c.name, r.Messages, c.msg)
		}
	}
}

// TestQEMUArgsArm64: virt with the GIC version of the machine name,
// semihosting instead of isa-debug-exit, and the boot archive through a
// loader device at the top of RAM, named on the command line.
func TestQEMUArgsArm64(t *testing.T) {
	rd := filepath.Join(t.TempDir(), "rd")
	if err := os.WriteFile(rd, make([]byte, 100_000), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := QEMUArgs(Config{Image: "app.elf", Arch: "arm64", Machine: "virt-gicv3", SMP: 2, Initrd: rd, Env: []string{"A=1"}})
	if err != nil {
		t.Fatal(err)
	}
	// 128 MiB: the archive rounds up to 128 KiB and ends 64 KiB below the top.
	addr := 0x40000000 + 128<<20 - 128<<10 - 64<<10
	want := []string{
		"-machine", "virt,gic-version=3", "-accel", "tcg", "-cpu", "cortex-a72", "-m", "128M", "-smp", "2",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
		"-semihosting-config", "enable=on,target=native",
		"-kernel", "app.elf", "-append", fmt.Sprintf("A=1 yolk.initrd=%#x,100000 --", addr),
		"-device", fmt.Sprintf("loader,file=%s,addr=%#x,force-raw=on", rd, addr),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("QEMUArgs =\n%q\nwant\n%q", got, want)
	}
	got, _ = QEMUArgs(Config{Image: "app.elf", Arch: "arm64"})
	if strings.Join(got[:10], " ") != "-machine virt,gic-version=2 -accel tcg -cpu cortex-a72 -m 128M -smp 1" {
		t.Errorf("defaults: %q", got[:10])
	}
	for _, bad := range []Config{
		{Image: "a", Arch: "arm64", Machine: "q35"},
		{Image: "a", Machine: "virt"},
		{Image: "a", Arch: "riscv64"},
		{Image: "a", Arch: "arm64", Initrd: rd, Memory: "64M"},
		{Image: "a", Arch: "arm64", Initrd: rd, Memory: "lots"},
	} {
		if _, err := QEMUArgs(bad); err == nil {
			t.Errorf("QEMUArgs(%+v) accepted", bad)
		}
	}
	if _, err := QEMUArgs(Config{Image: "a", Arch: "arm64", Machine: "q35"}); err == nil || !strings.Contains(err.Error(), "amd64 machine") {
		t.Errorf("arm64 image on q35: %v, want it to name the architectures", err)
	}
}

func TestMemBytes(t *testing.T) {
	for in, want := range map[string]uint64{"128M": 128 << 20, "1G": 1 << 30, "512": 512 << 20, "2g": 2 << 30, "65536K": 64 << 20} {
		if got, err := memBytes(in); err != nil || got != want {
			t.Errorf("memBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "M", "-1M", "1.5G", "0"} {
		if _, err := memBytes(bad); err == nil {
			t.Errorf("memBytes(%q) accepted", bad)
		}
	}
}

func TestSerialStream(t *testing.T) {
	sym := func(pc uint64, first bool) string {
		if pc == 0x1234 {
			return ""
		}
		return fmt.Sprintf("f%x/%v", pc, first)
	}
	in := "boot\r\n" +
		"yolk:   at 0x0000000000456789\n" +
		"yolk:   at 0x00000000004567AB\r\n" +
		"yolk:   at 0x0000000000001234\n" +
		"x\n" +
		"yolk:   at 0x0000000000000042\n" +
		"yolk:   at 0x000000000045678\n" + // 15 digits: not a frame
		" yolk:   at 0x0000000000456789\n" +
		"prompt> "
	want := "boot\r\n" +
		"yolk:   at 0x0000000000456789 f456789/true\n" +
		"yolk:   at 0x00000000004567AB f4567ab/false\r\n" +
		"yolk:   at 0x0000000000001234\n" +
		"x\n" +
		"yolk:   at 0x0000000000000042 f42/true\n" +
		"yolk:   at 0x000000000045678\n" +
		" yolk:   at 0x0000000000456789\n" +
		"prompt> "
	for _, chunk := range []int{1, 3, 7, len(in)} {
		var out bytes.Buffer
		var lines []string
		s := &serialStream{out: &out, symbolize: sym, onLine: func(l string) { lines = append(lines, l) }}
		for i := 0; i < len(in); i += chunk {
			s.Write([]byte(in[i:min(i+chunk, len(in))]))
		}
		// "prompt> " cannot become a frame line: it is out before its newline.
		if out.String() != want {
			t.Errorf("chunk %d:\n got %q\nwant %q", chunk, out.String(), want)
		}
		s.Close()
		if out.String() != want {
			t.Errorf("chunk %d: Close changed the output: %q", chunk, out.String())
		}
		if len(lines) != 9 || lines[0] != "boot\r" || lines[8] != "prompt> " ||
			lines[2] != "yolk:   at 0x00000000004567AB f4567ab/false\r" {
			t.Errorf("chunk %d: lines %q", chunk, lines)
		}
	}

	// A partial line that may still become a frame line is held back.
	var out bytes.Buffer
	s := &serialStream{out: &out, symbolize: sym}
	s.Write([]byte("yolk:   at 0x00000000004567"))
	if out.Len() != 0 {
		t.Errorf("partial frame line written early: %q", out.String())
	}
	s.Write([]byte("89\n"))
	if out.String() != "yolk:   at 0x0000000000456789 f456789/true\n" {
		t.Errorf("held frame line: %q", out.String())
	}
}

// needQEMU fails (not skips) without QEMU: the Makefile installs it.
func needQEMU(t *testing.T) {
	t.Helper()
	if _, err := FindQEMU(); err != nil {
		t.Fatal(err)
	}
}

func runStub(t *testing.T, entry, machine string, c Config) (*Result, string) {
	t.Helper()
	if c.Image == "" {
		c.Image = stubImage(t, entry)
	}
	c.Machine = machine
	if c.Timeout == 0 {
		c.Timeout = time.Minute
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if errb.Len() > 0 {
		t.Logf("QEMU stderr: %s", errb.String())
	}
	return res, out.String()
}

func TestRunStubOnEachMachine(t *testing.T) {
	needQEMU(t)
	for _, m := range Machines {
		t.Run(m, func(t *testing.T) {
			if vmmMachine(m) {
				// The stub ends the VM through isa-debug-exit, which
				// the VMMs' machines have not; the kernel's exits there
				// are TestFirecrackerShapes' and
				// TestCloudHypervisorShapes'.
				t.Skip("the stub exits through isa-debug-exit only")
			}
			res, out := runStub(t, "stubExit3", m, Config{})
			if out != "hello from the stub\nyolk: exit 3\n" {
				t.Errorf("serial output %q", out)
			}
			if res.ExitCode != 3 || !res.Marker || res.QEMUStatus != 7 || len(res.Messages) != 0 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestRunStubCmdline(t *testing.T) {
	needQEMU(t)
	env := []string{"HOME=/", `Q=a "b" \c`}
	args := []string{"plain", "two words", "", "--", `back\slash`}
	res, out := runStub(t, "stubEcho", "microvm", Config{Env: env, Args: args})
	// Run adds the image file's share for /proc/self/exe (exe.go).
	wantEnv := append(slices.Clip(env), "yolk.exe=/yolk/exe/stubEcho.elf", "yolk.share=yolk0:/yolk/exe")
	want, _ := Cmdline(wantEnv, args)
	if out != want+"\nyolk: exit 0\n" {
		t.Fatalf("guest saw %q, want %q", out, want)
	}
	gotEnv, gotArgs, err := ParseCmdline(strings.TrimSuffix(out, "\nyolk: exit 0\n"))
	if err != nil || !reflect.DeepEqual(gotEnv, wantEnv) || !reflect.DeepEqual(gotArgs, args) {
		t.Errorf("decoded %q %q %v", gotEnv, gotArgs, err)
	}
	if res.ExitCode != 0 || res.QEMUStatus != 1 {
		t.Errorf("result %+v", res)
	}
}

func TestRunStubOutcomes(t *testing.T) {
	needQEMU(t)
	t.Run("exit200", func(t *testing.T) {
		res, _ := runStub(t, "stubExit200", "microvm", Config{})
		if res.ExitCode != 200 || res.QEMUStatus != (200<<1|1)&0xff || len(res.Messages) != 0 {
			t.Errorf("%+v", res)
		}
	})
	t.Run("no marker", func(t *testing.T) {
		res, _ := runStub(t, "stubNoMark", "microvm", Config{})
		if res.ExitCode != 5 || res.Marker || len(res.Messages) != 1 || !strings.Contains(res.Messages[0], "warning") {
			t.Errorf("%+v", res)
		}
	})
	t.Run("triple fault", func(t *testing.T) {
		for _, m := range Machines {
			res, _ := runStub(t, "stubTriple", m, Config{})
			if res.ExitCode != ExitReset || res.QEMUStatus != 0 ||
				len(res.Messages) != 1 || res.Messages[0] != "yolk: guest reset without an exit report (triple fault?)" {
				t.Errorf("%s: %+v", m, res)
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		res, out := runStub(t, "stubHang", "microvm", Config{Timeout: 1500 * time.Millisecond})
		if !res.TimedOut || res.ExitCode != ExitTimeout || res.Messages[0] != "yolk: timeout after 1.5s" {
			t.Errorf("%+v", res)
		}
		if out != "=== RUN   TestHang\n" {
			t.Errorf("output %q", out)
		}
	})
	t.Run("qemu error", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.elf")
		os.WriteFile(bad, []byte("\x7fELF not really"), 0o644)
		res, _ := runStub(t, "", "microvm", Config{Image: bad})
		if res.ExitCode != ExitQEMU || !strings.Contains(res.Messages[0], "QEMU failed") {
			t.Errorf("%+v", res)
		}
	})
	t.Run("no qemu", func(t *testing.T) {
		t.Setenv("YOLK_QEMU", "")
		t.Setenv("PATH", t.TempDir())
		_, err := Run(t.Context(), Config{Image: stubImage(t, "stubExit3")})
		if !errors.Is(err, ErrNoQEMU) || !strings.Contains(err.Error(), "apt-get update && apt-get install -y qemu-system-x86") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestRunStubFaultSymbolized(t *testing.T) {
	needQEMU(t)
	img := stubImage(t, "stubFault")
	f, err := elf.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	var mainPC uint64
	for _, s := range syms {
		if s.Name == "main.main" {
			mainPC = s.Value
		}
	}
	// Frame 0 at main.main+0; frame 1 a return address at main.main+1.
	setFaultPCs(t, img, mainPC, mainPC+1)
	sym, err := image.OpenSymbolizer(img)
	if err != nil {
		t.Fatal(err)
	}
	fr0, _ := sym.Lookup(mainPC, true)
	fr1, _ := sym.Lookup(mainPC+1, false)
	if fr0.Func != "main.main" || fr1.Func != "main.main" || fr1.Offset != 1 {
		t.Fatalf("frames %+v %+v", fr0, fr1)
	}
	res, out := runStub(t, "", "microvm", Config{Image: img})
	want := "yolk: fault: vector 6 (#UD)\n" +
		fmt.Sprintf("yolk:   at 0x%016x %s\r\n", mainPC, fr0) +
		fmt.Sprintf("yolk:   at 0x%016x %s\n", mainPC+1, fr1) +
		"yolk: exit 125\n"
	if out != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}
	if res.ExitCode != 125 {
		t.Errorf("%+v", res)
	}
}

// TestExitCodesDistinct: every status the runner or the command makes up
// means one thing, and none is the kernel's fault status.
func TestExitCodesDistinct(t *testing.T) {
	codes := map[string]int{
		"kernel.ExitFault": kernel.ExitFault, "ExitReset": ExitReset, "ExitTimeout": ExitTimeout,
		"ExitQEMU": ExitQEMU, "QEMU missing": 127, "interrupted": 130, "Go panic": 2,
	}
	seen := map[int]string{}
	for name, c := range codes {
		if other, ok := seen[c]; ok {
			t.Errorf("exit status %d means both %s and %s", c, name, other)
		}
		seen[c] = name
	}
}

// TestFrameConsole: every byte value passes (0xFF escaped), and the end of
// input is marked, also for no input.
func TestFrameConsole(t *testing.T) {
	var in []byte
	for i := 0; i < 512; i++ {
		in = append(in, byte(i))
	}
	var out bytes.Buffer
	if err := FrameConsole(&out, bytes.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	// Decode as kernel/conin does.
	var got []byte
	eof, esc := false, false
	for _, c := range out.Bytes() {
		switch {
		case eof:
			t.Fatalf("bytes after the end mark")
		case esc:
			esc = false
			if c == consoleEscEOF {
				eof = true
				continue
			}
			if c == consoleEscByte {
				c = consoleEsc
			}
			got = append(got, c)
		case c == consoleEsc:
			esc = true
		default:
			got = append(got, c)
		}
	}
	if !eof || !bytes.Equal(got, in) {
		t.Errorf("decoded %d bytes (end %v), want the %d sent", len(got), eof, len(in))
	}
	out.Reset()
	FrameConsole(&out, nil)
	if !bytes.Equal(out.Bytes(), []byte{0xFF, 0x01}) {
		t.Errorf("no input: %x", out.Bytes())
	}
}

// TestImageArch: the ELF header's machine names the image's architecture
// (and so the emulator Run starts); anything else is an error that says
// what the file is.
func TestImageArch(t *testing.T) {
	dir := t.TempDir()
	header := func(name string, machine elf.Machine) string {
		h := make([]byte, 64)
		copy(h, "\x7fELF\x02\x01\x01")
		le := binary.LittleEndian
		le.PutUint16(h[16:], uint16(elf.ET_EXEC))
		le.PutUint16(h[18:], uint16(machine))
		le.PutUint32(h[20:], 1)
		le.PutUint16(h[52:], 64) // e_ehsize
		le.PutUint16(h[54:], 56) // e_phentsize
		le.PutUint16(h[58:], 64) // e_shentsize
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, h, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for path, want := range map[string]string{
		header("x86.elf", elf.EM_X86_64):  "amd64",
		header("arm.elf", elf.EM_AARCH64): "arm64",
	} {
		if got, err := ImageArch(path); err != nil || got != want {
			t.Errorf("ImageArch(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	notELF := filepath.Join(dir, "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o644)
	for path, msg := range map[string]string{
		header("riscv.elf", elf.EM_RISCV): "EM_RISCV",
		notELF:                            "not an ELF image",
		filepath.Join(dir, "missing"):     "no such file",
	} {
		if _, err := ImageArch(path); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ImageArch(%s): err = %v, want it to contain %q", filepath.Base(path), err, msg)
		}
	}
	if MachinesFor("arm64")[0] != "virt" || MachinesFor("amd64")[0] != "microvm" {
		t.Error("default machines: want virt (arm64) and microvm (amd64)")
	}
	for m, arch := range map[string]string{"virt": "arm64", "virt-gicv3": "arm64", "q35": "amd64", "microvm": "amd64", "raspi3b": ""} {
		if got := ArchOfMachine(m); got != arch {
			t.Errorf("ArchOfMachine(%q) = %q, want %q", m, got, arch)
		}
	}
}

// TestArmInitrd: the boot archive's address is 0x40000000 + RAM -
// roundup(size, 64 KiB) - 64 KiB, and the command line names it in hex
// with the size in decimal, as a yolk.* entry before the arguments.
func TestArmInitrd(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		size int
		mem  string
		addr uint64
	}{
		{100_000, "", 0x40000000 + 128<<20 - 128<<10 - 64<<10},
		{64 << 10, "1G", 0x40000000 + 1<<30 - 64<<10 - 64<<10},
		{64<<10 + 1, "256M", 0x40000000 + 256<<20 - 128<<10 - 64<<10},
		{1, "2G", 0x40000000 + 2<<30 - 64<<10 - 64<<10},
		{0, "128M", 0x40000000 + 128<<20 - 64<<10},
	} {
		rd := filepath.Join(dir, fmt.Sprint(c.size))
		if err := os.WriteFile(rd, make([]byte, c.size), 0o644); err != nil {
			t.Fatal(err)
		}
		args, err := QEMUArgs(Config{Image: "app.elf", Arch: "arm64", Memory: c.mem, Initrd: rd, Args: []string{"a"}})
		if err != nil {
			t.Errorf("%d bytes, -m %q: %v", c.size, c.mem, err)
			continue
		}
		line := strings.Join(args, " ")
		loader := fmt.Sprintf("-device loader,file=%s,addr=0x%x,force-raw=on", rd, c.addr)
		cmdline := fmt.Sprintf("-append yolk.initrd=0x%x,%d -- a", c.addr, c.size)
		if !strings.Contains(line, loader) || !strings.Contains(line, cmdline) || strings.Contains(line, "-initrd") {
			t.Errorf("%d bytes, -m %q: %s\nwant %q and %q", c.size, c.mem, line, loader, cmdline)
		}
	}
	// amd64 keeps -initrd, and no yolk.initrd on its command line.
	rd := filepath.Join(dir, "1")
	args, err := QEMUArgs(Config{Image: "app.elf", Initrd: rd})
	if line := strings.Join(args, " "); err != nil || !strings.Contains(line, "-initrd "+rd) || strings.Contains(line, "yolk.initrd") || strings.Contains(line, "loader") {
		t.Errorf("amd64: %s, %v", line, err)
	}
	if _, err := QEMUArgs(Config{Image: "app.elf", Arch: "arm64", Initrd: filepath.Join(dir, "missing")}); err == nil {
		t.Error("missing archive accepted")
	}
}

// TestFindQEMUFor: each architecture's emulator, its own override
// variable (the guest suite boots both in one run), and the install hint.
func TestFindQEMUFor(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "my-qemu")
	os.WriteFile(fake, nil, 0o755)
	t.Setenv("PATH", "/nonexistent")
	t.Setenv("YOLK_QEMU", fake)
	t.Setenv("YOLK_QEMU_ARM64", "")
	if p, err := FindQEMUFor("amd64"); err != nil || p != fake {
		t.Errorf("amd64 with $YOLK_QEMU: %q, %v", p, err)
	}
	if _, err := FindQEMUFor("arm64"); !errors.Is(err, ErrNoQEMU) || !strings.Contains(err.Error(), "qemu-system-aarch64 is not installed; install it with: "+ArmInstallHint) {
		t.Errorf("arm64 without qemu-system-aarch64: %v", err)
	}
	t.Setenv("YOLK_QEMU_ARM64", fake)
	if p, err := FindQEMUFor("arm64"); err != nil || p != fake {
		t.Errorf("arm64 with $YOLK_QEMU_ARM64: %q, %v", p, err)
	}
	t.Setenv("YOLK_QEMU_ARM64", fake+".missing")
	if _, err := FindQEMUFor("arm64"); err == nil || !strings.Contains(err.Error(), "$YOLK_QEMU_ARM64") {
		t.Errorf("missing $YOLK_QEMU_ARM64: %v", err)
	}
}
