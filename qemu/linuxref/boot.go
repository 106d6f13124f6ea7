package linuxref

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"yolk/qemu"
)

// Config describes one boot of a Linux kernel whose initramfs holds the
// program as /init.
type Config struct {
	QEMU    string        // qemu-system-x86_64 (qemu-system-aarch64 for arm64)
	Arch    string        // "amd64" (default) or "arm64"
	Kernel  string        // Linux bzImage or arm64 Image (boot/vmlinuz-*)
	Initrd  string        // newc cpio archive with /init (see WriteInitramfs)
	Machine string        // amd64: "pc" (default), "q35" or "microvm"; arm64: "virt" (default) or "virt-gicv3"
	Memory  string        // -m; default "128M"
	SMP     int           // -smp; default 1
	Quiet   bool          // pass "quiet": only kernel warnings and worse on the console
	Params  []string      // more kernel parameters, e.g. "vdso=0"
	Env     []string      // KEY=VALUE pairs for /init's environment
	Args    []string      // /init's arguments
	Extra   []string      // more QEMU arguments (a NIC, say), appended after the others
	Shares  []qemu.Share  // host directories as for yolk run -share; the initramfs needs ShareModules
	Disks   []qemu.Disk   // host files as for yolk run -disk (virtio only), mounted as ext4; the initramfs needs DiskModules
	NineP   string        // the 9p mount options of the shares; "" is DefaultNineP
	Timeout time.Duration // kill QEMU after this long; 0: never
	Log     io.Writer     // the whole serial console, CRs removed; may be nil
	Stderr  io.Writer     // QEMU's own stderr; may be nil
}

// DefaultNineP are the shares' mount options: 9P2000.L over virtio with
// the message size of yolk's client (64 KiB of data and the 24-byte I/O
// header), uncached as yolk's client is.
const DefaultNineP = "trans=virtio,version=9p2000.L,msize=65560,cache=none"

// The guest init's environment (cmd/linuxinit), from the kernel command
// line: EnvShare<N>=TAG:GUESTPATH per share, EnvNineP the mount options.
// It passes none of the EnvPrefix entries on to the program.
const (
	EnvPrefix = "LINUXREF_"
	EnvShare  = "LINUXREF_9P"
	EnvNineP  = "LINUXREF_9P_OPTS"
	EnvDisk   = "LINUXREF_DISK" // EnvDisk<N>=NAME:GUESTPATH[:ro], package qemu's yolk.disk value
)

// Result is the outcome of one boot.
type Result struct {
	Lines       []string      // serial console lines, CRs removed
	InitExited  bool          // Linux reported "Attempted to kill init!"
	ExitStatus  int           // /init's exit status (valid when InitExited and InitSignal == 0)
	InitSignal  int           // the signal that ended /init, 0 if it exited
	Clocksource string        // the last "Switched to clocksource X" seen; "" with Quiet
	TimedOut    bool          // QEMU was killed at the timeout
	QEMUStatus  int           // QEMU's exit status; -1 if killed
	Elapsed     time.Duration // QEMU start to end
}

// Cmdline returns the Linux kernel command line: the serial console, an
// immediate reboot on panic (which -no-reboot turns into QEMU's exit when
// /init ends), "quiet" if asked, c.Params, environment entries and, after
// "--", /init's arguments; with shares, the guest init's EnvShare<N> and
// EnvNineP entries before "--"; with disks, its EnvDisk<N> entries (the
// device's name and where to mount it, as yolk.disk tells yolk).
// Linux hands unknown KEY=VALUE parameters before "--" to init as its
// environment and everything after "--" as its arguments. Linux splits at
// spaces and treats double quotes specially, so tokens with white space,
// quotes or NUL bytes are refused; so are keys with a dot (Linux takes those
// for module parameters).
func (c Config) Cmdline() (string, error) {
	console := "console=ttyS0"
	if c.Arch == "arm64" {
		console = "console=ttyAMA0"
	}
	toks := []string{console, "panic=-1"}
	if c.Quiet {
		toks = append(toks, "quiet")
	}
	for _, p := range c.Params {
		if err := plainToken(p); err != nil {
			return "", err
		}
		if p == "--" {
			return "", errors.New(`kernel parameter "--" would end the parameters`)
		}
		toks = append(toks, p)
	}
	for _, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.Contains(k, ".") || strings.HasPrefix(k, EnvPrefix) {
			return "", fmt.Errorf("environment entry %q: want KEY=VALUE with a KEY without dots, not starting %s", kv, EnvPrefix)
		}
		if err := plainToken(kv); err != nil {
			return "", err
		}
		toks = append(toks, kv)
	}
	_, mounts, err := qemu.ShareArgs(c.Shares, false)
	if err != nil {
		return "", err
	}
	var share []string
	for i, m := range mounts {
		share = append(share, fmt.Sprintf("%s%d=%s", EnvShare, i, m))
	}
	if len(mounts) > 0 {
		share = append(share, EnvNineP+"="+cmp.Or(c.NineP, DefaultNineP))
	}
	_, disks, err := c.diskArgs()
	if err != nil {
		return "", err
	}
	for i, d := range disks {
		share = append(share, fmt.Sprintf("%s%d=%s", EnvDisk, i, d))
	}
	for _, t := range share {
		if err := plainToken(t); err != nil {
			return "", err
		}
	}
	toks = append(toks, share...)
	toks = append(toks, "--")
	for _, a := range c.Args {
		if err := plainToken(a); err != nil {
			return "", err
		}
		toks = append(toks, a)
	}
	return strings.Join(toks, " "), nil
}

func plainToken(s string) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"\x00") {
		return fmt.Errorf("%q cannot be passed on the Linux command line (empty, white space, quote or NUL)", s)
	}
	return nil
}

// QEMUArgs returns QEMU's arguments for c (without the binary): TCG with
// -cpu max, the same machine, memory, CPUs and devices as package qemu gives
// a yolk image (isa-debug-exit included, which Linux leaves alone), plus the
// initramfs.
func QEMUArgs(c Config) ([]string, error) {
	machine := c.machine()
	arm := c.Arch == "arm64"
	switch {
	case !arm && (machine == "microvm" || machine == "pc" || machine == "q35"):
	case arm && (machine == "virt" || machine == "virt-gicv3"):
	default:
		return nil, fmt.Errorf("machine %q: want microvm, pc or q35 (amd64), virt or virt-gicv3 (arm64)", machine)
	}
	mem := c.Memory
	if mem == "" {
		mem = "128M"
	}
	smp := c.SMP
	if smp == 0 {
		smp = 1
	}
	if c.Kernel == "" || c.Initrd == "" {
		return nil, errors.New("linuxref: need a kernel and an initramfs")
	}
	cmdline, err := c.Cmdline()
	if err != nil {
		return nil, err
	}
	m, cpu, exit := []string{"-machine", machine}, "max", []string{"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"}
	if arm {
		// As package qemu boots an arm64 yolk image (semihosting is
		// there too; Linux leaves it alone).
		gic := "2"
		if machine == "virt-gicv3" {
			gic = "3"
		}
		m, cpu, exit = []string{"-machine", "virt,gic-version=" + gic}, "cortex-a72", []string{"-semihosting-config", "enable=on,target=native"}
	}
	args := append(m,
		"-accel", "tcg",
		"-cpu", cpu,
		"-m", mem,
		"-smp", strconv.Itoa(smp),
		"-nodefaults", "-no-user-config",
		"-display", "none",
		"-no-reboot",
		"-serial", "stdio")
	args = append(args, exit...)
	args = append(args, "-kernel", c.Kernel, "-append", cmdline, "-initrd", c.Initrd)
	share, _, err := qemu.ShareArgs(c.Shares, !arm && machine != "microvm")
	if err != nil {
		return nil, err
	}
	args = append(args, share...)
	disks, _, err := c.diskArgs()
	if err != nil {
		return nil, err
	}
	args = append(args, disks...)
	return append(args, c.Extra...), nil
}

// diskArgs is package qemu's DiskArgs for c.Disks on c's machine: the
// same devices yolk's guest gets (virtio-blk-pci on pc and q35,
// virtio-blk-device on microvm and virt), and the NAME:GUESTPATH[:ro]
// of each, which Linux names as yolk does (vda, vdb, ...). NVMe disks are
// refused: the initramfs has no NVMe modules.
func (c Config) diskArgs() (args, opts []string, err error) {
	for _, d := range c.Disks {
		if d.If != "virtio" {
			return nil, nil, fmt.Errorf("linuxref: disk %s: only virtio disks (if=%s)", d.File, d.If)
		}
	}
	machine := c.machine()
	arm := c.Arch == "arm64"
	return qemu.DiskArgs(c.Disks, !arm && machine != "microvm", arm)
}

// machine is c.Machine or the architecture's default: pc, not microvm,
// which has neither HPET nor ACPI PM timer, so Linux can calibrate its TSC
// only against the PIT, which fails on a loaded TCG host and leaves the
// boot hanging; virt on arm64.
func (c Config) machine() string {
	switch {
	case c.Machine != "":
		return c.Machine
	case c.Arch == "arm64":
		return "virt"
	}
	return "pc"
}

// Yolk returns the package qemu configuration that boots a yolk image in
// the same QEMU configuration as c: the same machine (pc when c leaves it
// empty, as QEMUArgs does), memory, CPU count, TCG, program arguments,
// environment, shares, disks and timeout. Only the image, and the command line that
// carries the arguments, differ; the caller sets the output fields.
func (c Config) Yolk(image string) qemu.Config {
	return qemu.Config{
		QEMU: c.QEMU, Image: image, Arch: c.Arch, Machine: c.machine(), Accel: "tcg",
		Memory: c.Memory, SMP: c.SMP, Timeout: c.Timeout,
		Env: c.Env, Args: c.Args, Shares: c.Shares, Disks: c.Disks,
	}
}

var (
	killInitRe    = regexp.MustCompile(`Attempted to kill init! exitcode=0x([0-9a-f]{8})`)
	clocksourceRe = regexp.MustCompile(`clocksource: Switched to clocksource (\S+)`)
)

// Observe updates r from one console line: the panic Linux raises when init
// ends (its wait status gives /init's exit status or signal) and clocksource
// switches.
func (r *Result) Observe(line string) {
	if m := killInitRe.FindStringSubmatch(line); m != nil {
		ws, _ := strconv.ParseUint(m[1], 16, 32)
		r.InitExited = true
		r.InitSignal = int(ws & 0x7f)
		r.ExitStatus = int(ws>>8) & 0xff
	}
	if m := clocksourceRe.FindStringSubmatch(line); m != nil {
		r.Clocksource = m[1]
	}
}

// Run boots c and returns when QEMU ends or the timeout passes. The error is
// non-nil when QEMU could not be started, was killed at the timeout, or
// ended without Linux reporting that /init exited (a kernel that did not
// boot, a missing console, an initramfs it could not unpack).
func Run(ctx context.Context, c Config) (*Result, error) {
	args, err := QEMUArgs(c)
	if err != nil {
		return nil, err
	}
	qemuBin := c.QEMU
	if qemuBin == "" {
		qemuBin = qemu.Binary
		if c.Arch == "arm64" {
			qemuBin = qemu.ArmBinary
		}
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, qemuBin, args...)
	cmd.Stderr = c.Stderr
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", qemuBin, err)
	}
	r := &Result{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.ReplaceAll(sc.Text(), "\r", "")
		r.Lines = append(r.Lines, line)
		r.Observe(line)
		if c.Log != nil {
			io.WriteString(c.Log, line+"\n")
		}
	}
	waitErr := cmd.Wait()
	r.Elapsed = time.Since(start)
	r.QEMUStatus = cmd.ProcessState.ExitCode()
	switch {
	case c.Timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.TimedOut = true
		return r, fmt.Errorf("linuxref: Linux guest did not finish within %v (last console line: %q)", c.Timeout, last(r.Lines))
	case ctx.Err() != nil:
		return r, ctx.Err()
	case !r.InitExited:
		return r, fmt.Errorf("linuxref: QEMU ended (%v) without Linux reporting the end of /init (last console line: %q)", waitErr, last(r.Lines))
	}
	return r, nil
}

func last(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}
