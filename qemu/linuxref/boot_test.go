package linuxref

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"yolk/qemu"
)

func TestCmdline(t *testing.T) {
	c := Config{Params: []string{"vdso=0"}, Env: []string{"GODEBUG=x=1"}, Args: []string{"-run", "^$", "-bench", "."}}
	got, err := c.Cmdline()
	if err != nil {
		t.Fatal(err)
	}
	if want := "console=ttyS0 panic=-1 vdso=0 GODEBUG=x=1 -- -run ^$ -bench ."; got != want {
		t.Errorf("Cmdline = %q, want %q", got, want)
	}
	c = Config{Quiet: true}
	if got, _ := c.Cmdline(); got != "console=ttyS0 panic=-1 quiet --" {
		t.Errorf("quiet, no args: %q", got)
	}
	for _, bad := range []Config{
		{Args: []string{"two words"}},
		{Args: []string{`a"b`}},
		{Args: []string{""}},
		{Args: []string{"nul\x00"}},
		{Env: []string{"NOEQUALS"}},
		{Env: []string{"=v"}},
		{Env: []string{"mod.param=1"}},
		{Env: []string{"K=two words"}},
		{Params: []string{"--"}},
		{Params: []string{"a b"}},
	} {
		if s, err := bad.Cmdline(); err == nil {
			t.Errorf("%+v accepted as %q", bad, s)
		}
	}
}

// TestSameQEMUConfiguration asserts that the Linux boot differs from a yolk
// boot on the same machine and CPU count only in what QEMU loads: the
// kernel file, the command line and the initramfs.
func TestSameQEMUConfiguration(t *testing.T) {
	for _, tc := range []struct {
		m       string
		smp     int
		wantSMP string
	}{
		{"", 0, "1"}, {"microvm", 0, "1"}, {"pc", 0, "1"}, {"q35", 0, "1"}, {"", 2, "2"},
		{"microvm", 2, "2"}, {"pc", 1, "1"}, {"pc", 2, "2"}, {"q35", 2, "2"}, {"pc", 4, "4"},
	} {
		m := fmt.Sprintf("%s smp %d", tc.m, tc.smp)
		c := Config{Machine: tc.m, SMP: tc.smp, Kernel: "vmlinuz", Initrd: "initrd.cpio", Args: []string{"-bench", "."}}
		lx, err := QEMUArgs(c)
		if err != nil {
			t.Fatal(err)
		}
		// The command boots yolk with c.Yolk; check that and a
		// configuration written out by hand.
		yk, err := qemu.QEMUArgs(c.Yolk("vmlinuz"))
		if err != nil {
			t.Fatal(err)
		}
		machine := tc.m
		if machine == "" {
			machine = "pc"
		}
		yk2, err := qemu.QEMUArgs(qemu.Config{Machine: machine, SMP: tc.smp, Accel: "tcg", Image: "vmlinuz", Args: []string{"-bench", "."}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(yk, yk2) {
			t.Errorf("%s: Config.Yolk boots\n%q\nwant\n%q", m, yk, yk2)
		}
		for side, a := range map[string][]string{"Linux": lx, "yolk": yk} {
			if i := slices.Index(a, "-smp"); i < 0 || a[i+1] != tc.wantSMP {
				t.Errorf("%s: %s boot has no -smp %s: %q", m, side, tc.wantSMP, a)
			}
		}
		strip := func(a []string) []string {
			var out []string
			for i := 0; i < len(a); i++ {
				if a[i] == "-append" || a[i] == "-initrd" {
					i++
					continue
				}
				out = append(out, a[i])
			}
			return out
		}
		if !slices.Equal(strip(lx), strip(yk)) {
			t.Errorf("%s: Linux boot\n%q\nyolk boot\n%q", m, lx, yk)
		}
		if i := slices.Index(lx, "-initrd"); i < 0 || lx[i+1] != "initrd.cpio" {
			t.Errorf("%s: no -initrd initrd.cpio in %q", m, lx)
		}
	}
	c := Config{Machine: "q35", Memory: "256M", SMP: 2, Kernel: "k", Initrd: "i", Env: []string{"A=1"}, Args: []string{"-x"}}
	lx, _ := QEMUArgs(c)
	yk, _ := qemu.QEMUArgs(c.Yolk("k"))
	if strings.Join(lx[:10], " ") != "-machine q35 -accel tcg -cpu max -m 256M -smp 2" || !slices.Equal(lx[:len(yk)-1], yk[:len(yk)-1]) {
		t.Errorf("memory and CPUs: Linux boot\n%q\nyolk boot\n%q", lx, yk)
	}
	lx, _ = QEMUArgs(Config{Kernel: "k", Initrd: "i"})
	if i := slices.Index(lx, "-machine"); lx[i+1] != "pc" {
		t.Errorf("default machine %q, want pc", lx[i+1])
	}
	if _, err := QEMUArgs(Config{Machine: "virt", Kernel: "k", Initrd: "i"}); err == nil {
		t.Error("machine virt accepted")
	}
	if _, err := QEMUArgs(Config{Kernel: "k"}); err == nil {
		t.Error("missing initramfs accepted")
	}
}

func TestObserve(t *testing.T) {
	cases := []struct {
		line           string
		exited         bool
		status, signal int
	}{
		{"[    3.459469] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000000", true, 0, 0},
		{"[    3.4] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100", true, 1, 0},
		{"[    3.4] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000200", true, 2, 0},
		{"[    3.4] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009", true, 0, 9},
		{"[    3.4] Kernel panic - not syncing: VFS: Unable to mount root fs", false, 0, 0},
		{"BenchmarkX-1 1 2 ns/op", false, 0, 0},
	}
	for _, c := range cases {
		var r Result
		r.Observe(c.line)
		if r.InitExited != c.exited || r.ExitStatus != c.status || r.InitSignal != c.signal {
			t.Errorf("%q: exited %v status %d signal %d, want %v %d %d",
				c.line, r.InitExited, r.ExitStatus, r.InitSignal, c.exited, c.status, c.signal)
		}
	}
	var r Result
	r.Observe("[    0.9] clocksource: Switched to clocksource tsc-early")
	r.Observe("[    2.1] clocksource: Switched to clocksource tsc")
	if r.Clocksource != "tsc" {
		t.Errorf("clocksource %q, want the last one, tsc", r.Clocksource)
	}
}

func TestBenchLines(t *testing.T) {
	log := []string{
		"[    1.7] Run /init as init process",
		"goos: linux",
		"goarch: amd64",
		"pkg: yolk/kernel/selftest",
		"BenchmarkSyscallGetpid-1\t 2541082\t       466.4 ns/op\t       0 B/op\t       0 allocs/op\r",
		"[    2.1] clocksource: Switched to clocksource tsc",
		"BenchmarkTimeNow-1\t 66643[    2.2] some kernel message",
		"66\t  181.7 ns/op",
		"BenchmarkTaskSwitchMinimal-1\t23259488\t        51.57 ns/op\t        51.57 ns/roundtrip",
		"BenchmarkTimeNow-1\t 6664366\t       181.7 ns/op",
		"PASS",
	}
	out, names := BenchLines(log)
	wantNames := []string{"BenchmarkSyscallGetpid-1", "BenchmarkTaskSwitchMinimal-1", "BenchmarkTimeNow-1"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("names %q, want %q", names, wantNames)
	}
	if len(out) != 6 || out[0] != "goos: linux" || strings.HasSuffix(out[3], "\r") {
		t.Errorf("lines %q", out)
	}
}

func TestKernelDependency(t *testing.T) {
	meta := "linux-image-cloud-amd64\n  Depends: linux-image-6.1.0-56-cloud-amd64\n"
	if got, err := kernelDependency(meta, "linux-image-cloud-amd64"); err != nil || got != "linux-image-6.1.0-56-cloud-amd64" {
		t.Errorf("meta package: %q, %v", got, err)
	}
	versioned := "linux-image-6.1.0-56-cloud-amd64\n  Depends: kmod\n  Depends: linux-base\n  Recommends: apparmor\n"
	if got, err := kernelDependency(versioned, "linux-image-6.1.0-56-cloud-amd64"); err != nil || got != "linux-image-6.1.0-56-cloud-amd64" {
		t.Errorf("versioned package: %q, %v", got, err)
	}
	if got, err := kernelDependency("hello\n  Depends: libc6\n", "hello"); err == nil {
		t.Errorf("non-kernel package resolved to %q", got)
	}
}

// fakeQEMU writes an executable shell script that stands in for QEMU.
func fakeQEMU(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "qemu")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunFakeQEMU(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Fatalf("the fake QEMU needs /bin/sh: %v", err)
	}
	base := Config{Kernel: "k", Initrd: "i", Args: []string{"-bench", "."}, Timeout: 20 * time.Second}
	ctx := context.Background()

	c := base
	c.QEMU = fakeQEMU(t, `printf 'booting\r\n[ 2.1] clocksource: Switched to clocksource tsc\r\nBenchmarkA-1\t10\t5.0 ns/op\r\n'
printf '[ 3.4] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000300\r\n'`)
	var log strings.Builder
	c.Log = &log
	r, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !r.InitExited || r.ExitStatus != 3 || r.Clocksource != "tsc" || len(r.Lines) != 4 || r.Lines[2] != "BenchmarkA-1\t10\t5.0 ns/op" {
		t.Errorf("result %+v", r)
	}
	if strings.Contains(log.String(), "\r") || !strings.HasPrefix(log.String(), "booting\n") {
		t.Errorf("log %q", log.String())
	}

	c = base
	c.QEMU = fakeQEMU(t, `echo "qemu: could not load kernel" >&2; exit 1`)
	var stderr strings.Builder
	c.Stderr = &stderr
	if r, err := Run(ctx, c); err == nil || r.InitExited {
		t.Errorf("QEMU failure not reported: %+v, %v", r, err)
	}
	if !strings.Contains(stderr.String(), "could not load kernel") {
		t.Errorf("QEMU's stderr not passed on: %q", stderr.String())
	}

	c = base
	c.Timeout = 300 * time.Millisecond
	c.QEMU = fakeQEMU(t, `echo started; exec sleep 30`)
	start := time.Now()
	r, err = Run(ctx, c)
	if err == nil || r == nil || !r.TimedOut || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("timeout not reported: %+v, %v", r, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run returned %v after a 300ms timeout", d)
	}
}

func TestResultDir(t *testing.T) {
	for _, c := range []struct {
		smp  int
		want string
	}{{0, "out/linuxref/pc"}, {1, "out/linuxref/pc"}, {2, "out/linuxref/pc-smp2"}, {4, "out/linuxref/pc-smp4"}} {
		if got := ResultDir("out/linuxref", "pc", c.smp); got != filepath.FromSlash(c.want) {
			t.Errorf("ResultDir(smp %d) = %q, want %q", c.smp, got, c.want)
		}
	}
}

func TestProcs(t *testing.T) {
	names := []string{"BenchmarkA-2", "BenchmarkB/20us-2", "BenchmarkC-1", "BenchmarkD", "BenchmarkE-16"}
	if got := Procs(names); !slices.Equal(got, []int{1, 2, 16}) {
		t.Errorf("Procs = %v, want [1 2 16]", got)
	}
	if got := Procs(nil); len(got) != 0 {
		t.Errorf("Procs(nil) = %v", got)
	}
}

// TestSameQEMUConfigurationArm64: on arm64 too, Linux and yolk boot with
// the same QEMU arguments but for the command line and the initramfs, and
// Linux's console is the PL011.
func TestSameQEMUConfigurationArm64(t *testing.T) {
	for _, m := range []string{"", "virt", "virt-gicv3"} {
		c := Config{Arch: "arm64", Machine: m, SMP: 2, Kernel: "vmlinuz", Initrd: "initrd.cpio", Args: []string{"-bench", "."}}
		lx, err := QEMUArgs(c)
		if err != nil {
			t.Fatal(err)
		}
		yk, err := qemu.QEMUArgs(c.Yolk("vmlinuz"))
		if err != nil {
			t.Fatal(err)
		}
		strip := func(a []string) []string {
			var out []string
			for i := 0; i < len(a); i++ {
				if a[i] == "-append" || a[i] == "-initrd" {
					i++
					continue
				}
				out = append(out, a[i])
			}
			return out
		}
		if !slices.Equal(strip(lx), strip(yk)) {
			t.Errorf("%q: Linux boot\n%q\nyolk boot\n%q", m, lx, yk)
		}
		if cl, _ := c.Cmdline(); !strings.HasPrefix(cl, "console=ttyAMA0 ") {
			t.Errorf("%q: Linux command line %q", m, cl)
		}
	}
	if _, err := QEMUArgs(Config{Arch: "arm64", Machine: "pc", Kernel: "k", Initrd: "i"}); err == nil {
		t.Error("arm64 on pc accepted")
	}
}

// TestShares: a share gives the Linux boot the QEMU devices yolk run
// -share gives a yolk boot (PCI on pc and q35, virtio-mmio on microvm),
// and the guest init's mount entries on the command line.
func TestShares(t *testing.T) {
	dir := t.TempDir()
	shares := []qemu.Share{{HostDir: dir, GuestPath: "/yolk/share"}, {HostDir: dir, GuestPath: "/ro", ReadOnly: true}}
	for _, m := range []string{"pc", "q35", "microvm"} {
		c := Config{Machine: m, Kernel: "k", Initrd: "i", Env: []string{"YOLK_SHARE_DIR=/yolk/share"}, Shares: shares}
		lx, err := QEMUArgs(c)
		if err != nil {
			t.Fatal(err)
		}
		yk, err := qemu.QEMUArgs(c.Yolk("k"))
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := qemu.ShareArgs(shares, m != "microvm")
		if len(lx) < len(want) || !slices.Equal(lx[len(lx)-len(want):], want) || !slices.Equal(yk[len(yk)-len(want):], want) {
			t.Errorf("%s: share arguments\nLinux %q\nyolk  %q\nwant  %q", m, lx, yk, want)
		}
		dev := "virtio-9p-pci"
		if m == "microvm" {
			dev = "virtio-9p-device"
		}
		if !strings.Contains(strings.Join(lx, " "), "-device "+dev+",fsdev=fs1,mount_tag=yolk1") || !strings.Contains(strings.Join(lx, " "), "security_model=none,readonly=on") {
			t.Errorf("%s: no %s for the second, read-only share in %q", m, dev, lx)
		}
		cmdline, err := c.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		if want := "console=ttyS0 panic=-1 YOLK_SHARE_DIR=/yolk/share LINUXREF_9P0=yolk0:/yolk/share LINUXREF_9P1=yolk1:/ro " +
			"LINUXREF_9P_OPTS=trans=virtio,version=9p2000.L,msize=65560,cache=none --"; cmdline != want {
			t.Errorf("%s: command line\n%q\nwant\n%q", m, cmdline, want)
		}
	}
	c := Config{Shares: shares[:1], NineP: "trans=virtio,version=9p2000.L,msize=65560"}
	if got, _ := c.Cmdline(); !strings.HasSuffix(got, " LINUXREF_9P_OPTS=trans=virtio,version=9p2000.L,msize=65560 --") {
		t.Errorf("-9p options: %q", got)
	}
	if got, _ := (Config{}).Cmdline(); strings.Contains(got, "LINUXREF") {
		t.Errorf("no shares, yet %q", got)
	}
	for _, bad := range []Config{
		{Shares: []qemu.Share{{HostDir: dir, GuestPath: "/a b"}}},
		{Shares: []qemu.Share{{HostDir: dir, GuestPath: "/a"}, {HostDir: dir, GuestPath: "/a"}}},
		{Shares: []qemu.Share{{HostDir: filepath.Join(dir, "missing"), GuestPath: "/a"}}},
		{Shares: shares, NineP: "cache=none version=9p2000.L"},
		{Env: []string{"LINUXREF_9P0=x:/y"}},
	} {
		if s, err := bad.Cmdline(); err == nil {
			t.Errorf("%+v accepted as %q", bad, s)
		}
	}
}

// TestDisks: a disk gives the Linux boot the QEMU devices yolk run -disk
// gives a yolk boot (virtio-blk-pci on pc and q35, virtio-blk-device on
// microvm), and the guest init's EnvDisk entries, named as yolk names
// them; NVMe is refused (no modules for it in the initramfs).
func TestDisks(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, n := range []string{"a.img", "b.img"} {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	disks := []qemu.Disk{{File: files[0], If: "virtio", GuestPath: "/mnt/dd"}, {File: files[1], If: "virtio", ReadOnly: true}}
	for _, m := range []string{"pc", "q35", "microvm"} {
		c := Config{Machine: m, Kernel: "k", Initrd: "i", Disks: disks, Args: []string{"/mnt/dd"}}
		lx, err := QEMUArgs(c)
		if err != nil {
			t.Fatal(err)
		}
		yk, err := qemu.QEMUArgs(c.Yolk("k"))
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := qemu.DiskArgs(disks, m != "microvm", false)
		if len(lx) < len(want) || !slices.Equal(lx[len(lx)-len(want):], want) || !strings.Contains(strings.Join(yk, " "), strings.Join(want, " ")) {
			t.Errorf("%s: disk arguments\nLinux %q\nyolk  %q\nwant  %q", m, lx, yk, want)
		}
		dev := "virtio-blk-pci"
		if m == "microvm" {
			dev = "virtio-blk-device"
		}
		if !strings.Contains(strings.Join(lx, " "), "-device "+dev+",drive=disk1") {
			t.Errorf("%s: no %s for the second disk in %q", m, dev, lx)
		}
		cmdline, err := c.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		if want := "console=ttyS0 panic=-1 LINUXREF_DISK0=vda:/mnt/dd LINUXREF_DISK1=vdb:/mnt/disk1:ro -- /mnt/dd"; cmdline != want {
			t.Errorf("%s: command line\n%q\nwant\n%q", m, cmdline, want)
		}
	}
	for _, bad := range []Config{
		{Disks: []qemu.Disk{{File: files[0], If: "nvme"}}},
		{Disks: []qemu.Disk{{File: filepath.Join(dir, "missing"), If: "virtio"}}},
		{Disks: []qemu.Disk{{File: files[0], If: "virtio", GuestPath: "/a"}, {File: files[1], If: "virtio", GuestPath: "/a"}}},
		{Env: []string{"LINUXREF_DISK0=vda:/y"}},
	} {
		if s, err := bad.Cmdline(); err == nil {
			t.Errorf("%+v accepted as %q", bad, s)
		}
	}
}
