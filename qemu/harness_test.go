package qemu

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestGuestHarness runs TestGuest in a child test process on stub images
// that print recorded guest reports, and checks what the harness makes of
// them: which subtests pass, fail or skip, and which run-level problems it
// names.
func TestGuestHarness(t *testing.T) {
	needQEMU(t)
	cases := []struct {
		entry    string
		fail     bool
		want     []string // lines (trimmed) that must appear in the child's output
		benchOut bool
	}{
		{"stubReportPass", false, []string{
			"--- PASS: TestGuest/microvm/TestMemoryReserveCommit (",
			"--- PASS: TestGuest/microvm/TestTimers/20us (",
			"--- PASS: TestGuest/microvm/TestTimers/1ms (",
			"--- SKIP: TestGuest/microvm/TestKVMClock (",
			"--- PASS: TestGuest (",
		}, true},
		{"stubReportFail", true, []string{
			"--- PASS: TestGuest/microvm/TestFutexTimeout (",
			"--- FAIL: TestGuest/microvm/TestSched/NoTaskLost (",
			"--- PASS: TestGuest/microvm/TestSched/NodeBound (",
			"--- FAIL: TestGuest/microvm/TestSched (",
			"sched_test.go:88: task 17 ran twice",
			"guest: --- FAIL: TestSched/NoTaskLost (0.03s)",
		}, false},
		{"stubReportHang", true, []string{
			"--- PASS: TestGuest/microvm/TestMemoryReserveCommit (",
			"--- FAIL: TestGuest/microvm/TestGoroutines10k (",
			"yolk: timeout after 2s",
			"timeout after 2s while guest test TestGoroutines10k was running",
			"no final PASS/FAIL summary line from the guest",
		}, false},
		{"stubReportFault", true, []string{
			"kernel fault report:",
			"yolk: fault: vector 14 (#PF) error 0x2 cr2 0x00000000dead0000",
			"guest test TestFault never reported a result",
		}, false},
		{"stubReportPanic", true, []string{
			"--- PASS: TestGuest/microvm/TestMaps (",
			"Go panic in the guest:",
			"panic: boom [recovered, repanicked]",
		}, false},
		{"stubReportWatchdog", true, []string{
			"--- PASS: TestGuest/microvm/TestBoot (",
			"--- FAIL: TestGuest/microvm/TestTimerSleepAccuracy (",
			"test timed out after 50ms (-timeout)",
			"guest: --- FAIL: TestTimerSleepAccuracy (timeout)",
		}, false},
		{"stubReportMismatch", true, []string{
			"--- PASS: TestGuest/microvm/TestMemoryReserveCommit (",
			"guest reported exit 0 but QEMU exited with status 3 (isa-debug-exit gives 1)",
			"--- FAIL: TestGuest/microvm (",
		}, true},
	}
	for _, c := range cases {
		t.Run(c.entry, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestGuest$", "-test.v", "-test.timeout=2m")
			cmd.Env = append(os.Environ(),
				"YOLK_SELFTEST_IMAGE="+stubImage(t, c.entry),
				"YOLK_OUT="+out, "YOLK_ACCEL=tcg", "YOLK_MACHINE=microvm", "YOLK_TIMEOUT=2s")
			b, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if c.fail != (errors.As(err, &ee) && ee.ExitCode() == 1) || (!c.fail && err != nil) {
				t.Errorf("child test: err = %v, want failure %v", err, c.fail)
			}
			lines := strings.Split(string(b), "\n")
			for _, w := range c.want {
				found := false
				for _, l := range lines {
					found = found || strings.Contains(l, w)
				}
				if !found {
					t.Errorf("child output lacks %q", w)
				}
			}
			if !strings.Contains(string(b), "yolk: accel tcg (forced)") {
				t.Errorf("child output lacks the accelerator line")
			}
			log, err := os.ReadFile(filepath.Join(out, "selftest-microvm.log"))
			if err != nil || !strings.HasPrefix(string(log), "yolk: accel tcg (forced)\n") {
				t.Errorf("serial log: %v %.80q", err, log)
			}
			bench, err := os.ReadFile(filepath.Join(out, "bench-microvm.txt"))
			if c.benchOut {
				want := "goos: linux\ngoarch: amd64\npkg: yolk/kernel/selftest\ncpu: QEMU TCG CPU version 2.5+\n" +
					"machine: microvm\ncpus: 1\naccel: tcg\n" +
					"BenchmarkTaskSwitch/minimal-1         \t 1000000\t       512.0 ns/op\n"
				if err != nil || !strings.HasPrefix(string(bench), want) || strings.Count(string(bench), "\nBenchmark") != 3 {
					t.Errorf("bench file %v:\n%s", err, bench)
				}
			} else if err == nil {
				t.Errorf("bench file written without benchmarks")
			}
			if t.Failed() {
				t.Logf("child output:\n%s", b)
			}
		})
	}
}

// TestGuestEntries: $YOLK_MACHINE names the entries; otherwise $YOLK_ARCH
// picks the architectures whose default entries run.
func TestGuestEntries(t *testing.T) {
	all := append(append([]string{}, guestMachines["amd64"]...), guestMachines["arm64"]...)
	for _, c := range []struct {
		machine, arch string
		want          []string
	}{
		{"", "amd64", guestMachines["amd64"]},
		{"", "arm64", []string{"virt:1", "virt:2", "virt-gicv3:1", "virt-gicv3:2", "rpi3"}},
		{"", "all", all},
		{"", "", map[string][]string{"all": all, "amd64": guestMachines["amd64"]}[defaultGuestArch]},
		{"virt:1,virt-gicv3:2", "", []string{"virt:1", "virt-gicv3:2"}},
		{"q35@6G:2", "arm64", []string{"q35@6G:2"}},
	} {
		got, err := guestEntries(c.machine, c.arch)
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("YOLK_MACHINE=%q YOLK_ARCH=%q: %q, %v; want %q", c.machine, c.arch, got, err, c.want)
		}
	}
	for arch, entries := range guestMachines {
		for _, e := range entries {
			if _, _, _, a, err := guestEntry(e); err != nil || a != arch {
				t.Errorf("default entry %q: arch %q, %v; want %s", e, a, err, arch)
			}
		}
	}
	// The guest tests' names, from the self-test's sources.
	var guest []string
	srcs, _ := filepath.Glob(filepath.Join("..", "kernel", "selftest", "*.go"))
	for _, f := range srcs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\{"(Test[A-Za-z0-9]+)", *test`).FindAllStringSubmatch(string(b), -1) {
			guest = append(guest, m[1])
		}
	}
	if len(guest) < 100 {
		t.Fatalf("%d guest tests found in kernel/selftest's sources", len(guest))
	}
	// A subset names a default entry, and a valid regular expression.
	for e, run := range subsetTests {
		if !slices.Contains(all, e) {
			t.Errorf("subsetTests names %q, not a default entry", e)
		}
		if _, err := regexp.Compile(run); err != nil {
			t.Errorf("subsetTests[%q]: %v", e, err)
		}
		// Each name in it is a guest test's (a misspelt one would
		// quietly leave its test out).
		for _, alt := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(run, "^("), ")$"), "|") {
			re := regexp.MustCompile("^" + alt + "$")
			if !slices.ContainsFunc(guest, re.MatchString) {
				t.Errorf("subsetTests[%q]: %q names no guest test", e, alt)
			}
		}
	}
	for _, bad := range [][2]string{{"", "riscv64"}, {"", "x86"}, {"virt:0", ""}, {"raspi3b", ""}, {"virt,", ""}} {
		if _, err := guestEntries(bad[0], bad[1]); err == nil {
			t.Errorf("YOLK_MACHINE=%q YOLK_ARCH=%q accepted", bad[0], bad[1])
		}
	}
	for e, want := range map[string][3]string{"virt-gicv3@256M:2": {"virt-gicv3", "256M", "arm64"}, "virt": {"virt", "", "arm64"}, "rpi3": {"raspi3b", "", "arm64"}} {
		m, mem, cpus, arch, err := guestEntry(e)
		if err != nil || m != want[0] || mem != want[1] || arch != want[2] || cpus != map[string]int{"virt-gicv3@256M:2": 2, "virt": 1, "rpi3": 4}[e] {
			t.Errorf("guestEntry(%q) = %q %q %d %q %v", e, m, mem, cpus, arch, err)
		}
	}
}

// TestGuestMissingEmulator: arm64 entries without qemu-system-aarch64 fail
// TestGuest with the command that installs it; they are never skipped.
func TestGuestMissingEmulator(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuest$", "-test.v", "-test.timeout=1m")
	cmd.Env = append(os.Environ(), "PATH=/nonexistent", "YOLK_QEMU_ARM64=", "YOLK_MACHINE=", "YOLK_ARCH=arm64",
		"YOLK_OUT="+t.TempDir(), "YOLK_SELFTEST_IMAGE_ARM64=/nonexistent/selftest-arm64.elf")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 ||
		!strings.Contains(string(b), "qemu-system-aarch64 is not installed; install it with: "+ArmInstallHint) ||
		!strings.Contains(string(b), "--- FAIL: TestGuest") {
		t.Errorf("child test: %v\n%s", err, b)
	}
}
