// Command linuxref boots the same Go program on Linux and on yolk in the
// same QEMU configuration (TCG, -cpu max, -m 128M unless -m says otherwise,
// one machine type, -smp N with the same N on both sides) and writes both sides' benchmark lines for
// benchstat.
//
//	go run ./qemu/linuxref/cmd/linuxref [-arch amd64|arm64] [-machine pc|q35|microvm|virt] [-smp 1] [-m 128M]
//	    [-count 5] [-out out/linuxref] [-kernel vmlinuz] [-kerneldir DIR] [-timeout 2m] [-quiet]
//	    [-params "vdso=0"] [-e KEY=VALUE] [-share HOSTDIR[:GUESTPATH][:ro]] [-9p OPTIONS]
//	    [-disk FILE[,ro][:GUESTPATH]] [-qemu "ARGS"] [guest args]
//
// The program is yolk's self-test image (./kernel/selftest) unless -program
// names another main package (a directory) that prints Go benchmark lines:
// built as an ordinary static linux/amd64 (or arm64) binary, it is /program
// of an initramfs whose /init (./qemu/linuxref/cmd/linuxinit) mounts a
// tmpfs at /tmp and executes it, under a Linux kernel taken from Debian's packages
// (linux-image-cloud-amd64, or linux-image-cloud-arm64:arm64 with -arch
// arm64 — after "dpkg --add-architecture arm64 && apt-get update" —,
// downloaded with apt-get into the output directory, never installed);
// built with the yolk kernel, it is the yolk image. Each of -count rounds
// boots both, alternating which goes first. Guest arguments default to
// "-run ^$ -bench .". -e KEY=VALUE sets an environment entry on both sides.
//
// -share gives both guests the same host directory as yolk run -share does
// (the same QEMU devices, package qemu's ShareArgs). Linux then boots
// Debian's generic kernel (linux-image-amd64: the cloud kernel has no 9p)
// unless -package names another; the initramfs carries the 9p, 9pnet_virtio
// and virtio bus modules with their dependencies, which /init loads with
// finit_module and then mounts each share with 9p and the -9p options
// (default: version=9p2000.L, msize=65560 as yolk's client, cache=none as
// yolk's uncached client). /init prints the mounts as /proc/mounts shows
// them, into the console log.
//
// -disk gives both guests an ext4 disk as yolk run -disk does (virtio-blk,
// the same QEMU devices and cache mode: package qemu's DiskArgs), each
// boot its own copy of FILE made just before it (holes kept), so every
// boot starts from the same image; Linux boots Debian's generic kernel as
// for -share, its /init loads virtio_blk and ext4 and mounts the disk at
// GUESTPATH (default /mnt/disk0). After each boot e2fsck -fn judges the
// copy (info.txt says so; a faulty copy is kept, a clean one removed).
//
// -qemu adds QEMU arguments (space-separated) to both sides' boots, a
// trace of the disk's requests, say ("-trace enable=virtio_blk_*"); QEMU's
// stderr, where the trace goes, is kept in <side>-N.stderr.
//
// -smp N gives both guests N CPUs. Each side's Go runtime picks its own
// GOMAXPROCS from the CPUs its kernel reports, and the benchmark names carry
// it (BenchmarkX-2); the tool prints what each side ran at and warns when
// they differ (benchstat then shows them as separate rows, not compared).
//
// Output in -out/<machine>/ with one CPU, -out/<machine>-smp<N>/ with N > 1:
// linux.txt and yolk.txt (benchmark lines of every round, for "benchstat
// linux.txt yolk.txt"), linux-N.log and yolk-N.log (the whole serial console
// of round N), info.txt (kernel package, QEMU, Go, CPUs, clocksource and
// GOMAXPROCS per boot). Exit status 1 on any failed boot.
package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
	"yolk/qemu/linuxref"
)

func main() {
	arch := flag.String("arch", "amd64", "architecture of both guests: amd64 or arm64")
	machine := flag.String("machine", "", "QEMU machine for both sides: pc (amd64 default), q35 or microvm; virt (arm64 default) or virt-gicv3")
	smp := flag.Int("smp", 1, "guest CPUs, the same on both sides")
	mem := flag.String("m", "128M", "guest RAM on both sides, as for QEMU -m")
	count := flag.Int("count", 5, "rounds; each boots Linux and yolk once")
	outDir := flag.String("out", "out/linuxref", "output directory (results go to <out>/<machine>, or <out>/<machine>-smp<N> with -smp N > 1)")
	kernelPath := flag.String("kernel", "", "Linux bzImage to use instead of fetching Debian's")
	kernelDir := flag.String("kerneldir", "", "where Debian's kernel package is fetched and unpacked (default <out>/kernel)")
	program := flag.String("program", "./kernel/selftest", "Go main package (directory) to compare; it must print Go benchmark lines")
	pkg := flag.String("package", "", "Debian kernel package (meta or versioned; default "+linuxref.DefaultPackage+", "+linuxref.ArmPackage+" for arm64)")
	timeout := flag.Duration("timeout", 2*time.Minute, "per-boot timeout")
	quiet := flag.Bool("quiet", false, "boot Linux with \"quiet\" (then the clocksource is not reported)")
	params := flag.String("params", "", "more Linux kernel parameters, space-separated (e.g. \"vdso=0\")")
	var env envFlag
	flag.Var(&env, "e", "KEY=VALUE for both guests' environment (repeatable)")
	var shares qemu.ShareFlag
	flag.Var(&shares, "share", "give both guests this host directory (virtio-9p), as yolk run -share: `HOSTDIR[:GUESTPATH][:ro]` (repeatable, at most 4)")
	ninep := flag.String("9p", linuxref.DefaultNineP, "Linux's mount options for the shares")
	qemuArgs := flag.String("qemu", "", "more QEMU arguments for both sides, space-separated (QEMU's stderr is kept in <side>-N.stderr)")
	var disks qemu.DiskFlag
	flag.Var(&disks, "disk", "give both guests a copy of this ext4 image (virtio-blk), a fresh one each boot: `FILE[,ro][:GUESTPATH]` (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: linuxref [flags] [guest args]")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if *smp < 1 {
		fmt.Fprintf(os.Stderr, "linuxref: -smp %d: want at least 1\n", *smp)
		os.Exit(2)
	}
	if len(args) == 0 {
		args = []string{"-run", "^$", "-bench", "."}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *arch != "amd64" && *arch != "arm64" {
		fmt.Fprintf(os.Stderr, "linuxref: -arch %s: want amd64 or arm64\n", *arch)
		os.Exit(2)
	}
	if *machine == "" {
		*machine = map[string]string{"amd64": "pc", "arm64": "virt"}[*arch]
	}
	if *pkg == "" {
		*pkg = map[string]string{"amd64": linuxref.DefaultPackage, "arm64": linuxref.ArmPackage}[*arch]
		if len(shares) > 0 || len(disks) > 0 {
			*pkg = linuxref.SharePackage[*arch]
		}
	}
	lc := linuxref.Config{Arch: *arch, Machine: *machine, SMP: *smp, Memory: *mem, Quiet: *quiet, Params: strings.Fields(*params), Env: env, Args: args, Timeout: *timeout,
		Shares: shares, NineP: *ninep, Disks: disks, Extra: strings.Fields(*qemuArgs)}
	if *kernelDir == "" {
		*kernelDir = filepath.Join(*outDir, "kernel")
	}
	if err := compare(ctx, lc, *program, *count, *outDir, *kernelPath, *kernelDir, *pkg); err != nil {
		fmt.Fprintf(os.Stderr, "linuxref: %v\n", err)
		os.Exit(1)
	}
}

func compare(ctx context.Context, lc linuxref.Config, program string, count int, outDir, kernelPath, kernelDir, pkg string) error {
	arch := cmp.Or(lc.Arch, "amd64")
	qemuBin, err := qemu.FindQEMUFor(arch)
	if err != nil {
		return err
	}
	machine, args := lc.Machine, lc.Args
	if _, err := lc.Cmdline(); err != nil {
		return err
	}
	dir := linuxref.ResultDir(outDir, machine, lc.SMP)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Logs of an earlier run with more rounds would be mistaken for this one's.
	for _, pat := range []string{"linux-*.log", "yolk-*.log", "linux-*.stderr", "yolk-*.stderr"} {
		old, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range old {
			os.Remove(f)
		}
	}

	kernelDesc := kernelPath
	if kernelPath == "" {
		k, err := linuxref.FetchKernel(ctx, kernelDir, pkg)
		if err != nil {
			return err
		}
		kernelPath = k.Path
		kernelDesc = fmt.Sprintf("%s %s (%s)", k.Package, k.Version, filepath.Base(k.Path))
	}
	fmt.Printf("linuxref: kernel %s\n", kernelDesc)

	progDir, err := filepath.Abs(program)
	if err != nil {
		return err
	}
	linuxBin := filepath.Join(outDir, "program-linux")
	build := exec.CommandContext(ctx, "go", "build", "-o", mustAbs(linuxBin), ".")
	build.Dir = progDir
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build %s for Linux: %w", program, err)
	}
	prog, err := os.ReadFile(linuxBin)
	if err != nil {
		return err
	}
	initBin := filepath.Join(outDir, "linuxinit")
	build = exec.CommandContext(ctx, "go", "build", "-o", mustAbs(initBin), "yolk/qemu/linuxref/cmd/linuxinit")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build linuxinit: %w", err)
	}
	initProg, err := os.ReadFile(initBin)
	if err != nil {
		return err
	}
	var mods []linuxref.Module
	var roots []string
	if len(lc.Shares) > 0 {
		roots = linuxref.ShareModules(machine)
	}
	if len(lc.Disks) > 0 {
		roots = append(roots, linuxref.DiskModules(machine)...)
	}
	if len(roots) > 0 {
		if mods, err = linuxref.LoadModules(linuxref.ModulesDir(kernelPath), roots); err != nil {
			return err
		}
	}
	var initrd bytes.Buffer
	if err := linuxref.WriteInitramfs(&initrd, initProg, prog, mods); err != nil {
		return err
	}
	initrdPath := filepath.Join(outDir, "initrd.cpio")
	if err := os.WriteFile(initrdPath, initrd.Bytes(), 0o644); err != nil {
		return err
	}
	yolkImage := filepath.Join(outDir, "program.elf")
	if _, err := image.Build(ctx, progDir, image.Options{Output: yolkImage, Arch: arch}); err != nil {
		return fmt.Errorf("building the yolk image: %w", err)
	}

	var linuxTxt, yolkTxt, info bytes.Buffer
	fmt.Fprintf(&info, "program: %s\n", program)
	cpu := map[string]string{"amd64": "max", "arm64": "cortex-a72"}[arch]
	fmt.Fprintf(&info, "arch: %s\nmachine: %s\naccel: tcg\ncpu: %s\nmemory: %s\nsmp: %d\nkernel: %s\nqemu: %s\ngo: %s\nhost cpus: %d\nguest args: %s\n",
		arch, machine, cpu, lc.Memory, lc.SMP, kernelDesc, qemuVersion(qemuBin), runtime.Version(), runtime.NumCPU(), strings.Join(args, " "))
	cmdline, _ := lc.Cmdline()
	fmt.Fprintf(&info, "linux command line: %s\n", cmdline)
	for _, sh := range lc.Shares {
		fmt.Fprintf(&info, "share: %s at %s (read-only %v)\n", sh.HostDir, sh.GuestPath, sh.ReadOnly)
	}
	diskArgs, _, err := qemu.DiskArgs(lc.Disks, arch == "amd64" && machine != "microvm", arch == "arm64")
	if err != nil {
		return err
	}
	for _, d := range lc.Disks {
		fmt.Fprintf(&info, "disk: a copy of %s per boot at %s (read-only %v)\n", d.File, d.GuestPath, d.ReadOnly)
	}
	if len(lc.Disks) > 0 {
		fmt.Fprintf(&info, "disk qemu arguments: %s\n", strings.Join(diskArgs, " "))
	}
	if len(mods) > 0 {
		var names []string
		for _, m := range mods {
			names = append(names, m.Name)
		}
		fmt.Fprintf(&info, "linux modules: %s\n", strings.Join(names, " "))
	}
	fmt.Fprintf(&info, "load average at start: %s\n", loadavg())
	var wantNames []string
	procs := map[string][]int{}
	for round := 1; round <= count; round++ {
		sides := []string{"linux", "yolk"}
		if round%2 == 0 {
			sides = []string{"yolk", "linux"}
		}
		for _, side := range sides {
			logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", side, round))
			var lines []string
			var note string
			disks, err := linuxref.FreshDisks(lc.Disks, dir, fmt.Sprintf("%s-%d", side, round))
			if err != nil {
				return err
			}
			if side == "linux" {
				c := lc
				c.QEMU, c.Kernel, c.Initrd, c.Disks = qemuBin, kernelPath, initrdPath, disks
				lines, note, err = bootLinux(ctx, c, logPath)
			} else {
				c := lc.Yolk(yolkImage)
				c.QEMU, c.Disks, c.Extra = qemuBin, disks, lc.Extra
				lines, note, err = bootYolk(ctx, c, logPath)
			}
			if err == nil && len(disks) > 0 {
				note += ", " + linuxref.CheckDisks(disks)
			}
			if err != nil {
				return fmt.Errorf("%s round %d: %w (console in %s)", side, round, err, logPath)
			}
			bench, names := linuxref.BenchLines(lines)
			if len(names) == 0 {
				return fmt.Errorf("%s round %d: no benchmark lines (console in %s)", side, round, logPath)
			}
			if side == "linux" {
				if wantNames == nil {
					wantNames = names
				} else if !slices.Equal(names, wantNames) {
					return fmt.Errorf("linux round %d: benchmarks %v, round 1 had %v; a kernel message may have split a line (console in %s)",
						round, names, wantNames, logPath)
				}
			}
			p := linuxref.Procs(names)
			note += ", GOMAXPROCS " + joinInts(p)
			if prev, ok := procs[side]; ok && !slices.Equal(prev, p) {
				fmt.Printf("linuxref: warning: %s ran at GOMAXPROCS %s in round %d, %s before\n", side, joinInts(p), round, joinInts(prev))
			}
			procs[side] = p
			buf := &yolkTxt
			if side == "linux" {
				buf = &linuxTxt
			}
			buf.WriteString(strings.Join(bench, "\n") + "\n")
			fmt.Fprintf(&info, "round %d %s: %s\n", round, side, note)
			fmt.Printf("linuxref: round %d %s: %d benchmarks, %s\n", round, side, len(names), note)
		}
	}
	fmt.Fprintf(&info, "load average at end: %s\n", loadavg())
	if l, y := joinInts(procs["linux"]), joinInts(procs["yolk"]); l != y {
		msg := fmt.Sprintf("GOMAXPROCS differs: Linux %s, yolk %s (-smp %d); benchstat shows the two as separate rows", l, y, lc.SMP)
		fmt.Fprintf(&info, "%s\n", msg)
		fmt.Printf("linuxref: warning: %s\n", msg)
	}
	for name, b := range map[string]*bytes.Buffer{"linux.txt": &linuxTxt, "yolk.txt": &yolkTxt, "info.txt": &info} {
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("linuxref: wrote %s; compare with:\n  go tool benchstat %s %s\n",
		dir, filepath.Join(dir, "linux.txt"), filepath.Join(dir, "yolk.txt"))
	return nil
}

func bootLinux(ctx context.Context, c linuxref.Config, logPath string) ([]string, string, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer log.Close()
	var stderr bytes.Buffer
	c.Log, c.Stderr = log, &stderr
	r, err := linuxref.Run(ctx, c)
	keepStderr(logPath, stderr.Bytes())
	if err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			err = fmt.Errorf("%w; QEMU: %s", err, s)
		}
		return nil, "", err
	}
	if r.InitSignal != 0 {
		return nil, "", fmt.Errorf("/init killed by signal %d", r.InitSignal)
	}
	if r.ExitStatus != 0 {
		return nil, "", fmt.Errorf("/init exited with status %d", r.ExitStatus)
	}
	cs := r.Clocksource
	if cs == "" {
		cs = "not reported"
	}
	return r.Lines, fmt.Sprintf("boot to exit %.1fs, clocksource %s", r.Elapsed.Seconds(), cs), nil
}

// bootYolk boots c (from linuxref.Config.Yolk, so in the Linux side's
// QEMU configuration).
func bootYolk(ctx context.Context, c qemu.Config, logPath string) ([]string, string, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer log.Close()
	var lines []string
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = log, &stderr
	c.OnLine = func(l string) { lines = append(lines, strings.TrimRight(l, "\r")) }
	r, err := qemu.Run(ctx, c)
	keepStderr(logPath, stderr.Bytes())
	if err != nil {
		return nil, "", err
	}
	if r.ExitCode != 0 {
		return nil, "", fmt.Errorf("exit status %d: %s %s", r.ExitCode, strings.Join(r.Messages, "; "), strings.TrimSpace(stderr.String()))
	}
	return lines, fmt.Sprintf("boot to exit %.1fs", r.Elapsed.Seconds()), nil
}

// keepStderr writes QEMU's stderr, when it said something (a trace -qemu
// asked for), beside the boot's console log.
func keepStderr(logPath string, b []byte) {
	if len(b) > 0 {
		os.WriteFile(strings.TrimSuffix(logPath, ".log")+".stderr", b, 0o644)
	}
}

type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }
func (e *envFlag) Set(s string) error {
	if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE")
	}
	*e = append(*e, s)
	return nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func qemuVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return bin
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return first
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
