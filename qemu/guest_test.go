package qemu

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"yolk/internal/consoletest"
	"yolk/qemu/image"
	"yolk/qemu/report"
)

// SelftestPackage is the guest self-test main package TestGuest boots.
const SelftestPackage = "yolk/kernel/selftest"

// guestMachines are the machines TestGuest boots the self-test image on,
// per architecture, unless $YOLK_MACHINE names others (comma-separated);
// $YOLK_ARCH selects whose run (guestEntries). An entry is
// machine[@memory][:cpus]: the guest's memory after "@" (default 128M;
// q35@6G checks RAM above 4 GiB) and its CPU count after ":" (default 1).
// microvm and pc run the suite at 1, 2 and 4 CPUs (4 vCPUs on CI's 2
// host cores is oversubscribed under TCG on purpose), q35 at 2 (what it
// adds to pc is the chipset, not a CPU count; YOLK_MACHINE=q35:1,q35:4
// runs the others); arm64's virt at 1 and 2 CPUs with each GIC version
// (arm64 at 4 cores is the Raspberry Pi's entry; YOLK_MACHINE=virt:4
// runs virt at 4).
// An arm64 machine boots the arm64 build of the self-test image. Boards
// have entries too: "rpi3" boots the Raspberry Pi 3 SD-card image of the
// self-test on raspi3b (4 cores); iso-bios and iso-uefi the PC image
// (pcEntries). "firecracker:2" boots Firecracker's machine as QEMU
// reproduces it (run.go, Firecracker) at 2 CPUs only: what it adds to
// microvm is the boot (MP table, no RTC, no ACPI) and the exit, not the
// CPU count; it has no shares, so their tests skip. "cloud-hypervisor:2"
// boots Cloud Hypervisor's machine (run.go, CloudHypervisor) at 2 CPUs.
// These two, the PC image's and q35@6G run subsetTests' subsets.
var guestMachines = map[string][]string{
	"amd64": {
		"microvm:1", "microvm:2", "microvm:4",
		"pc:1", "pc:2", "pc:4",
		"q35:2",
		"q35@6G:2",
		"iso-bios:2", "iso-uefi:2",
		"firecracker:2",
		"cloud-hypervisor:2",
	},
	"arm64": {"virt:1", "virt:2", "virt-gicv3:1", "virt-gicv3:2", "rpi3"},
}

// stressTests are the guest tests long by design — work fixed by count
// (10⁶ futex operations, 10 000 connections, an ext4 tree written and
// synced a transaction at a time, a shared mapping written back a
// hundred times or raced by truncations) or by time. What they test
// depends on the architecture, the interrupt controller and the CPU
// count, not on the board around them, so in the default entries they
// run on stressEntries (each architecture and CPU count once, both GIC
// versions; 4 oversubscribed CPUs on microvm, not again on the Pi, where
// 10⁶ futex operations alone take 80–150 s under TCG) and the other
// boards skip them, to keep make test's time. Entries chosen with
// $YOLK_MACHINE run everything.
const stressTests = "^(TestSMPFutexStress|TestSMPFutexTimeoutRace|TestSMPKernelLocks|TestPreemptGCBesideSpinner|TestTCPChurn|TestDiskFS|TestDiskErrors|TestDiskMmap|" +
	"TestShareMmapDirtySMP|TestShareMmapTruncateRace)$"

var stressEntries = map[string]bool{
	"microvm:1": true, "microvm:2": true, "microvm:4": true,
	"virt:1": true, "virt:2": true, "virt-gicv3:2": true,
}

// diskFSEntries are the stress entries that run TestDiskFS: what it
// tests is the file system and the journal above the block layer, the
// same on every machine, so one entry per architecture (at 2 CPUs) runs
// it; TestBlockDevice runs the block layer on every entry.
var diskFSEntries = map[string]bool{"microvm:2": true, "virt:2": true}

// diskFSTests are the tests only diskFSEntries run (the others do not
// attach their disks).
const diskFSTests = "^(TestDiskFS|TestDiskErrors|TestDiskMmap)$"

// subsetTests are the guest tests a default entry runs instead of the
// suite, where what the entry adds to another is its machine, not the
// kernel's behaviour, to keep make test's time. Entries chosen with
// $YOLK_MACHINE run everything.
//
// Cloud Hypervisor's shape adds to microvm the PCI transport (ECAM, BARs
// the kernel places, MSI-X), the TSC calibrated against the CMOS clock
// with no PIT, an I/O APIC without a PIC and the power-off through the
// FADT: so the boot, sleeps and timers (the LAPIC timer calibrated
// against that TSC), the NIC and the network, console input (the UART's
// interrupt), a signal, the CPUs' start and wake-ups, the disks
// (virtio-blk-pci: the raw devices; ext4 above them is diskFSEntries').
// Firecracker's adds to microvm the boot (the MP table, no ACPI, no RTC),
// virtio-mmio devices from the command line and the exit through a
// reset: the same subset. Tests of the kernel's own accounting with
// tight timing bounds (TestCPUClocks, TestVDSOClock, TestSMPTLBShootdown)
// run on the other entries.
//
// The PC image (iso-bios, iso-uefi) adds to q35 GRUB's Multiboot2 boot
// under each firmware: the firmware's memory map, the command line and
// boot archive from GRUB, the firmware's ACPI tables, the console: so
// the boot, arguments and files, memory, timers and clocks, the CPUs,
// console input, /proc's view of the machine. q35@6G adds memory above
// 4 GiB: memory and mappings, the collector, and the devices' DMA
// (disks, NIC, shares) and the copies to and from user memory there.
var subsetTests = map[string]string{
	"cloud-hypervisor:2": vmmSubset,
	"firecracker:2":      vmmSubset,
	"iso-bios:2":         pcImageSubset,
	"iso-uefi:2":         pcImageSubset,
	"q35@6G:2": "^(TestBoot|TestMemory.*|TestMmapErrnoOrder|TestGCUnderPressure|TestGoroutines10k|TestSMPGCParallel|TestSMPTLBShootdown|" +
		"TestBlockDevice|TestNIC|TestWireTCPIn|TestWireTCPOut|TestShare|TestShareMmap|TestShareMmapWriteBack|TestFileMmap|TestFileMmapDB|" +
		"TestUserCopyFault|TestUserCopyPastEOF|TestProcfs)$",
}

const (
	vmmSubset = "^(TestBoot|TestArgsEnv|TestTimerSleepAccuracy|TestTimersChannels|TestFutexTimeout|TestConsoleInput|" +
		"TestSignalNotify|TestUnknownSyscallENOSYS|TestNIC|TestNICMalformed|TestDHCP|TestWireTCPOut|TestWireUDPOut|" +
		"TestWireTCP6Out|TestWireTCPIn|TestDNSLocal|TestHTTPLoopback|TestPreemptSleepBesideSpinner|TestSMPAllCPUsRun|" +
		"TestSMPTimeMonotonic|TestSMPIdleWakeup|TestBlockDevice)$"
	pcImageSubset = "^(TestBoot|TestArgsEnv|TestBootFiles|TestConsoleInput|TestMemory.*|TestGCUnderPressure|TestGoroutines10k|" +
		"TestTimerSleepAccuracy|TestTimersChannels|TestFutexTimeout|TestVDSOClock|TestCPUClocks|TestSignalNotify|" +
		"TestUnknownSyscallENOSYS|TestSMPAllCPUsRun|TestSMPTimeMonotonic|TestSMPIdleWakeup|TestSMPTLBShootdown|" +
		"TestProcfs|TestMounts|TestStatfs|TestTLSNonCanonical)$"
)

// pcEntries are the entry names that boot the PC image (image.BuildISO,
// the self-test's environment, arguments and boot archive built in) from
// q35's CD-ROM drive through GRUB, with SeaBIOS or OVMF.
var pcEntries = map[string]string{"iso-bios": "bios", "iso-uefi": "uefi"}

// defaultGuestArch is what an unset $YOLK_ARCH means: every architecture's
// entries (the arm64 kernel passes the suite; "amd64" would leave arm64 to
// make guest ARCH=arm64).
const defaultGuestArch = "all"

// guestEntries are the entries TestGuest boots: machineEnv's
// ($YOLK_MACHINE) if set, else the default entries of the architectures
// archEnv ($YOLK_ARCH: amd64, arm64 or all; default defaultGuestArch)
// selects, amd64's first.
func guestEntries(machineEnv, archEnv string) ([]string, error) {
	if machineEnv != "" {
		entries := strings.Split(machineEnv, ",")
		for _, e := range entries {
			if _, _, _, _, err := guestEntry(e); err != nil {
				return nil, fmt.Errorf("YOLK_MACHINE: %v", err)
			}
		}
		return entries, nil
	}
	var entries []string
	switch a := cmp.Or(archEnv, defaultGuestArch); a {
	case "all":
		for _, arch := range image.Arches {
			entries = append(entries, guestMachines[arch]...)
		}
	case "amd64", "arm64":
		entries = guestMachines[a]
	default:
		return nil, fmt.Errorf("YOLK_ARCH=%q: want amd64, arm64 or all", archEnv)
	}
	return entries, nil
}

// guestEntry splits a guestMachines entry; arch is the machine's. A board
// entry is its machine with the board's CPU count and memory.
func guestEntry(e string) (machine, memory string, cpus int, arch string, err error) {
	if e == "rpi3" {
		return RPi3Machine, "", 4, "arm64", nil
	}
	rest, n, hasCPUs := strings.Cut(e, ":")
	machine, memory, _ = strings.Cut(rest, "@")
	cpus = 1
	if hasCPUs {
		if cpus, err = strconv.Atoi(n); err != nil || cpus < 1 || cpus > MaxCPUs {
			return "", "", 0, "", fmt.Errorf("%q: want a CPU count from 1 to %d after the colon", e, MaxCPUs)
		}
	}
	if _, pc := pcEntries[machine]; pc {
		return machine, memory, cpus, "amd64", nil
	}
	if arch = ArchOfMachine(machine); arch == "" {
		return "", "", 0, "", fmt.Errorf("%q: unknown machine %q (want %s, or %s for arm64, or a board: rpi3, iso-bios or iso-uefi)", e, machine,
			strings.Join(Machines, ", "), strings.Join(ArmMachines, ", "))
	}
	return machine, memory, cpus, arch, nil
}

// guestBoard is the board image an entry's machine boots ("" for an ELF).
func guestBoard(machine string) string {
	if machine == RPi3Machine {
		return "rpi3"
	}
	return ""
}

// What TestGuest passes on the kernel command line for the guest's
// TestArgsEnv (kernel/selftest/tests.go has the same values): an environment
// variable and, after the self-test's own flags, one argument.
const (
	guestEnvKey  = "YOLK_SELFTEST_ENV"
	guestEnvWant = `env value with spaces, "quotes" and \ backslash`
	guestArgWant = `argument with spaces, "quotes" and \ backslash`
)

// enosysLine is what the kernel logs, once, for the unknown system call
// that the guest's TestUnknownSyscallENOSYS makes twice (acct: 163 on
// amd64, 89 on arm64).
func enosysLine(arch string) string {
	nr := 163
	if arch == "arm64" {
		nr = 89
	}
	return fmt.Sprintf("syscall acct (%d) not implemented: ENOSYS", nr)
}

// defaultGuestTimeout bounds one boot of the self-test image unless
// $YOLK_TIMEOUT says otherwise.
const defaultGuestTimeout = 10 * time.Minute

// TestGuest builds the self-test image, boots it on each machine (accelerator
// from $YOLK_ACCEL: auto, kvm or tcg), and turns the guest's report into
// subtests: TestGuest/<machine>/<guest test>[/<subtest>]. The serial log goes
// to out/selftest-<machine>.log and benchmark lines to
// out/bench-<machine>.txt at the module root. A run fails on a failed guest
// test and on every problem report.Problems names (timeout, fault report,
// panic, missing summary, inconsistent exit status), on a guest exit line
// that QEMU's isa-debug-exit status contradicts, when the guest's
// TestArgsEnv does not pass (it skips when the environment variable TestGuest
// passes is missing), and when the kernel's "not implemented" line for
// TestUnknownSyscallENOSYS's system call does not appear exactly once.
//
// $YOLK_MACHINE and $YOLK_ARCH choose the entries (guestEntries).
// $YOLK_GUEST_ARGS (split at spaces) are the self-test's arguments, e.g.
// "-bench ." to run the guest benchmarks; $YOLK_SELFTEST_IMAGE (amd64) and
// $YOLK_SELFTEST_IMAGE_ARM64 boot prebuilt images instead of building them,
// and $YOLK_OUT moves the logs out of <root>/out.
func TestGuest(t *testing.T) {
	root, err := image.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]string{"amd64": os.Getenv("YOLK_SELFTEST_IMAGE"), "arm64": os.Getenv("YOLK_SELFTEST_IMAGE_ARM64")}
	pkgDir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(SelftestPackage, image.ModulePath+"/")))
	if m, _ := filepath.Glob(filepath.Join(pkgDir, "*.go")); len(m) == 0 {
		t.Fatalf("the guest self-test package %s (%s) does not exist", SelftestPackage, pkgDir)
	}

	machines, err := guestEntries(os.Getenv("YOLK_MACHINE"), os.Getenv("YOLK_ARCH"))
	if err != nil {
		t.Fatal(err)
	}
	arches := map[string]bool{}
	boards := map[string]bool{}
	for _, m := range machines {
		machine, _, _, arch, _ := guestEntry(m)
		arches[arch] = true
		boards[guestBoard(machine)] = true
	}
	// A missing emulator is a failure (with the command that installs
	// it), never a skip.
	for arch := range arches {
		if _, err := FindQEMUFor(arch); err != nil {
			t.Fatal(err)
		}
	}
	timeout := defaultGuestTimeout
	if env := os.Getenv("YOLK_TIMEOUT"); env != "" {
		if timeout, err = time.ParseDuration(env); err != nil || timeout <= 0 {
			t.Fatalf("YOLK_TIMEOUT=%q: want a positive duration such as 10m", env)
		}
	}

	outDir := cmp.Or(os.Getenv("YOLK_OUT"), filepath.Join(root, "out"))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, arch := range image.Arches {
		if !arches[arch] || imgs[arch] != "" {
			continue
		}
		img := filepath.Join(outDir, "selftest.elf")
		if arch != "amd64" {
			img = filepath.Join(outDir, "selftest-"+arch+".elf")
		}
		var buildLog bytes.Buffer
		start := time.Now()
		res, err := image.Build(t.Context(), SelftestPackage, image.Options{Output: img, Arch: arch, Stderr: &buildLog})
		if err != nil {
			t.Fatalf("building the %s self-test image: %v\n%s", arch, err, buildLog.String())
		}
		t.Logf("built %s in %v (entry %s at %#x)", img, time.Since(start).Round(time.Millisecond), res.Patch.Symbol, res.Patch.Entry)
		imgs[arch] = img
	}
	if boards["rpi3"] {
		// The SD card, booted from its disk image.
		dir := filepath.Join(outDir, "selftest-rpi3")
		var buildLog bytes.Buffer
		start := time.Now()
		res, err := image.Build(t.Context(), SelftestPackage, image.Options{Output: filepath.Join(dir, "kernel8.elf"), Arch: "arm64", Board: "rpi3", Stderr: &buildLog})
		if err != nil {
			t.Fatalf("building the Raspberry Pi 3 self-test card: %v\n%s", err, buildLog.String())
		}
		card, err := image.WriteRPi3(res.Output, dir, image.RPi3Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("built %s in %v (kernel8.img, entry %s)", card.Disk, time.Since(start).Round(time.Millisecond), res.Patch.Symbol)
		imgs["rpi3"] = card.Disk
	}

	// The self-test package's directory, with its testdata, as yolk test
	// gives a package's (TestBootFiles).
	guestDir := filepath.ToSlash(pkgDir)
	tree := NewTree()
	if err := tree.AddDir(filepath.Join(pkgDir, "testdata"), guestDir+"/testdata", true); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(outDir, "selftest-files.tar")
	if err := tree.WriteFile(initrd); err != nil {
		t.Fatal(err)
	}
	env := []string{guestEnvKey + "=" + guestEnvWant, "yolk.cwd=" + guestDir, "YOLK_SELFTEST_DIR=" + guestDir, "YOLK_STDIN_TEST=1"}
	args := append(strings.Fields(os.Getenv("YOLK_GUEST_ARGS")), "--", guestArgWant)

	// The PC image: the amd64 kernel with a Multiboot2 header, in an
	// ISO with this run's command line and boot archive.
	// argsFor are an entry's arguments: the default entries outside
	// stressEntries skip the stress tests, those outside diskFSEntries
	// diskFSTests.
	argsFor := func(m string) []string {
		if os.Getenv("YOLK_MACHINE") != "" || diskFSEntries[m] {
			return args
		}
		if stressEntries[m] {
			return append([]string{"-skip", diskFSTests}, args...)
		}
		if run := subsetTests[m]; run != "" {
			return append([]string{"-run", run}, args...)
		}
		return append([]string{"-skip", stressTests}, args...)
	}
	var iso string
	for _, m := range machines {
		if machine, _, _, _, _ := guestEntry(m); pcEntries[machine] != "" && iso == "" {
			isoEnv := append(slices.Clip(env), "YOLK_NO_EXE=a PC image carries its own command line: no yolk.exe")
			iso = buildSelftestISO(t, imgs["amd64"], outDir, isoEnv, argsFor(m), initrd)
		}
	}

	// Entries run in order, side by side while the vCPUs of those
	// running are at most twice the host's cores: the oversubscription a
	// 4-CPU entry alone has on CI's two cores, which the suite must pass
	// (an entry with more vCPUs than that runs alone). Guests idle much
	// of the time (sleeps, timeouts, the network), so one at a time
	// left a third of the host's CPU time unused. The default entries
	// run fewest CPUs first, to pair them. Benchmarks run one entry at a
	// time. The host's cores are GOMAXPROCS's count, which follows a
	// container's CPU limit (NumCPU does not: a CI runner limited to two
	// cores of a large host would start every entry at once).
	// YOLK_GUEST_VCPUS sets the bound.
	vcpus := 2 * runtime.GOMAXPROCS(0)
	if env := os.Getenv("YOLK_GUEST_VCPUS"); env != "" {
		if vcpus, err = strconv.Atoi(env); err != nil || vcpus < 1 {
			t.Fatalf("YOLK_GUEST_VCPUS=%q: want a positive count of vCPUs", env)
		}
	}
	if slices.Contains(args, "-bench") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-bench=") }) {
		vcpus = 1
	}
	if os.Getenv("YOLK_MACHINE") == "" {
		machines = slices.Clone(machines)
		slices.SortStableFunc(machines, func(a, b string) int { return cmp.Compare(guestCPUs(a), guestCPUs(b)) })
	}
	gate := newCPUGate(vcpus)
	var wg sync.WaitGroup
	var failMu sync.Mutex
	var failed []string
	for _, m := range machines {
		w := min(guestCPUs(m), vcpus)
		gate.acquire(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer gate.release(w)
			t.Run(m, func(t *testing.T) {
				machine, _, _, arch, _ := guestEntry(m)
				img := imgs[arch]
				switch b := guestBoard(machine); {
				case pcEntries[machine] != "":
					img = iso
				case b != "":
					img = imgs[b]
				}
				what := bootSelftest(t, img, initrd, env, argsFor(m), m, timeout, outDir)
				if t.Failed() {
					failMu.Lock()
					failed = append(failed, m+": "+cmp.Or(strings.Join(what, "\n\t"), "the harness's checks (see the entry's log)"))
					failMu.Unlock()
				}
			})
		}()
	}
	wg.Wait()
	// Go prints this right under TestGuest's own result line, above the
	// entries' long lists of subtests: a reader of the log's head and
	// tail (CI's excerpt) sees what failed.
	if len(failed) > 0 {
		slices.Sort(failed)
		t.Errorf("what failed, by entry:\n%s", strings.Join(failed, "\n"))
	}
}

// guestCPUs is an entry's vCPU count (1 where the entry is malformed:
// guestEntries has already checked them).
func guestCPUs(entry string) int {
	_, _, cpus, _, err := guestEntry(entry)
	if err != nil {
		return 1
	}
	return cpus
}

// cpuGate hands out vCPUs to guest entries, in the order they ask.
type cpuGate struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
}

func newCPUGate(cores int) *cpuGate {
	g := &cpuGate{free: cores}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *cpuGate) acquire(n int) {
	g.mu.Lock()
	for g.free < n {
		g.cond.Wait()
	}
	g.free -= n
	g.mu.Unlock()
}

func (g *cpuGate) release(n int) {
	g.mu.Lock()
	g.free += n
	g.cond.Broadcast()
	g.mu.Unlock()
}

// buildSelftestISO copies the amd64 self-test image, gives it a
// Multiboot2 header and builds the PC image of it with env, args and the
// boot archive initrd built in.
func buildSelftestISO(t *testing.T, elfImage, outDir string, env, args []string, initrd string) string {
	b, err := os.ReadFile(elfImage)
	if err != nil {
		t.Fatal(err)
	}
	kernel := filepath.Join(outDir, "selftest-pc.elf")
	if err := os.WriteFile(kernel, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := image.PatchMultiboot2(kernel); err != nil {
		t.Fatal(err)
	}
	cmdline, err := Cmdline(env, args)
	if err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(outDir, "selftest-pc.iso")
	start := time.Now()
	if err := image.BuildISO(t.Context(), kernel, image.ISOOptions{Output: iso, Cmdline: cmdline, Initrd: initrd}); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %v", iso, time.Since(start).Round(time.Millisecond))
	return iso
}

// bootSelftest boots the self-test image for one entry and reports its
// guest tests as subtests of t. It returns what failed in a few lines:
// each failed guest test with the head of its output, and the harness's
// problems with the run.
func bootSelftest(t *testing.T, img, initrd string, env, args []string, entry string, timeout time.Duration, outDir string) (failed []string) {
	// Leave the go test binary time to report when its -timeout is near.
	if deadline, ok := t.Deadline(); ok {
		if left := time.Until(deadline) - 30*time.Second; left < timeout {
			t.Logf("boot timeout cut from %v to %v by go test -timeout", timeout, left.Round(time.Second))
			timeout = max(left, time.Second)
		}
	}
	machine, memory, cpus, arch, err := guestEntry(entry)
	if err != nil {
		t.Fatal(err)
	}
	// A PC image boots on q35 with its command line and boot archive
	// inside.
	board, firmware := guestBoard(machine), pcEntries[machine]
	if firmware != "" {
		board, machine, env, args, initrd = "pc", "q35", nil, nil, ""
	}
	// A NIC on QEMU's user network (no forwards) for TestNIC, on every
	// machine booted from its ELF: microvm, pc, q35, the VMMs', virt. The rpi3
	// board has none; a PC image's built-in command line cannot carry
	// the address the test checks, so its NIC is left out too.
	netw := NetNone
	var wr *wire
	var fwds []Forward
	var sh *shareHost
	if board == "" && vmmMachine(machine) {
		// Firecracker and Cloud Hypervisor have no virtio-9p: the share
		// tests skip, as on boards, and so does /proc/self/exe (exe.go).
		env = append(slices.Clip(env), "YOLK_NO_EXE=machine "+machine+" has no virtio-9p")
	} else if board == "" {
		// Shares for TestShare and TestShareReadOnly: every machine
		// booted from its ELF has virtio.
		sh = startShare(t)
		env = append(slices.Clip(env), sh.env...)
	}
	var disks []Disk
	if board == "" {
		// Disks for TestBlockDevice: a 16 MiB scratch disk (vda), a
		// read-only one (vdb) and one whose reads of sector 8 fail
		// (vdc, QEMU's blkdebug), made here and removed with the
		// test's directory; on the PCI machines an NVMe scratch disk
		// too (nvme0n1).
		nvme := machine == "pc" || machine == "q35"
		disks = scratchDisks(t, nvme)
		if nvme {
			env = append(slices.Clip(env), "YOLK_DISKS=vda,vdb:ro,vdc:eio,nvme0n1")
		} else {
			env = append(slices.Clip(env), "YOLK_DISKS=vda,vdb:ro,vdc:eio")
		}
		// TestDiskFS: an ext4 file system mkfs.ext4 made from a
		// small tree (vdd at /mnt/ext4), judged by e2fsck after the
		// guest has written to it.
		if ext4 := ext4Disk(t); ext4.File != "" {
			disks = append(disks, ext4)
			env = append(env, "YOLK_EXT4="+ext4.GuestPath)
			defer e2fsckClean(t, ext4.File)
		}
		// TestDiskErrors, where TestDiskFS runs: ext4 on a 2 MiB disk
		// the test fills (ENOSPC, judged by e2fsck after) and on a
		// read-only disk (EROFS) with a file whose reads fail (EIO).
		if diskFSEntries[entry] || os.Getenv("YOLK_MACHINE") != "" {
			keep := map[string]string{"keep.txt": "kept\n"}
			if img := mkfsTree(t, "yolkfull", "2M", keep, ""); img != "" {
				disks = append(disks, Disk{File: img, If: "virtio", GuestPath: "/mnt/full"})
				env = append(env, "YOLK_EXT4_FULL=/mnt/full")
				defer e2fsckClean(t, img)
			}
			if d := roBadDisk(t); d.File != "" {
				disks = append(disks, d)
				env = append(env, "YOLK_EXT4_RO="+d.GuestPath)
			}
		}
		if machine == "virt" {
			// TestBootFiles from a share instead of the boot archive:
			// the package's directory, read-only at its host path, the
			// working directory from boot (yolk.cwd), as yolk test
			// will give a package's module.
			for _, e := range env {
				if dir, ok := strings.CutPrefix(e, "YOLK_SELFTEST_DIR="); ok {
					sh.shares = append(sh.shares, Share{HostDir: filepath.FromSlash(dir), GuestPath: dir, ReadOnly: true})
					initrd = ""
				}
			}
		}
		netw = NetUser
		// Servers on the host's loopback and a forward for TestWire*.
		wr = startWire(t)
		env = append(slices.Clip(env), wr.env...)
		env = append(env, TestNetConf)
		fwds = wr.fwds
	} else if firmware == "" {
		// Run gives an ELF's machine its image file for
		// /proc/self/exe (exe.go); a board has no virtio.
		env = append(slices.Clip(env), "YOLK_NO_EXE=board "+board+" has no virtio")
	}
	choice, err := ChooseAccel(t.Context(), AccelOptions{Mode: os.Getenv("YOLK_ACCEL"), Arch: arch, Machine: machine})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(choice)

	name := strings.NewReplacer("@", "", ":", "-smp").Replace(entry)
	logPath := filepath.Join(outDir, "selftest-"+name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(logFile, choice)
	rep := report.New()
	enosysLines := 0
	// Console input for TestConsoleInput: a first part at once, the rest
	// only once that test runs and has had time to block in a read.
	input := consoletest.Input()
	gate := make(chan struct{})
	var gateOnce sync.Once
	stdin := io.MultiReader(bytes.NewReader(input[:1000]), gatedReader{gate, bytes.NewReader(input[1000:])})
	res, err := Run(t.Context(), Config{
		Image:    img,
		Board:    board,
		Firmware: firmware,
		Arch:     arch,
		Machine:  machine,
		Memory:   memory,
		SMP:      cpus,
		Accel:    choice.Accel,
		Timeout:  timeout,
		Env:      env,
		Initrd:   initrd,
		Args:     args,
		Net:      netw,
		Forwards: fwds,
		Shares:   sh.list(),
		Disks:    disks,
		Stdout:   logFile,
		Stderr:   logFile,
		Stdin:    stdin,
		OnLine: func(l string) {
			if l == "=== RUN   TestConsoleInput" {
				gateOnce.Do(func() { time.AfterFunc(300*time.Millisecond, func() { close(gate) }) })
			}
			if strings.Contains(l, enosysLine(arch)) {
				enosysLines++
			}
			if wr != nil {
				wr.line(l)
			}
			if sh != nil {
				sh.line(l)
			}
			rep.Line(l)
		},
	})
	gateOnce.Do(func() { close(gate) }) // the test did not run: let the feeder end
	if err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	for _, msg := range res.Messages {
		fmt.Fprintln(logFile, msg)
		t.Log(msg)
	}
	if err := logFile.Close(); err != nil {
		t.Error(err)
	}
	t.Logf("%s: guest exit %d after %v; serial log in %s", entry, res.ExitCode, res.Elapsed.Round(time.Millisecond), logPath)

	for _, gt := range rep.Children("") {
		guestSubtest(t, rep, gt, "")
	}
	if len(rep.Benchmarks) > 0 {
		benchPath := filepath.Join(outDir, "bench-"+name+".txt")
		var b strings.Builder
		for _, l := range rep.Config {
			b.WriteString(l + "\n")
		}
		fmt.Fprintf(&b, "machine: %s\ncpus: %d\naccel: %s\n", machine, cpus, choice.Accel)
		for _, l := range rep.Benchmarks {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(benchPath, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("%d benchmark lines in %s", len(rep.Benchmarks), benchPath)
	}
	for _, gt := range rep.Tests {
		if gt.Result == report.Fail {
			failed = append(failed, gt.Name+": "+strings.Join(gt.Output[:min(len(gt.Output), 4)], " | "))
		}
	}
	for _, p := range rep.Problems(report.Outcome{TimedOut: res.TimedOut, Timeout: timeout, ExitCode: res.ExitCode}) {
		t.Error(p)
		failed = append(failed, strings.SplitN(p, "\n", 4)[0])
	}
	if res.Mismatch != "" {
		t.Error(res.Mismatch)
	}
	if gt := rep.Test("TestArgsEnv"); gt != nil && gt.Result == report.Skip {
		t.Errorf("guest TestArgsEnv skipped: the guest did not see %s passed on the kernel command line", guestEnvKey)
	}
	if sh != nil {
		for _, name := range []string{"TestShare", "TestShareReadOnly"} {
			if gt := rep.Test(name); gt != nil && gt.Result == report.Skip {
				t.Errorf("guest %s skipped though TestGuest gave the guest its shares", name)
			}
		}
		gt := rep.Test("TestShare")
		sh.done(t, gt != nil && gt.Result != report.Skip)
	}
	if gt := rep.Test("TestProcSelfExe"); gt != nil && gt.Result == report.Skip && board == "" && !vmmMachine(machine) {
		t.Errorf("guest TestProcSelfExe skipped though Run gave the guest its image file")
	}
	if gt := rep.Test("TestNIC"); gt != nil && gt.Result == report.Skip && netw != NetNone {
		t.Errorf("guest TestNIC skipped: the kernel found no NIC although QEMU had one (-net %s)", netw)
	}
	if wr != nil {
		names := []string{"TestWireTCPOut", "TestWireUDPOut", "TestWireTCPIn"}
		if wr.env6 != "" {
			names = append(names, "TestWireTCP6Out")
		}
		for _, name := range names {
			if gt := rep.Test(name); gt != nil && gt.Result == report.Skip {
				t.Errorf("guest %s skipped although the harness ran its servers", name)
			}
		}
		gt := rep.Test("TestWireTCPIn")
		wr.check(t, gt != nil && gt.Result == report.Pass)
		gt = rep.Test("TestWireTCPOut")
		wr.checkSink(t, gt != nil && gt.Result == report.Pass)
	}
	if gt := rep.Test("TestUnknownSyscallENOSYS"); gt != nil && gt.Result != report.Running && enosysLines != 1 {
		t.Errorf("the kernel logged %q %d times, want once (the guest called it twice)", enosysLine(arch), enosysLines)
	}
	if t.Failed() {
		if log, err := os.ReadFile(logPath); err == nil {
			t.Logf("serial log %s:\n%s", logPath, log)
		}
	}
	return failed
}

// guestSubtest reports guest test gt, and its subtests inside it, as a
// subtest of t named by the last part of its name.
func guestSubtest(t *testing.T, rep *report.Report, gt *report.Test, parent string) {
	name := strings.TrimPrefix(gt.Name, parent+"/")
	if parent == "" {
		name = gt.Name
	}
	t.Run(name, func(t *testing.T) {
		if len(gt.Output) > 0 {
			t.Log("guest output:\n" + strings.Join(gt.Output, "\n"))
		}
		for _, c := range rep.Children(gt.Name) {
			guestSubtest(t, rep, c, gt.Name)
		}
		switch gt.Result {
		case report.Fail:
			t.Errorf("guest: --- FAIL: %s (%s)", gt.Name, gt.Elapsed)
		case report.Skip:
			t.Skipf("guest: --- SKIP: %s (%s)", gt.Name, gt.Elapsed)
		case report.Running:
			t.Errorf("guest test %s never reported a result", gt.Name)
		}
	})
}

// gatedReader reads r once gate is closed.
type gatedReader struct {
	gate <-chan struct{}
	r    io.Reader
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// ext4Disk makes TestDiskFS's disk: 32 MiB of ext4 (mkfs.ext4's
// defaults) holding the tree ext4Tree describes; without e2fsprogs an
// error (make test installs them) and no disk.
func ext4Disk(t *testing.T) Disk {
	img := mkfsTree(t, "yolktest", "32M", ext4Tree, "link")
	if img == "" {
		return Disk{}
	}
	// Named by its label, as a cloud's data disk is (yolk.disk=LABEL=).
	return Disk{File: img, If: "virtio", GuestPath: "/mnt/ext4", Label: "yolktest"}
}

// roBadDisk makes TestDiskErrors' read-only disk: 2 MiB of ext4 with
// keep.txt and bad.txt, whose first block's reads fail (QEMU's blkdebug
// answers EIO for its first sector).
func roBadDisk(t *testing.T) Disk {
	img := mkfsTree(t, "yolkro", "2M", map[string]string{"keep.txt": "kept\n", "bad.txt": strings.Repeat("bad\n", 2048)}, "")
	if img == "" {
		return Disk{}
	}
	out, err := exec.Command("debugfs", "-R", "bmap /bad.txt 0", img).Output()
	blk, perr := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || perr != nil || blk == 0 {
		t.Fatalf("debugfs bmap bad.txt: %q, %v %v", out, err, perr)
	}
	conf := filepath.Join(filepath.Dir(img), "bad.conf")
	// 1 KiB blocks (a 2 MiB file system): the block's first sector.
	rule := fmt.Sprintf("[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"%d\"\n", blk*2)
	if err := os.WriteFile(conf, []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	return Disk{File: img, If: "virtio", ReadOnly: true, GuestPath: "/mnt/ro", Inject: conf}
}

// mkfsTree makes an ext4 image of size with label from tree (and, if
// link is set, a symbolic link of that name to a/b.txt) with mkfs.ext4
// -d; "" (the test failed) if there is no mkfs.ext4.
func mkfsTree(t *testing.T, label, size string, tree map[string]string, link string) string {
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Errorf("mkfs.ext4 not found (Debian's e2fsprogs; make test installs it): the ext4 disks' tests cannot run")
		return ""
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "tree")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range tree {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if link != "" {
		if err := os.Symlink("a/b.txt", filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	img := filepath.Join(dir, label+".img")
	if out, err := exec.Command(mkfs, "-q", "-F", "-L", label, "-d", root, img, size).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	return img
}

// ext4Tree is the tree on TestDiskFS's disk (kernel/selftest/diskfs.go
// reads the same).
var ext4Tree = map[string]string{
	"hello.txt": "hello from the host\n",
	"a/b.txt":   "b\n",
	"a/c/d.txt": strings.Repeat("0123456789abcdef", 1024), // 16 KiB
}

// e2fsckClean fails t unless e2fsck -fn finds img clean.
func e2fsckClean(t *testing.T, img string) {
	out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput()
	if err != nil {
		t.Errorf("e2fsck -fn after the guest wrote to its ext4 disk: %v\n%s", err, out)
	}
}

// scratchDisks makes TestGuest's disks: a 16 MiB scratch file, read and
// written by TestBlockDevice, a 1 MiB read-only one, and a 1 MiB one
// whose reads of sector 8 fail with EIO (blkdebug: QEMU answers
// VIRTIO_BLK_S_IOERR), virtio; with nvme a fourth, 16 MiB, on QEMU's
// NVMe controller.
func scratchDisks(t *testing.T, nvme bool) []Disk {
	dir := t.TempDir()
	conf := filepath.Join(dir, "eio.conf")
	if err := os.WriteFile(conf, []byte("[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"8\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var disks []Disk
	for _, d := range []struct {
		name   string
		size   int64
		ro     bool
		inject string
		If     string
	}{{"scratch.img", 16 << 20, false, "", "virtio"}, {"ro.img", 1 << 20, true, "", "virtio"}, {"eio.img", 1 << 20, false, conf, "virtio"},
		{"nvme.img", 16 << 20, false, "", "nvme"}} {
		if d.If == "nvme" && !nvme {
			continue
		}
		p := filepath.Join(dir, d.name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, d.size); err != nil {
			t.Fatal(err)
		}
		disks = append(disks, Disk{File: p, If: d.If, ReadOnly: d.ro, Inject: d.inject})
	}
	return disks
}
