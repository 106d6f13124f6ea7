package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The PC image (-board pc) is a hybrid ISO 9660 image made by GRUB's
// grub-mkrescue: El Torito boot records for BIOS (GRUB i386-pc) and UEFI
// (an EFI system partition image with GRUB x86_64-efi), and an MBR and
// GPT so that the same file written to a USB stick boots a PC. GRUB loads
// the kernel ELF with its multiboot2 command (the header PatchMultiboot2
// writes) and passes the command line and the boot archive as modules
// (grub.cfg, GRUBConfig). docs/pc-image.md describes the choice.

// Paths inside the ISO.
const (
	ISOKernel  = "/boot/yolk.elf"
	ISOCmdline = "/boot/cmdline"
	ISOInitrd  = "/boot/initrd"
	isoGRUBCfg = "/boot/grub/grub.cfg"
)

// Module strings the kernel looks for (boot.CmdlineModule,
// boot.InitrdModule).
const (
	cmdlineModule = "yolk.cmdline"
	initrdModule  = "yolk.initrd"
)

// ISOInstallHint installs what BuildISO runs, on Debian.
const ISOInstallHint = "apt-get update && apt-get install -y grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools"

// ISOTools are the programs and GRUB platform directories BuildISO needs,
// each with the Debian package that has it. grub-mkrescue leaves out a
// platform whose directory is missing without an error, so the
// directories are checked too.
var ISOTools = []struct{ Path, Package string }{
	{"grub-mkrescue", "grub-common"},
	{"xorriso", "xorriso"},
	{"mformat", "mtools"}, // grub-mkrescue builds the EFI partition image with it
	{"/usr/lib/grub/i386-pc", "grub-pc-bin"},
	{"/usr/lib/grub/x86_64-efi", "grub-efi-amd64-bin"},
}

// CheckISOTools reports which of ISOTools are missing and how to install
// them.
func CheckISOTools() error { return checkTools("a PC image", ISOTools, ISOInstallHint) }

// checkTools reports which of tools (a command, or a path that must
// exist) are missing for building what, and how to install them.
func checkTools(what string, tools []struct{ Path, Package string }, hint string) error {
	var missing, pkgs []string
	for _, tool := range tools {
		var err error
		if filepath.IsAbs(tool.Path) {
			_, err = os.Stat(tool.Path)
		} else {
			_, err = exec.LookPath(tool.Path)
		}
		if err != nil {
			missing = append(missing, tool.Path)
			pkgs = append(pkgs, tool.Package)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("building %s needs %s (Debian: %s); install them with: %s",
		what, strings.Join(missing, ", "), strings.Join(pkgs, ", "), hint)
}

// GRUBConfig is the grub.cfg of a PC image: GRUB's terminal on COM1
// (115200 8N1) as well as the screen, then straight to the kernel, no
// menu. The command line (when there is one) travels as a module whose
// bytes the kernel reads verbatim: GRUB's own multiboot2 command line is
// re-quoted by GRUB, differently in different versions. If loading fails
// (GRUB prints why: for example "out of memory" when the firmware holds
// part of the kernel's fixed physical range), GRUB says so and powers the
// machine off 10 seconds later, so that a test run ends instead of
// waiting at GRUB's prompt.
func GRUBConfig(cmdline, initrd bool) string {
	var b strings.Builder
	b.WriteString("# yolk PC image (docs/pc-image.md): the kernel through Multiboot2, no menu.\n")
	b.WriteString("serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1\n")
	b.WriteString("terminal_input serial console\n")
	b.WriteString("terminal_output serial console\n")
	fmt.Fprintf(&b, "multiboot2 %s\n", ISOKernel)
	if cmdline {
		fmt.Fprintf(&b, "module2 %s %s\n", ISOCmdline, cmdlineModule)
	}
	if initrd {
		fmt.Fprintf(&b, "module2 %s %s\n", ISOInitrd, initrdModule)
	}
	b.WriteString("boot\n")
	b.WriteString("echo \"GRUB could not boot the kernel (error above): power off in 10 s\"\n")
	b.WriteString("sleep 10\n")
	b.WriteString("halt\n")
	return b.String()
}

// ISOOptions control BuildISO.
type ISOOptions struct {
	Output  string // the ISO image to write
	Cmdline string // kernel command line (qemu.Cmdline's encoding); "" for none
	Initrd  string // boot archive (a ustar file) to pass as the boot module; "" for none
}

// BuildISO writes a PC image holding the kernel ELF image kernel (built
// and patched by Build: PVH note and Multiboot2 header), GRUB for BIOS and
// UEFI, and the command line and boot archive, which are fixed from then
// on. It fails with the install command when the tools are missing.
func BuildISO(ctx context.Context, kernel string, opt ISOOptions) error {
	if opt.Output == "" {
		return errors.New("BuildISO needs an output path")
	}
	if err := CheckISOTools(); err != nil {
		return err
	}
	elf, err := os.ReadFile(kernel)
	if err != nil {
		return err
	}
	if FindMultiboot2(elf) < 0 {
		return fmt.Errorf("%s has no Multiboot2 header (PatchMultiboot2 writes it)", kernel)
	}
	tree, err := os.MkdirTemp("", "yolk-iso-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	files := map[string][]byte{
		ISOKernel:  elf,
		isoGRUBCfg: []byte(GRUBConfig(opt.Cmdline != "", opt.Initrd != "")),
	}
	if opt.Cmdline != "" {
		files[ISOCmdline] = []byte(opt.Cmdline)
	}
	if opt.Initrd != "" {
		if files[ISOInitrd], err = os.ReadFile(opt.Initrd); err != nil {
			return err
		}
	}
	for name, data := range files {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	out, err := filepath.Abs(opt.Output)
	if err != nil {
		return err
	}
	// No fonts, locales or themes (serial and text consoles only), and
	// GRUB's modules xz-compressed: about 6 MiB of GRUB instead of 20.
	cmd := exec.CommandContext(ctx, "grub-mkrescue", "--fonts=", "--locales=", "--themes=", "--compress=xz", "-o", out, tree)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("grub-mkrescue: %v\n%s", err, strings.TrimSpace(log.String()))
	}
	return nil
}

// IsISO reports whether the file at path is an ISO 9660 image (the
// "CD001" identifier of its first volume descriptor, at 32 KiB + 1).
func IsISO(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 5)
	_, err = f.ReadAt(b, 0x8001)
	return err == nil && string(b) == "CD001"
}

// ExtractISOKernel copies the kernel ELF out of a PC image into dir and
// returns its path (for symbolizing backtraces and attaching a debugger).
func ExtractISOKernel(ctx context.Context, iso, dir string) (string, error) {
	out := filepath.Join(dir, "yolk.elf")
	cmd := exec.CommandContext(ctx, "xorriso", "-osirrox", "on", "-indev", iso, "-extract", ISOKernel, out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("extracting %s from %s with xorriso: %v\n%s", ISOKernel, iso, err, strings.TrimSpace(log.String()))
	}
	return out, nil
}
