package image

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestGRUBConfig(t *testing.T) {
	for _, c := range []struct {
		cmdline, initrd bool
		modules         []string
	}{
		{false, false, nil},
		{true, false, []string{"module2 /boot/cmdline yolk.cmdline"}},
		{true, true, []string{"module2 /boot/cmdline yolk.cmdline", "module2 /boot/initrd yolk.initrd"}},
	} {
		cfg := GRUBConfig(c.cmdline, c.initrd)
		var mods []string
		for _, l := range strings.Split(cfg, "\n") {
			if strings.HasPrefix(l, "module2 ") {
				mods = append(mods, l)
			}
		}
		if strings.Join(mods, "\n") != strings.Join(c.modules, "\n") {
			t.Errorf("GRUBConfig(%v, %v) modules %q, want %q", c.cmdline, c.initrd, mods, c.modules)
		}
		for _, want := range []string{
			"serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1\n",
			"terminal_output serial console\n",
			"multiboot2 /boot/yolk.elf\n",
		} {
			if !strings.Contains(cfg, want) {
				t.Errorf("GRUBConfig lacks %q:\n%s", want, cfg)
			}
		}
		if !strings.Contains(cfg, "\nboot\n") || !strings.HasSuffix(cfg, "\nhalt\n") {
			t.Errorf("GRUBConfig does not boot, then power off if that fails:\n%s", cfg)
		}
	}
}

// TestBuildISO builds a PC image from real linker output and checks what
// makes it boot: an ISO 9660 volume, an MBR boot signature (the hybrid
// image dd writes to a USB stick), El Torito boot images for BIOS and
// UEFI, and the kernel, command line and boot archive inside, byte for
// byte. A kernel without a Multiboot2 header is refused.
func TestBuildISO(t *testing.T) {
	if err := CheckISOTools(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	kernel := filepath.Join(dir, "kernel.elf")
	if err := os.WriteFile(kernel, orig, 0o755); err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(dir, "pc.iso")
	if err := BuildISO(t.Context(), kernel, ISOOptions{Output: iso}); err == nil || !strings.Contains(err.Error(), "no Multiboot2 header") {
		t.Fatalf("kernel without a header: %v", err)
	}
	if _, err := PatchMultiboot2(kernel, "main.entry32"); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "files.tar")
	archive := bytes.Repeat([]byte("boot archive "), 1000)
	if err := os.WriteFile(initrd, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	const cmdline = `A="x y" -- arg`
	if err := BuildISO(t.Context(), kernel, ISOOptions{Output: iso, Cmdline: cmdline, Initrd: initrd}); err != nil {
		t.Fatal(err)
	}
	if !IsISO(iso) || IsISO(kernel) {
		t.Errorf("IsISO: iso %v, kernel %v", IsISO(iso), IsISO(kernel))
	}
	b, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	if b[510] != 0x55 || b[511] != 0xAA {
		t.Errorf("no MBR boot signature at 510: % x (not a hybrid image)", b[510:512])
	}
	t.Logf("%s: %d bytes", iso, len(b))

	out, err := exec.Command("xorriso", "-indev", iso, "-report_el_torito", "plain").CombinedOutput()
	if err != nil {
		t.Fatalf("xorriso -report_el_torito: %v\n%s", err, out)
	}
	for _, want := range []string{"El Torito boot img :   1  BIOS", "El Torito boot img :   2  UEFI"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("El Torito report lacks %q:\n%s", want, out)
		}
	}

	got, err := ExtractISOKernel(t.Context(), iso, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	patched, _ := os.ReadFile(kernel)
	if k, _ := os.ReadFile(got); !bytes.Equal(k, patched) {
		t.Error("the kernel in the ISO differs from the one given")
	}
	for path, want := range map[string][]byte{ISOCmdline: []byte(cmdline), ISOInitrd: archive, isoGRUBCfg: []byte(GRUBConfig(true, true))} {
		p := filepath.Join(t.TempDir(), "f")
		if out, err := exec.Command("xorriso", "-osirrox", "on", "-indev", iso, "-extract", path, p).CombinedOutput(); err != nil {
			t.Fatalf("extracting %s: %v\n%s", path, err, out)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("%s in the ISO: %d bytes, want %d", path, len(got), len(want))
		}
	}
}

// TestCheckISOTools: missing programs are named with their packages and
// the install command.
func TestCheckISOTools(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := CheckISOTools()
	if err == nil {
		t.Fatal("no error with an empty PATH")
	}
	for _, want := range []string{"grub-mkrescue", "xorriso", "mformat", "grub-common", "mtools", ISOInstallHint} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
