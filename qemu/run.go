// Package qemu boots yolk images in QEMU and reads what they report.
//
// Run starts qemu-system-x86_64 (amd64 images) or qemu-system-aarch64
// (arm64 images, machine virt) on an image built by package image, streams
// the guest's serial output (backtrace lines symbolized from the image), and
// derives the program's exit status from the guest's "yolk: exit N" line,
// cross-checked against QEMU's own status (isa-debug-exit on amd64,
// semihosting SYS_EXIT on arm64). ChooseAccel picks KVM
// only when a probe boot proves that KVM runs the kernel, TCG otherwise.
// Cmdline encodes the environment and arguments the guest receives.
//
// The package drives QEMU as a host process only; it never installs QEMU and
// never changes the image. The guest self-test harness is TestGuest.
package qemu

import (
	"cmp"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"yolk/qemu/image"
)

// Binary is the QEMU system emulator Run starts for amd64 images (unless
// $YOLK_QEMU names another one); ArmBinary for arm64 images.
const (
	Binary    = "qemu-system-x86_64"
	ArmBinary = "qemu-system-aarch64"
)

// InstallHint is the command that installs QEMU on Debian; ArmInstallHint
// the one for arm64 guests.
const (
	InstallHint    = "apt-get update && apt-get install -y qemu-system-x86"
	ArmInstallHint = "apt-get update && apt-get install -y qemu-system-arm"
)

// Machines are the QEMU machine types the runner supports for amd64 images;
// ArmMachines for arm64 images: QEMU virt with a GICv2 ("virt") or a
// GICv3 ("virt-gicv3"). "firecracker" is Firecracker's machine reproduced
// on QEMU microvm (FirecrackerMachine), "cloud-hypervisor" Cloud
// Hypervisor's (CloudHypervisorMachine).
var (
	Machines    = []string{"microvm", "pc", "q35", Firecracker, CloudHypervisor}
	ArmMachines = []string{"virt", "virt-gicv3"}
)

// Firecracker names the machine shaped like Firecracker's: QEMU microvm
// with FirecrackerMachine's options, the kernel entered through PVH, an
// 8250 serial port, virtio-mmio devices announced on the kernel command
// line (QEMU writes virtio_mmio.device= entries, as Firecracker up to 1.7
// does), the CPUs and the IO APIC in an MP table (qboot writes it, as
// Firecracker does), an i8042 (FirecrackerDevices) and nothing else: no
// ACPI, no RTC, no isa-debug-exit, no 9p shares (Firecracker has no
// virtio-9p). The guest ends the machine with an i8042 reset after its
// "yolk: exit N" line, which QEMU (-no-reboot) turns into status 0 and
// Firecracker into the VM's end; the status is the line's.
const (
	Firecracker        = "firecracker"
	FirecrackerMachine = "microvm,acpi=off,rtc=off"
)

// FirecrackerDevices are the devices QEMU adds to microvm for the
// Firecracker shape: Firecracker's i8042, whose reset command ends the VM.
var FirecrackerDevices = []string{"-device", "i8042"}

// CloudHypervisor names the machine shaped like Cloud Hypervisor's on
// x86: QEMU microvm with CloudHypervisorMachine's options — the kernel
// entered through PVH, hardware-reduced ACPI (the power button is the
// Generic Event Device's, the power-off the FADT's sleep control
// register), virtio-pci devices behind a PCIe host bridge reached through
// ECAM (no firmware assigns their BARs; Cloud Hypervisor's devices
// interrupt through MSI-X only), an 8250 serial port and the CMOS clock
// (Cloud Hypervisor has both), no PIT, no PIC, no HPET, no isa-debug-exit
// and no 9p shares (Cloud Hypervisor shares directories through
// virtio-fs). The guest powers the machine off (S5) after its
// "yolk: exit N" line; QEMU exits 0 and the status is the line's.
const (
	CloudHypervisor        = "cloud-hypervisor"
	CloudHypervisorMachine = "microvm,acpi=on,pcie=on,pit=off,pic=off"
)

// vmmMachine reports whether machine is a VMM's shape: no isa-debug-exit
// (the guest's exit ends the machine, the status is the line's) and no
// 9p shares.
func vmmMachine(machine string) bool { return machine == Firecracker || machine == CloudHypervisor }

// mmioMachine reports whether an amd64 machine's virtio is virtio-mmio
// (microvm and the Firecracker shape) rather than PCI.
func mmioMachine(machine string) bool { return machine == "microvm" || machine == Firecracker }

// MachinesFor are the machines for arch.
func MachinesFor(arch string) []string {
	if arch == "arm64" {
		return ArmMachines
	}
	return Machines
}

// ArchOfMachine is the architecture a machine name belongs to ("" if none).
func ArchOfMachine(machine string) string {
	switch {
	case contains(Machines, machine):
		return "amd64"
	case contains(ArmMachines, machine):
		return "arm64"
	}
	return ""
}

// ImageArch reads an image's architecture from its ELF header: "amd64" or
// "arm64".
func ImageArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		if _, serr := os.Stat(path); serr != nil {
			return "", serr
		}
		return "", fmt.Errorf("%s: not an ELF image (%v): build one with yolk build", path, err)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return "", fmt.Errorf("%s: ELF machine %v: yolk runs amd64 and arm64 images", path, f.Machine)
}

// MaxCPUs is the most CPUs the kernel runs (sched.MaxCPUs; a test keeps the
// two equal). A guest with more stops at boot with a fault report.
const MaxCPUs = 64

// Exit codes of Run that are not the guest's own status. The kernel's own
// fault status, 125 (kernel.ExitFault: a fault report was printed), is a
// guest status like any other and is distinct from all of these.
const (
	ExitReset   = 123 // QEMU ended without a report (guest reset, e.g. a triple fault)
	ExitTimeout = 124 // the guest did not finish in time
	ExitQEMU    = 126 // QEMU itself failed (bad option, unloadable image, signal)
)

// ErrNoQEMU is returned when QEMU is not installed.
var ErrNoQEMU = errors.New("QEMU not found")

// FindQEMU returns the path of the amd64 QEMU binary: $YOLK_QEMU if set,
// else qemu-system-x86_64 from $PATH. A missing QEMU yields an error
// wrapping ErrNoQEMU that says how to install it.
func FindQEMU() (string, error) { return FindQEMUFor("amd64") }

// FindQEMUFor is FindQEMU for an architecture's emulator ($YOLK_QEMU for
// amd64, $YOLK_QEMU_ARM64 for arm64).
func FindQEMUFor(arch string) (string, error) {
	bin, hint, env := Binary, InstallHint, "YOLK_QEMU"
	if arch == "arm64" {
		bin, hint, env = ArmBinary, ArmInstallHint, "YOLK_QEMU_ARM64"
	}
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", env, err)
		}
		return p, nil
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not installed; install it with: %s", ErrNoQEMU, bin, hint)
	}
	return p, nil
}

// Config describes one boot.
type Config struct {
	QEMU    string        // QEMU binary; default FindQEMUFor(Arch)
	Image   string        // ELF image (patched by image.Patch)
	Arch    string        // "amd64" or "arm64"; Run reads it from the image when empty
	Machine string        // amd64: "microvm" (default), "pc", "q35", "firecracker" (Firecracker) or "cloud-hypervisor" (CloudHypervisor); arm64: "virt" (default) or "virt-gicv3"
	Board   string        // "" (Image is an ELF) or a board image (Boards): "rpi3", "pc" (below)
	Accel   string        // "tcg" (default) or "kvm"; see ChooseAccel
	Memory  string        // -m; default "128M"
	SMP     int           // -smp; default 1 (QEMUArgs accepts any count: the kernel refuses more than MaxCPUs)
	Timeout time.Duration // 0: none
	Env     []string      // KEY=VALUE pairs for the guest
	Args    []string      // guest program arguments
	Initrd  string        // -initrd: a boot archive of host files (Tree), "" for none
	Extra   []string      // more QEMU arguments, appended last

	// NoExitDevice boots without the exit device (isa-debug-exit on
	// amd64, semihosting on arm64), as a cloud's or a VMM's machine: the
	// guest's exit powers the machine off (ACPI S5, PSCI SYSTEM_OFF) or
	// resets it, QEMU exits 0 and the status is the "yolk: exit N" line's.
	NoExitDevice bool

	// Net is the guest's network (net.go): "" or "none" (no NIC),
	// "user" (QEMU's user network; the kernel is told its address with
	// UserNetConf) or "tap:IFNAME". Forwards are host ports forwarded
	// to the guest on the user network. The rpi3 board has no NIC.
	Net      string
	Forwards []Forward

	// Shares are host directories the guest sees (share.go); not on
	// the rpi3 board (no virtio) nor in a PC image (its command line is
	// built in). Run adds one more, read-only, with the image file for
	// /proc/self/exe when a slot is free (exe.go).
	Shares []Share

	// Disks are host files the guest sees as block devices (disk.go);
	// not on the rpi3 board, in a PC image or on Firecracker's machine.
	Disks []Disk

	// GDB, if non-zero, starts QEMU halted (-S) with its gdb stub on
	// this TCP port: a debugger attaches (GDBCommand) and continues.
	GDB int

	// Board "pc" boots a PC image (image.BuildISO) from -cdrom through
	// its firmware and GRUB instead of an ELF image through -kernel.
	// Machine is then "q35" (default) or "pc"; Firmware "bios" (SeaBIOS,
	// default) or "uefi" (OVMF, OVMFPath; Memory defaults to UEFIMemory
	// there); Env, Args and Initrd must be empty: the image carries its
	// own command line and boot archive. A disk image (image.BuildDisk,
	// raw or QCOW2) instead of an ISO boots from the disk controller
	// Disk (DiskControllers; default virtio-scsi), QEMU's changes to it
	// discarded (snapshot=on).
	Firmware string
	Disk     string

	// Stdin is the guest's console input, sent framed (FrameConsole);
	// nil: none, the guest reads end of file at once.
	Stdin io.Reader

	Stdout io.Writer         // the serial stream, symbolized; default io.Discard
	Stderr io.Writer         // QEMU's own stderr; default os.Stderr
	OnLine func(line string) // each complete serial line as written to Stdout, without "\n"
}

// Console input framing (the kernel's decoder is kernel/conin.go): 0xFF is
// an escape, 0xFF 0x00 a literal 0xFF, 0xFF 0x01 the end of input.
const (
	consoleEsc     = 0xFF
	consoleEscByte = 0x00
	consoleEscEOF  = 0x01
)

// FrameConsole copies src (nil: nothing) to dst with 0xFF escaped and
// then the end-of-input mark. It returns at src's end or at the first
// error (dst closed: the guest is gone).
func FrameConsole(dst io.Writer, src io.Reader) error {
	if src != nil {
		buf := make([]byte, 4096)
		out := make([]byte, 0, 2*len(buf))
		for {
			n, err := src.Read(buf)
			out = out[:0]
			for _, b := range buf[:n] {
				out = append(out, b)
				if b == consoleEsc {
					out = append(out, consoleEscByte)
				}
			}
			if _, werr := dst.Write(out); werr != nil {
				return werr
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	_, err := dst.Write([]byte{consoleEsc, consoleEscEOF})
	return err
}

// Result is the outcome of a boot.
type Result struct {
	ExitCode   int           // the status for the caller: the guest's, or ExitTimeout/ExitReset/ExitQEMU
	Marker     bool          // a "yolk: exit N" line arrived
	GuestExit  int           // N of the last such line
	QEMUStatus int           // QEMU's exit status; -1 if killed by a signal
	TimedOut   bool          // QEMU was killed at the timeout
	Elapsed    time.Duration // from starting QEMU to its end
	FirstLine  time.Duration // from starting QEMU to the first complete serial line; 0 if none
	Messages   []string      // "yolk: ..." notes for the user (warnings, timeout, reset)
	Mismatch   string        // non-empty: the exit line and QEMU's isa-debug-exit status disagree (also in Messages)
	QEMUStderr string        // the first 4 KiB of QEMU's stderr
}

// QEMUArgs returns the QEMU command-line arguments for c (without the binary).
func QEMUArgs(c Config) ([]string, error) {
	if c.Board == "pc" {
		if len(c.Shares) > 0 || len(c.Disks) > 0 {
			return nil, errors.New("board pc: no -share or -disk (the PC image carries its own command line)")
		}
		return pcArgs(c)
	}
	arch, err := image.CheckArch(c.Arch)
	if err != nil {
		return nil, err
	}
	machine := c.Machine
	if machine == "" {
		machine = MachinesFor(arch)[0]
	}
	if c.Board == "rpi3" {
		arch, machine = "arm64", RPi3Machine
	} else if c.Board != "" {
		return nil, fmt.Errorf("board %q: want one of %s", c.Board, strings.Join(Boards, ", "))
	} else if !contains(MachinesFor(arch), machine) {
		if other := ArchOfMachine(machine); other != "" {
			return nil, fmt.Errorf("machine %q is an %s machine; the image is %s (want one of %s)", machine, other, arch, strings.Join(MachinesFor(arch), ", "))
		}
		return nil, fmt.Errorf("machine %q: want one of %s", machine, strings.Join(MachinesFor(arch), ", "))
	}
	cpu, mem, smp := "max", cmp.Or(c.Memory, "128M"), c.SMP
	machineArg := machine
	kernel := []string{"-kernel", c.Image}
	switch {
	case c.Board == "rpi3":
		if err := rpi3Check(c); err != nil {
			return nil, err
		}
		if c.Net != "" && c.Net != NetNone || len(c.Forwards) > 0 {
			return nil, fmt.Errorf("board rpi3 has no network device (loopback only): want no -net or -net none")
		}
		if len(c.Shares) > 0 {
			return nil, fmt.Errorf("board rpi3 has no virtio: no -share (the boot archive, -dir, gives it files)")
		}
		cpu, mem, smp = "cortex-a53", "1G", 4
		kernel = []string{"-kernel", filepath.Join(c.Image, "kernel8.img"), "-dtb", filepath.Join(c.Image, image.RPi3DTB)}
	case arch == "arm64":
		cpu = "cortex-a72"
		gic := "2"
		if machine == "virt-gicv3" {
			gic = "3"
		}
		machineArg = "virt,gic-version=" + gic
	}
	if c.Image == "" {
		return nil, errors.New("no image")
	}
	switch machine {
	case Firecracker:
		machineArg = FirecrackerMachine
	case CloudHypervisor:
		machineArg = CloudHypervisorMachine
	}
	if vmmMachine(machine) && len(c.Shares) > 0 {
		return nil, fmt.Errorf("machine %s: no -share (the VMM has no virtio-9p; the boot archive, -dir, gives the guest files)", machine)
	}
	env := withNetConf(c.Env, c.Net)
	netArgs, err := netArgs(c.Net, c.Forwards, arch == "amd64" && !mmioMachine(machine))
	if err != nil {
		return nil, err
	}
	if len(c.Shares) > 0 && c.Board != "" {
		return nil, fmt.Errorf("board %s: no -share (its image carries its own command line)", c.Board)
	}
	shareArgs, mounts, err := ShareArgs(c.Shares, arch == "amd64" && !mmioMachine(machine))
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		env = append(slices.Clip(env), "yolk.share="+m)
	}
	diskArgs, env, err := diskConfig(c, arch, machine, env)
	if err != nil {
		return nil, err
	}
	var initrd []string
	if c.Initrd != "" {
		if arch == "arm64" && c.Board == "" {
			// QEMU virt loads no -initrd for an ELF kernel: a loader
			// device puts it at the top of RAM and the command line
			// says where (the kernel reads yolk.initrd first).
			a, n, err := armInitrd(c.Initrd, mem)
			if err != nil {
				return nil, err
			}
			initrd = []string{"-device", fmt.Sprintf("loader,file=%s,addr=%#x,force-raw=on", c.Initrd, a)}
			env = append(slices.Clone(env), fmt.Sprintf("yolk.initrd=%#x,%d", a, n))
		} else {
			initrd = []string{"-initrd", c.Initrd}
		}
	}
	cmdline, err := Cmdline(env, c.Args)
	if err != nil {
		return nil, err
	}
	args, err := baseArgs(machineArg, c.Accel, cpu, mem, smp)
	if err != nil {
		return nil, err
	}
	switch {
	case machine == Firecracker:
		args = append(args, FirecrackerDevices...)
	case c.NoExitDevice || machine == CloudHypervisor:
	case arch == "arm64":
		args = append(args, "-semihosting-config", "enable=on,target=native")
	default:
		args = append(args, "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04")
	}
	args = append(args, kernel...)
	if len(env) > 0 || len(c.Args) > 0 || c.Board == "" {
		// A board's tree carries its card's command line; QEMU
		// replaces it only when -append is given.
		args = append(args, "-append", cmdline)
	}
	args = append(args, initrd...)
	args = append(args, netArgs...)
	args = append(args, shareArgs...)
	args = append(args, diskArgs...)
	if args, err = gdbArgs(args, c.GDB); err != nil {
		return nil, err
	}
	return append(args, c.Extra...), nil
}

// baseArgs are every boot's first QEMU arguments: machine, accelerator
// ("" or "tcg", or "kvm" with the host's CPU model in place of cpu), CPU
// model, memory, CPU count (0: 1), no default devices or display, no
// reboot, the first serial port on stdio.
func baseArgs(machine, accel, cpu, mem string, smp int) ([]string, error) {
	switch accel {
	case "", "tcg":
		accel = "tcg"
	case "kvm":
		cpu = "host"
	default:
		return nil, fmt.Errorf("accelerator %q: want kvm or tcg", accel)
	}
	if smp == 0 {
		smp = 1
	}
	if smp < 0 {
		return nil, fmt.Errorf("-smp %d: want a positive CPU count", smp)
	}
	return []string{
		"-machine", machine,
		"-accel", accel,
		"-cpu", cpu,
		"-m", mem,
		"-smp", fmt.Sprint(smp),
		"-nodefaults", "-no-user-config",
		"-display", "none",
		"-no-reboot",
		"-serial", "stdio",
	}, nil
}

// gdbArgs appends the gdb stub's options for port (none for 0).
func gdbArgs(args []string, port int) ([]string, error) {
	if port == 0 {
		return args, nil
	}
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("gdb port %d: want 1 to 65535", port)
	}
	return append(args, "-gdb", fmt.Sprintf("tcp::%d", port), "-S"), nil
}

// GDBCommand is the command that attaches a debugger, with the image's
// symbols, to a guest started with Config.GDB = port: Debian's gdb-multiarch
// knows both architectures.
func GDBCommand(image string, port int) string {
	return fmt.Sprintf("gdb-multiarch -q -ex 'target remote :%d' %s", port, image)
}

// armRAMBase is where QEMU virt's RAM starts.
const armRAMBase = 0x40000000

// armInitrd places the boot archive at path for an arm64 guest with mem of
// RAM (QEMU's -m syntax): page aligned at the top of RAM, 64 KiB below
// its end. It returns the address and the archive's size.
func armInitrd(path, mem string) (addr uint64, size int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	ram, err := memBytes(mem)
	if err != nil {
		return 0, 0, err
	}
	const align = 64 << 10
	need := (uint64(st.Size()) + align - 1) &^ (align - 1)
	if need+2*align+64<<20 > ram {
		return 0, 0, fmt.Errorf("boot archive %s (%d bytes) does not fit in -m %s beside the kernel", path, st.Size(), mem)
	}
	return armRAMBase + ram - need - align, st.Size(), nil
}

// memBytes parses QEMU's -m size: a number with an optional K, M, G or T
// suffix (no suffix: MiB).
func memBytes(mem string) (uint64, error) {
	s := strings.TrimSpace(mem)
	mult := uint64(1 << 20)
	if n := len(s); n > 0 {
		switch s[n-1] | 0x20 {
		case 'k':
			mult, s = 1<<10, s[:n-1]
		case 'm':
			mult, s = 1<<20, s[:n-1]
		case 'g':
			mult, s = 1<<30, s[:n-1]
		case 't':
			mult, s = 1<<40, s[:n-1]
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("memory size %q: want a number with an optional K, M, G or T suffix", mem)
	}
	return v * mult, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Run boots c.Image and waits for QEMU to end or the timeout to pass. The
// error is non-nil only when QEMU could not be started at all; every outcome
// of a started QEMU is in Result (ExitCode, Messages).
func Run(ctx context.Context, c Config) (*Result, error) {
	if _, err := os.Stat(c.Image); err != nil {
		return nil, err
	}
	symbols, iso := c.Image, ""
	if c.Board == "pc" {
		// The kernel's symbols are inside the ISO.
		symbols, iso, c.Arch = "", c.Image, "amd64"
	} else if c.Board != "" {
		dir, elfPath, cleanup, err := boardFiles(c.Board, c.Image)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		c.Image, c.Arch, symbols = dir, "arm64", elfPath
	}
	if c.Arch == "" {
		// An image that is not an ELF of ours goes to the amd64
		// emulator, whose own complaint ends up in the result.
		c.Arch, _ = ImageArch(c.Image)
		if c.Arch == "" {
			c.Arch = "amd64"
		}
	}
	removeExe, err := exeShare(&c)
	if err != nil {
		return nil, err
	}
	defer removeExe()
	if c.QEMU == "" {
		q, err := FindQEMUFor(c.Arch)
		if err != nil {
			return nil, err
		}
		c.QEMU = q
	}
	args, err := QEMUArgs(c)
	if err != nil {
		return nil, err
	}
	stdout := c.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	stderr := c.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	if sameWriter(stdout, stderr) {
		// QEMU's stdout and stderr are copied by two goroutines: one
		// writer given for both is written under a lock.
		w := &syncWriter{w: stdout}
		stdout, stderr = w, w
	}

	res := &Result{}
	var mu sync.Mutex // guards res.Marker/GuestExit/FirstLine against the copying goroutine
	var start time.Time
	// Console input starts with the kernel's first line: by then it has
	// set up the UART (which resets its receive FIFO: an earlier byte
	// would be lost). That is the first line with the kernel's "yolk: "
	// prefix: before it, a PC image's firmware and GRUB print their own.
	kernelUp := make(chan struct{})
	kernelSeen := false // guarded by mu
	stream := &serialStream{
		out:       stdout,
		symbolize: lazySymbolizer(ctx, symbols, iso),
		onLine: func(line string) {
			mu.Lock()
			if res.FirstLine == 0 {
				res.FirstLine = time.Since(start)
			}
			if !kernelSeen && strings.Contains(line, "yolk: ") {
				kernelSeen = true
				close(kernelUp)
			}
			mu.Unlock()
			if n, ok := ParseExitLine(line); ok {
				mu.Lock()
				res.Marker, res.GuestExit = true, n
				mu.Unlock()
			}
			if c.OnLine != nil {
				c.OnLine(line)
			}
		},
	}
	head := &headBuffer{max: 4096}

	cmd := exec.Command(c.QEMU, args...)
	// A pipe, never the terminal itself: QEMU leaves a stdin that is not a
	// tty alone (no raw mode), and the framing marks the end of input.
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = stream
	cmd.Stderr = io.MultiWriter(stderr, head)
	cmd.WaitDelay = 2 * time.Second

	start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.QEMU, err)
	}
	// The pipe stays open after the end of input (QEMU would otherwise see
	// its stdin close); Wait closes it.
	go func() {
		select {
		case <-kernelUp:
			FrameConsole(in, c.Stdin)
		case <-ctx.Done():
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timeout:
		res.TimedOut = true
		cmd.Process.Kill()
		waitErr = <-done
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		stream.Close()
		return nil, ctx.Err()
	}
	res.Elapsed = time.Since(start)
	stream.Close()
	_ = waitErr // the status is read from ProcessState below
	res.QEMUStatus = cmd.ProcessState.ExitCode()
	res.QEMUStderr = head.String()

	mu.Lock()
	defer mu.Unlock()
	decide(res, c.Timeout, filepath.Base(c.QEMU), c.Arch, c.Board == "" && (vmmMachine(c.Machine) || c.NoExitDevice))
	return res, nil
}

// decide sets res.ExitCode and res.Messages from the marker, QEMU's status
// and the timeout, following the exit protocol: the guest prints
// "yolk: exit N" and writes N to isa-debug-exit, so QEMU exits (N<<1)|1
// (amd64), or makes a semihosting SYS_EXIT with N, so QEMU exits N (arm64).
// On a machine without an exit device (reset: the Firecracker shape, or
// NoExitDevice) the guest powers it off or resets it after the line and
// QEMU exits 0: the status is the line's alone.
func decide(res *Result, timeout time.Duration, qemuName, arch string, reset bool) {
	s := res.QEMUStatus
	switch {
	case res.TimedOut:
		res.ExitCode = ExitTimeout
		res.Messages = append(res.Messages, fmt.Sprintf("yolk: timeout after %v", timeout))
	case res.Marker:
		res.ExitCode = res.GuestExit
		want, how := (res.GuestExit<<1|1)&0xff, "isa-debug-exit"
		switch {
		case reset:
			want, how = 0, "a power-off or a reset"
		case arch == "arm64":
			want, how = res.GuestExit&0xff, "semihosting"
		}
		if s != want {
			res.Mismatch = fmt.Sprintf("guest reported exit %d but QEMU exited with status %d (%s gives %d)",
				res.GuestExit, s, how, want)
			res.Messages = append(res.Messages, "yolk: warning: "+res.Mismatch)
		}
	case arch == "arm64" && s > 0 && !qemuComplained(res.QEMUStderr, qemuName):
		res.ExitCode = s
		res.Messages = append(res.Messages, fmt.Sprintf(
			"yolk: warning: no \"yolk: exit N\" line; exit status %d taken from QEMU's (semihosting) status", s))
	case !reset && s > 0 && s%2 == 1 && !qemuComplained(res.QEMUStderr, qemuName):
		res.ExitCode = (s - 1) / 2
		res.Messages = append(res.Messages, fmt.Sprintf(
			"yolk: warning: no \"yolk: exit N\" line; exit status %d taken from QEMU's status %d",
			res.ExitCode, s))
	case s == 0:
		res.ExitCode = ExitReset
		res.Messages = append(res.Messages, "yolk: guest reset without an exit report (triple fault?)")
	default:
		res.ExitCode = ExitQEMU
		msg := fmt.Sprintf("yolk: QEMU failed (status %d)", s)
		if s < 0 {
			msg = "yolk: QEMU was killed by a signal"
		}
		if first := firstLine(res.QEMUStderr); first != "" {
			msg += ": " + first
		}
		res.Messages = append(res.Messages, msg)
	}
}

// qemuComplained reports whether QEMU printed an error of its own
// ("qemu-system-x86_64: ..."): then an odd status is QEMU's exit(1), not
// isa-debug-exit.
func qemuComplained(stderr, name string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if (strings.HasPrefix(l, name+":") || strings.HasPrefix(l, Binary+":") || strings.HasPrefix(l, ArmBinary+":")) &&
			!strings.Contains(l, "warning:") {
			return true
		}
	}
	return false
}

// lazySymbolizer opens the image's line table on the first backtrace line:
// the ELF image path, or the kernel extracted from the PC image iso (an
// ISO or a raw disk image), or
// none when both are "".
func lazySymbolizer(ctx context.Context, path, iso string) func(uint64, bool) string {
	var (
		once sync.Once
		sym  *image.Symbolizer
	)
	return func(pc uint64, first bool) string {
		once.Do(func() {
			if iso != "" {
				dir, err := os.MkdirTemp("", "yolk-symbols-")
				if err != nil {
					return
				}
				defer os.RemoveAll(dir)
				extract := image.ExtractISOKernel
				if !image.IsISO(iso) && image.IsGPTDisk(iso) { // the hybrid ISO has a GPT too
					extract = image.ExtractDiskKernel
				}
				if path, err = extract(ctx, iso, dir); err != nil {
					return
				}
			}
			sym, _ = image.OpenSymbolizer(path)
		})
		if sym == nil {
			return ""
		}
		fr, ok := sym.Lookup(pc, first)
		if !ok {
			return ""
		}
		return fr.String()
	}
}

// headBuffer keeps the first max bytes written to it.
// sameWriter reports whether a and b are the same writer (a value whose
// type cannot be compared is never the same).
func sameWriter(a, b io.Writer) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

// syncWriter serialises the writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.max - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
