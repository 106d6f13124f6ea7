// Command yolk builds unmodified Go main packages into bootable yolk images
// and boots them in QEMU.
//
//	yolk build [-arch amd64|arm64] [-o out.elf] [-tags tags] [-ldflags flags] ./path/to/pkg
//	yolk build -board rpi3 [-firmware dir] [-e KEY=VALUE ...] [-o dir] ./path/to/pkg [arg ...]
//	yolk run [-accel auto|kvm|tcg] [-machine microvm|pc|q35|firecracker|cloud-hypervisor|virt|virt-gicv3] [-m 128M] [-smp 1]
//	         [-timeout 10m] [-e KEY=VALUE ...] app.elf [arg ...]
//	yolk run -board rpi3 [flags] dir|dir.img [arg ...]
//	yolk build -board pc [-e KEY=VALUE ...] [-dir DIR] [-o app.iso] ./path/to/pkg [arg ...]
//	yolk run -board pc [-firmware bios|uefi] [-machine q35|pc] [flags] app.iso
//	yolk image [-format raw|gce|qcow2] [-size 1G] [-e KEY=VALUE ...] [-dir DIR] -o OUT app.elf [arg ...]
//	yolk run -board pc [-firmware bios|uefi] [-disk virtio-scsi|nvme|virtio-blk] [flags] disk.raw|disk.qcow2
//
// build's architecture is -arch, else $GOARCH if it names one the kernel
// runs, else amd64; run boots an image in the emulator of its ELF machine
// (qemu-system-x86_64, or $YOLK_QEMU; qemu-system-aarch64, or
// $YOLK_QEMU_ARM64, machine virt by default). -board rpi3 builds a
// Raspberry Pi 3 SD card instead of an ELF — the boot directory dir
// (kernel8.img, config.txt, cmdline.txt, yolk.dtb, the GPU firmware when
// found) and the disk image dir.img — and run boots either on QEMU
// raspi3b. -board pc (amd64; docs/pc-image.md) builds a BIOS- and
// UEFI-bootable ISO with GRUB, its command line and boot archive built in,
// and run boots it from the CD-ROM drive of q35 with SeaBIOS or OVMF.
// image (amd64; docs/disk-image.md) writes a built ELF into a GPT disk
// image for a cloud or a PC's disk (raw, GCE's disk.raw in a tar.gz, or
// QCOW2) that boots with BIOS or UEFI through GRUB, the command line in
// its grub.cfg; run -board pc boots such a disk from a disk controller.
//
//	yolk test [-run re] [-v] [-short] [-timeout 10m] [...] [-smp 1] [...] packages [-args ...]
//	yolk prof [-o cpu.pprof] [-n 1000] [-interval 5ms] [-delay 5s] [-kill] [run's flags] app.elf [arg ...]
//
// prof boots an image as run does, with QEMU's gdb stub on a free loopback
// port, samples the guest's stacks through it and writes a pprof profile
// of the guest's time, the kernel's included (package qemu/gdbprof).
//
// test builds each package's test binary with the kernel linked in, boots
// it and prints go test's "ok", "FAIL" and "?" lines; see "yolk test -h".
//
// run prints "yolk: accel ..." first, streams the guest's serial output to
// stdout (kernel backtraces symbolized), writes its own notes to stderr and
// exits with the guest program's exit status (2 for a Go panic, 125 after a
// kernel fault report); 123 when the guest reset without reporting (e.g. a
// triple fault), 124 on timeout, 126 when QEMU failed, 127 when QEMU is not
// installed, 130 when interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
)

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  yolk build [-arch amd64|arm64] [-o out.elf] [-tags tags] [-ldflags flags] ./path/to/pkg
  yolk build -board rpi3 [-firmware dir] [-e KEY=VALUE ...] [-o dir] ./path/to/pkg [arg ...]
  yolk run [-accel auto|kvm|tcg] [-machine microvm|pc|q35|firecracker|cloud-hypervisor|virt|virt-gicv3] [-m 128M] [-smp 1]
           [-timeout 10m] [-e KEY=VALUE ...] app.elf [arg ...]
  yolk run -board rpi3 [flags] dir|dir.img [arg ...]
  yolk build -board pc [-e KEY=VALUE ...] [-dir DIR] [-o app.iso] ./path/to/pkg [arg ...]
  yolk run -board pc [-firmware bios|uefi] [flags] app.iso
  yolk image [-format raw|gce|qcow2] [-size 1G] [-e KEY=VALUE ...] [-dir DIR] -o OUT app.elf [arg ...]
  yolk run -board pc [-firmware bios|uefi] [-disk virtio-scsi|nvme|virtio-blk] [flags] disk.raw|disk.qcow2
  yolk run [flags] -disk FILE[,if=virtio|nvme][,ro][:GUESTPATH] ... app.elf [arg ...]
  yolk disk create -size 1G [-from DIR] [-label LABEL] FILE
  yolk test [flags] [packages] [-args ...]   (yolk test -h for its flags)
  yolk prof [-o cpu.pprof] [-n 1000] [-interval 5ms] [-delay 5s] [-kill] [run's flags] app.elf [arg ...]

run exits with the guest program's status (2: Go panic, 125: kernel fault
report), or 123: guest reset without a report (triple fault), 124: timeout,
126: QEMU failed, 127: QEMU not installed, 130: interrupted.
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "build":
		os.Exit(build(os.Args[2:]))
	case "run":
		os.Exit(run(os.Args[2:]))
	case "test":
		os.Exit(test(os.Args[2:]))
	case "prof":
		os.Exit(prof(os.Args[2:]))
	case "image":
		os.Exit(diskImage(os.Args[2:]))
	case "disk":
		os.Exit(diskCmd(os.Args[2:]))
	case "help", "-h", "-help", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "yolk: unknown command %q\n", os.Args[1])
		usage()
	}
}

func build(args []string) int {
	fs := flag.NewFlagSet("yolk build", flag.ExitOnError)
	out := fs.String("o", "", "output image (default: <package dir>.elf)")
	tags := fs.String("tags", "", "build tags, as for go build")
	ldflags := fs.String("ldflags", "", "linker flags, as for go build")
	arch := fs.String("arch", "", "target architecture: amd64 or arm64 (default $GOARCH if one of them, else amd64)")
	board := fs.String("board", "", "board image instead of an ELF: rpi3 (Raspberry Pi 3 SD card: -o names its boot directory, the disk image is <dir>.img) or pc (a BIOS- and UEFI-bootable ISO: GRUB, Multiboot2)")
	firmware := fs.String("firmware", "", "rpi3: `directory` with the Pi's bootcode.bin, start.elf and fixup.dat (default: Debian raspi-firmware's, if installed)")
	var env envFlag
	fs.Var(&env, "e", "rpi3, pc: KEY=VALUE for the guest environment on the card or in the ISO (repeatable); arguments after the package go there too")
	dir := fs.String("dir", "", "pc: build this host `directory` into the ISO (read-only, at its absolute path; the program starts there)")
	netsvc := fs.String("netsvc", "auto", "link the TCP/IP service (gVisor's netstack, for traffic through the NIC): auto (when the program uses package net), on, off")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: yolk build [-arch amd64|arm64] [-board rpi3 [-firmware dir] [-e KEY=VALUE ...] | -board pc [-e KEY=VALUE ...] [-dir DIR]] [-o out] [-tags tags] [-ldflags flags] [-netsvc auto|on|off] ./path/to/pkg [arg ...]")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if fs.NArg() < 1 || (fs.NArg() > 1 && *board == "") {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := targetArch(*arch)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
		return 2
	}
	opt := image.Options{Output: *out, Arch: a, Tags: *tags, LDFlags: *ldflags, NetService: *netsvc}
	if *dir != "" && *board != "pc" {
		fmt.Fprintln(os.Stderr, "yolk build: -dir is for -board pc (an ELF gets its files from yolk run -dir)")
		return 2
	}
	switch *board {
	case "":
		if *firmware != "" || len(env) > 0 {
			fmt.Fprintln(os.Stderr, "yolk build: -firmware and -e are for -board rpi3 or pc (an ELF gets its environment from yolk run)")
			return 2
		}
	case "pc":
		if *firmware != "" {
			fmt.Fprintln(os.Stderr, "yolk build: -firmware is for -board rpi3 (a PC image's firmware is the PC's: yolk run -board pc -firmware bios|uefi)")
			return 2
		}
		if a != "amd64" {
			fmt.Fprintf(os.Stderr, "yolk build: -board pc is an amd64 board, not %s\n", a)
			return 2
		}
		if *dir != "" {
			tmp, err := os.MkdirTemp("", "yolk-build-")
			if err != nil {
				fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
				return 1
			}
			defer os.RemoveAll(tmp)
			if opt.Initrd, err = dirArchive(*dir, tmp, &env); err != nil {
				fmt.Fprintf(os.Stderr, "yolk build: -dir: %v\n", err)
				return 2
			}
		}
		if opt.Cmdline, err = qemu.Cmdline(env, fs.Args()[1:]); err != nil {
			fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
			return 2
		}
		opt.Board = "pc"
	case "rpi3":
		cmdline, err := qemu.Cmdline(env, fs.Args()[1:])
		if err != nil {
			fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
			return 2
		}
		return buildRPi3(ctx, fs.Arg(0), *out, *tags, *ldflags, *firmware, cmdline)
	default:
		fmt.Fprintf(os.Stderr, "yolk build: -board %q: want rpi3 or pc\n", *board)
		return 2
	}
	res, err := image.Build(ctx, fs.Arg(0), opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
		return 1
	}
	kind := "PVH entry"
	switch {
	case a == "arm64":
		kind = "arm64 entry"
	case *board == "pc":
		kind = fmt.Sprintf("PC image: GRUB, Multiboot2 header at %#x, entry", res.Multiboot2.Offset)
	}
	fmt.Fprintf(os.Stderr, "yolk: built %s (%s %s at %#x)\n", res.Output, kind, res.Patch.Symbol, res.Patch.Entry)
	return 0
}

// buildRPi3 builds pkg for the Raspberry Pi 3: the ELF as <out>/kernel8.elf
// (symbols; not on the card), the boot directory out and the disk image
// out.img.
func buildRPi3(ctx context.Context, pkg, out, tags, ldflags, firmware, cmdline string) int {
	if a := os.Getenv("GOARCH"); a != "" && a != "arm64" && out == "" {
		// Only a note: the board decides the architecture.
		fmt.Fprintf(os.Stderr, "yolk build: -board rpi3 builds for arm64 ($GOARCH=%s ignored)\n", a)
	}
	if out == "" {
		out = filepath.Base(pkg) + "-rpi3"
	}
	out = strings.TrimSuffix(filepath.Clean(out), ".img")
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
		return 1
	}
	res, err := image.Build(ctx, pkg, image.Options{Output: filepath.Join(out, "kernel8.elf"), Arch: "arm64", Board: "rpi3", Tags: tags, LDFlags: ldflags})
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
		return 1
	}
	card, err := image.WriteRPi3(res.Output, out, image.RPi3Options{Cmdline: cmdline, Firmware: firmware})
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk build: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "yolk: built %s/ (%s) and the SD-card image %s (Raspberry Pi 3: kernel8.img at %#x, %s, memory to %#x)\n",
		card.Dir, strings.Join(card.Files, " "), card.Disk, image.RPi3LoadAddr, res.Patch.Symbol, card.ImageEnd)
	if len(card.MissingFirmware) > 0 {
		fmt.Fprintf(os.Stderr, "yolk: note: %s\n", image.MissingFirmwareHelp(card.MissingFirmware))
	}
	return 0
}

// targetArch is the architecture to build for: flag if given, else
// $GOARCH when the kernel runs on it, else amd64.
func targetArch(flag string) (string, error) {
	if flag != "" {
		return image.CheckArch(flag)
	}
	if g := os.Getenv("GOARCH"); g == "amd64" || g == "arm64" {
		return g, nil
	}
	return "amd64", nil
}

// dirArchive writes the boot archive of the host directory dir into tmp
// (read-only, at its absolute path), adds the guest's working directory
// to env, and returns the archive's path.
func dirArchive(dir, tmp string, env *envFlag) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	t := qemu.NewTree()
	if err := t.AddDir(abs, filepath.ToSlash(abs), true); err != nil {
		return "", err
	}
	archive := filepath.Join(tmp, "files.tar")
	if err := t.WriteFile(archive); err != nil {
		return "", err
	}
	*env = append(*env, "yolk.cwd="+filepath.ToSlash(abs))
	return archive, nil
}

type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }
func (e *envFlag) Set(s string) error {
	if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
		return errors.New("want KEY=VALUE")
	}
	*e = append(*e, s)
	return nil
}

// listFlag collects a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// forwardFlag collects -p port forwards.
type forwardFlag []qemu.Forward

func (f *forwardFlag) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.String())
	}
	return strings.Join(s, " ")
}

func (f *forwardFlag) Set(s string) error {
	x, err := qemu.ParseForward(s)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// runNet is the network yolk run gives the guest: -net as given, else
// the user network (none on the rpi3 board, which has no NIC); -p needs
// the user network.
func runNet(net string, netSet bool, fwds []qemu.Forward, board string) (string, error) {
	if !netSet {
		net = qemu.NetUser
		if board == "rpi3" && len(fwds) == 0 {
			net = qemu.NetNone
		}
	}
	if err := qemu.CheckNet(net); err != nil {
		return "", err
	}
	if len(fwds) > 0 && net != qemu.NetUser {
		return "", fmt.Errorf("-p forwards ports on the user network: not with -net %s", net)
	}
	if board == "rpi3" && net != qemu.NetNone {
		return "", errors.New("-board rpi3 has no network device (loopback only): leave -net and -p out")
	}
	return net, nil
}

func run(args []string) int { return boot("yolk run", args, nil) }

// boot is yolk run, and yolk prof when p is not nil (prof.go: its flags,
// and the sampler attached to the gdb stub while the guest runs).
func boot(name string, args []string, p *profiler) int {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	accel := fs.String("accel", "auto", "accelerator: auto (KVM if a probe boot works), kvm or tcg")
	machine := fs.String("machine", "", "QEMU machine: microvm (default), pc, q35, firecracker (Firecracker's machine on QEMU microvm: no ACPI, RTC, PCI or shares; the exit is an i8042 reset) or cloud-hypervisor (Cloud Hypervisor's on QEMU microvm: hardware-reduced ACPI, virtio-pci through ECAM with MSI-X, no PIT, PIC or shares; the exit is ACPI S5) for amd64 images; virt (GICv2, default) or virt-gicv3 for arm64")
	mem := fs.String("m", "", "guest RAM, as for QEMU -m (default 128M; -board pc -firmware uefi: "+qemu.UEFIMemory+")")
	smp := fs.Int("smp", 1, "guest CPUs (1 to 64)")
	timeout := fs.Duration("timeout", 10*time.Minute, "kill the guest after this long (0: never)")
	var env envFlag
	fs.Var(&env, "e", "KEY=VALUE for the guest environment (repeatable)")
	dir := fs.String("dir", "", "give the guest this host `directory` (read-only, at its absolute path) and start there")
	gdb := fs.Int("gdb", 0, "start the guest halted with QEMU's gdb stub on this TCP `port` and print the command that attaches gdb")
	board := fs.String("board", "", "boot a board image: rpi3 (the boot directory or .img of yolk build -board rpi3, on QEMU raspi3b: 4 cores, 1 GiB) or pc (the ISO of yolk build -board pc, from the CD-ROM drive, or the disk of yolk image, from -disk's controller, of q35 (default) or pc)")
	firmware := fs.String("firmware", "", "-board pc: bios (SeaBIOS, the default) or uefi (OVMF)")
	var diskVals listFlag
	fs.Var(&diskVals, "disk", "attach this host file as a block device: `FILE[,if=virtio|nvme][,ro][:GUESTPATH]` (virtio-blk by default; nvme: QEMU's NVMe controller on pc and q35, /dev/nvme0n1, …; GUESTPATH default /mnt/disk0, /mnt/disk1, … for the file system's mount to come; repeatable, at most 8; docs/disks.md). With -board pc: the boot disk's controller, "+strings.Join(qemu.DiskControllers, ", ")+" (default "+qemu.DiskControllers[0]+")")
	netFlag := fs.String("net", qemu.NetUser, "the guest's network: user (QEMU's user network: the guest is 10.0.2.15/24, gateway 10.0.2.2, DNS 10.0.2.3), none, or tap:IFNAME (a tap interface the host set up); a virtio-net NIC (the rpi3 board has none)")
	var fwds forwardFlag
	fs.Var(&fwds, "p", "forward a host port to the guest on the user network: `[HOSTADDR:]HOSTPORT:GUESTPORT[/udp]` (HOSTADDR default 127.0.0.1; repeatable)")
	var shares qemu.ShareFlag
	fs.Var(&shares, "share", "give the guest this host directory, writable (virtio-9p): `HOSTDIR[:GUESTPATH][:ro]` (GUESTPATH default HOSTDIR's absolute path; :ro read-only, EROFS; repeatable, at most 4; not on -board rpi3 or pc)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: yolk run [flags] app.elf [arg ...]\n       yolk run -board rpi3 [flags] dir|dir.img [arg ...]\n       yolk run -board pc [-firmware bios|uefi] [flags] app.iso\n       yolk run -board pc [-firmware bios|uefi] [-disk virtio-scsi|nvme|virtio-blk] [flags] disk.raw|disk.qcow2")
		fs.PrintDefaults()
		fmt.Fprintln(os.Stderr, "exit status: the guest's (2: Go panic, 125: kernel fault report), or 123: guest reset\n"+
			"without a report (triple fault), 124: timeout, 126: QEMU failed, 127: QEMU not installed, 130: interrupted")
	}
	if p != nil {
		p.addFlags(fs)
		fs.Usage = p.usage(fs)
	}
	fs.Parse(args)
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	if *board == "rpi3" {
		// The board's machine, cores and memory unless asked otherwise
		// (QEMUArgs refuses what the board does not have).
		if !setFlags["smp"] {
			*smp = 4
		}
		if !setFlags["m"] {
			*mem = "1G"
		}
	}
	if *smp < 1 || *smp > qemu.MaxCPUs {
		fmt.Fprintf(os.Stderr, "yolk run: -smp %d: the kernel runs 1 to %d CPUs\n", *smp, qemu.MaxCPUs)
		return 2
	}
	if _, err := os.Stat(fs.Arg(0)); err != nil {
		fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
		return 2
	}
	// -disk: the boot disk's controller with -board pc, else disks.
	var disks qemu.DiskFlag
	disk := new(string)
	if *board == "pc" && len(diskVals) > 0 {
		*disk = diskVals[len(diskVals)-1]
	} else {
		for _, v := range diskVals {
			if err := disks.Set(v); err != nil {
				fmt.Fprintf(os.Stderr, "yolk run: -disk: %v\n", err)
				return 2
			}
		}
	}
	if *firmware != "" && *board != "pc" {
		fmt.Fprintln(os.Stderr, "yolk run: -firmware goes with -board pc")
		return 2
	}
	netw, err := runNet(*netFlag, setFlags["net"], fwds, *board)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk run: %v\n", err)
		return 2
	}
	switch *board {
	case "":
	case "rpi3":
		if len(shares) > 0 {
			fmt.Fprintln(os.Stderr, "yolk run: -board rpi3 has no virtio: no -share (-dir gives it files in the boot archive)")
			return 2
		}
		if (setFlags["machine"] && *machine != qemu.RPi3Machine) || *smp != 4 || (*mem != "1G" && *mem != "1024M") {
			fmt.Fprintf(os.Stderr, "yolk run: -board %s is QEMU %s with 4 cores and 1 GiB: leave -machine, -smp and -m out\n", *board, qemu.RPi3Machine)
			return 2
		}
		if err := qemu.CheckBoardImage(*board, fs.Arg(0)); err != nil {
			fmt.Fprintf(os.Stderr, "yolk run: %v\n", err)
			return 2
		}
	case "pc":
		if *firmware != "" && !slices.Contains(qemu.Firmwares, *firmware) {
			fmt.Fprintf(os.Stderr, "yolk run: -firmware %q: want %s\n", *firmware, strings.Join(qemu.Firmwares, " or "))
			return 2
		}
		if len(env) > 0 || *dir != "" || fs.NArg() > 1 || len(shares) > 0 {
			fmt.Fprintf(os.Stderr, "yolk run: %v\n", qemu.ErrFixedCmdline)
			return 2
		}
		if err := qemu.CheckPCImage(fs.Arg(0)); err != nil {
			fmt.Fprintf(os.Stderr, "yolk run: %v\n", err)
			return 2
		}
		if *disk != "" && !slices.Contains(qemu.DiskControllers, *disk) {
			fmt.Fprintf(os.Stderr, "yolk run: -disk %q: want %s\n", *disk, strings.Join(qemu.DiskControllers, ", "))
			return 2
		}
		if *disk != "" && image.IsISO(fs.Arg(0)) {
			fmt.Fprintln(os.Stderr, "yolk run: -disk is for a disk image (yolk image); an ISO boots from the CD-ROM drive")
			return 2
		}
		if *gdb != 0 {
			fmt.Fprintln(os.Stderr, "yolk run: -gdb boots ELF images (the kernel inside a PC image is the same ELF: boot that one)")
			return 2
		}
		if *machine != "" && !slices.Contains(qemu.PCMachines, *machine) {
			fmt.Fprintf(os.Stderr, "yolk run: -board pc boots on %s, not -machine %s\n", strings.Join(qemu.PCMachines, " or "), *machine)
			return 2
		}
	default:
		fmt.Fprintf(os.Stderr, "yolk run: -board %q: want rpi3 or pc\n", *board)
		return 2
	}
	if p != nil {
		if err := p.check(*gdb, *board); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 2
		}
	}
	var initrd string
	if *dir != "" {
		tmp, err := os.MkdirTemp("", "yolk-run-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
			return 2
		}
		defer os.RemoveAll(tmp)
		if initrd, err = dirArchive(*dir, tmp, &env); err != nil {
			fmt.Fprintf(os.Stderr, "yolk run: -dir: %v\n", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	arch, err := qemu.ImageArch(fs.Arg(0))
	switch *board {
	case "rpi3":
		arch, err = "arm64", nil
		if *machine == "" {
			*machine = qemu.RPi3Machine
		}
	case "pc":
		arch, err = "amd64", nil
		if *machine == "" {
			*machine = qemu.PCMachines[0]
		}
	case "":
		if err != nil && qemu.CheckPCImage(fs.Arg(0)) == nil {
			err = fmt.Errorf("%s is a PC image: boot it with yolk run -board pc", fs.Arg(0))
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
		return 2
	}
	if *machine == "" {
		*machine = qemu.MachinesFor(arch)[0]
	}
	if other := qemu.ArchOfMachine(*machine); other != "" && other != arch {
		fmt.Fprintf(os.Stderr, "yolk run: -machine %s is an %s machine; %s is an %s image (machines: %s)\n",
			*machine, other, fs.Arg(0), arch, strings.Join(qemu.MachinesFor(arch), ", "))
		return 2
	}
	qemuBin, err := qemu.FindQEMUFor(arch)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
		return 127
	}
	choice, err := qemu.ChooseAccel(ctx, qemu.AccelOptions{Mode: *accel, Arch: arch, Machine: *machine, QEMU: qemuBin})
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, choice)
	symbols := fs.Arg(0)
	if *board != "" { // the card's ELF, kept beside it
		symbols = filepath.Join(strings.TrimSuffix(symbols, ".img"), "kernel8.elf")
	}
	if *gdb != 0 {
		fmt.Fprintf(os.Stderr, "yolk: the guest waits for a debugger on port %d; attach with:\n  %s\n(then: break main.main, continue)\n", *gdb, qemu.GDBCommand(symbols, *gdb))
	}

	runCtx, extra := ctx, []string(nil)
	if p != nil {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		if extra, err = p.start(runCtx, cancel, arch, symbols); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	res, err := qemu.Run(runCtx, qemu.Config{
		QEMU:     qemuBin,
		Image:    fs.Arg(0),
		Arch:     arch,
		Machine:  *machine,
		Board:    *board,
		Accel:    choice.Accel,
		Firmware: *firmware,
		Disk:     *disk,
		Memory:   *mem,
		SMP:      *smp,
		Timeout:  *timeout,
		Env:      env,
		Args:     fs.Args()[1:],
		Initrd:   initrd,
		Net:      netw,
		Forwards: fwds,
		Shares:   shares,
		Disks:    disks,
		GDB:      *gdb,
		Extra:    extra,
		Stdin:    os.Stdin,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
	})
	if p != nil {
		if code, done := p.end(ctx); done {
			return code
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "yolk: interrupted")
		return 130
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
		return qemu.ExitQEMU
	}
	for _, m := range res.Messages {
		fmt.Fprintln(os.Stderr, m)
	}
	return p.status(res.ExitCode)
}
