package qemu

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"yolk/qemu/image"
)

// TestQEMUArgsPC: a PC image boots from -cdrom on q35 (default) or pc,
// with SeaBIOS (QEMU's default: no -bios) or OVMF (-bios), and with no
// -kernel, -append or -initrd: its command line and boot archive are
// inside it, and new ones are refused.
func TestQEMUArgsPC(t *testing.T) {
	ovmf := filepath.Join(t.TempDir(), "OVMF.fd")
	if err := os.WriteFile(ovmf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("YOLK_OVMF", ovmf)
	common := []string{"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"}
	got, err := QEMUArgs(Config{Board: "pc", Image: "app.iso", SMP: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]string{"-machine", "q35", "-accel", "tcg", "-cpu", "max", "-m", "128M", "-smp", "2"}, common...),
		"-cdrom", "app.iso")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bios:\n%q\nwant\n%q", got, want)
	}
	got, err = QEMUArgs(Config{Board: "pc", Firmware: "uefi", Machine: "pc", Image: "app.iso", Memory: "512M", GDB: 1234})
	if err != nil {
		t.Fatal(err)
	}
	want = append(append([]string{"-machine", "pc", "-accel", "tcg", "-cpu", "max", "-m", "512M", "-smp", "1"}, common...),
		"-bios", ovmf, "-cdrom", "app.iso", "-gdb", "tcp::1234", "-S")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uefi:\n%q\nwant\n%q", got, want)
	}
	if got, err := QEMUArgs(Config{Board: "pc", Firmware: "uefi", Image: "a"}); err != nil || got[7] != UEFIMemory {
		t.Errorf("uefi default memory: %q, %v; want -m %s", got, err, UEFIMemory)
	}
	for _, c := range []struct {
		cfg Config
		msg string
	}{
		{Config{Board: "pc", Image: "a", Env: []string{"A=1"}}, "carries its command line"},
		{Config{Board: "pc", Image: "a", Args: []string{"x"}}, "carries its command line"},
		{Config{Board: "pc", Image: "a", Initrd: "files.tar"}, "carries its command line"},
		{Config{Board: "pc", Image: "a", Machine: "microvm"}, `machine "microvm": want one of q35, pc`},
		{Config{Board: "pc", Image: "a", Firmware: "coreboot"}, `firmware "coreboot": want one of bios, uefi`},
		{Config{Board: "pc", Image: "a", Arch: "arm64"}, "want amd64"},
		{Config{Board: "pc"}, "no image"},
		{Config{Board: "rpi9", Image: "a"}, `board "rpi9"`},
	} {
		if _, err := QEMUArgs(c.cfg); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("QEMUArgs(%+v): %v, want an error containing %q", c.cfg, err, c.msg)
		}
	}
	if _, err := QEMUArgs(Config{Board: "pc", Image: "a", Env: []string{"A=1"}}); !errors.Is(err, ErrFixedCmdline) {
		t.Errorf("env for a PC image: %v, want ErrFixedCmdline", err)
	}
}

// TestQEMUArgsDisk: a disk image on each controller, first in the boot
// order, QEMU's writes kept in an overlay; raw or QCOW2 by its magic.
func TestQEMUArgsDisk(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "disk.raw")
	os.WriteFile(raw, append(make([]byte, 512), "EFI PART"...), 0o644)
	q := filepath.Join(dir, "disk.qcow2")
	os.WriteFile(q, []byte("QFI\xfb\x00\x00\x00\x03"), 0o644)
	// A hybrid ISO: a GPT as well as the volume descriptor.
	iso := filepath.Join(dir, "app.iso")
	isoData := append(make([]byte, 0x8001), "CD001"...)
	copy(isoData[512:], "EFI PART")
	os.WriteFile(iso, isoData, 0o644)
	for _, c := range []struct {
		img, disk string
		want      []string
	}{
		{raw, "", []string{"-drive", "file=" + raw + ",format=raw,if=none,id=disk0,snapshot=on",
			"-device", "virtio-scsi-pci,id=scsi0", "-device", "scsi-hd,drive=disk0,bus=scsi0.0,bootindex=0"}},
		{q, "nvme", []string{"-drive", "file=" + q + ",format=qcow2,if=none,id=disk0,snapshot=on",
			"-device", "nvme,drive=disk0,serial=yolk0,bootindex=0"}},
		{raw, "virtio-blk", []string{"-drive", "file=" + raw + ",format=raw,if=none,id=disk0,snapshot=on",
			"-device", "virtio-blk-pci,drive=disk0,bootindex=0"}},
		{iso, "", []string{"-cdrom", iso}},
	} {
		got, err := QEMUArgs(Config{Board: "pc", Image: c.img, Disk: c.disk})
		if err != nil {
			t.Fatal(err)
		}
		if tail := got[len(got)-len(c.want):]; !reflect.DeepEqual(tail, c.want) {
			t.Errorf("%s on %q: %q, want it to end %q", c.img, c.disk, got, c.want)
		}
	}
	for _, c := range []struct{ img, disk, want string }{
		{raw, "ide", `disk controller "ide"`},
		{iso, "nvme", "is not a disk image"},
	} {
		if _, err := QEMUArgs(Config{Board: "pc", Image: c.img, Disk: c.disk}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %q: %v, want %q", c.img, c.disk, err, c.want)
		}
	}
	for img, ok := range map[string]bool{raw: true, q: true, iso: true, filepath.Join(dir, "x.tar.gz"): false, filepath.Join(dir, "none"): false} {
		if err := CheckPCImage(img); (err == nil) != ok {
			t.Errorf("CheckPCImage(%s): %v", img, err)
		}
	}
}

// TestFindOVMF: $YOLK_OVMF wins; a missing firmware says how to install it.
func TestFindOVMF(t *testing.T) {
	t.Setenv("YOLK_OVMF", "/no/such/OVMF.fd")
	if _, err := FindOVMF(); err == nil || !strings.Contains(err.Error(), "YOLK_OVMF") {
		t.Errorf("missing $YOLK_OVMF file: %v", err)
	}
	t.Setenv("YOLK_OVMF", "")
	p, err := FindOVMF()
	if _, serr := os.Stat(OVMFPath); serr == nil {
		if err != nil || p != OVMFPath {
			t.Errorf("FindOVMF = %q, %v; want %s", p, err, OVMFPath)
		}
	} else if err == nil || !strings.Contains(err.Error(), OVMFInstallHint) {
		t.Errorf("no OVMF: %v, want the install hint", err)
	}
}

// TestRunStubPCImage boots a stub guest (stub_test.go) from a PC image
// with each firmware: GRUB finds the Multiboot2 header and enters the
// stub's 32-bit entry, the exit status comes through isa-debug-exit, and
// the fault report's addresses are symbolized from the kernel extracted
// from the ISO. The same file also boots as a USB stick.
func TestRunStubPCImage(t *testing.T) {
	needQEMU(t)
	if err := image.CheckISOTools(); err != nil {
		t.Fatal(err)
	}
	kernel := stubImage(t, "stubFault")
	f, err := elf.Open(kernel)
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
	setFaultPCs(t, kernel, mainPC, mainPC+1)
	if _, err := image.PatchMultiboot2(kernel, "main.stubFault"); err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(t.TempDir(), "stub.iso")
	if err := image.BuildISO(t.Context(), kernel, image.ISOOptions{Output: iso}); err != nil {
		t.Fatal(err)
	}
	for _, fw := range Firmwares {
		t.Run(fw, func(t *testing.T) {
			res, out := runStub(t, "", "q35", Config{Image: iso, Board: "pc", Firmware: fw})
			want := fmt.Sprintf("yolk:   at 0x%016x main.main+0x0", mainPC)
			if res.ExitCode != 125 || !strings.Contains(out, "yolk: fault: vector 6 (#UD)\n") || !strings.Contains(out, want) {
				t.Errorf("exit %d, output lacks the fault report or %q:\n%s", res.ExitCode, want, out)
			}
		})
		// The same file as a USB stick (what dd writes): a USB mass
		// storage device on an xHCI controller, the boot device.
		t.Run(fw+"-usb", func(t *testing.T) {
			args, err := QEMUArgs(Config{Image: iso, Board: "pc", Firmware: fw})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.Index(args, "-cdrom")
			args = slices.Replace(args, i, i+2, "-drive", "file="+iso+",format=raw,if=none,id=stick,readonly=on",
				"-device", "qemu-xhci", "-device", "usb-storage,drive=stick,bootindex=0")
			qemu, err := FindQEMU()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, qemu, args...).Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 125<<1|1 || !strings.Contains(string(out), "yolk: fault: vector 6 (#UD)") {
				t.Errorf("QEMU %q: %v, want isa-debug-exit status %d and the stub's report; output:\n%s", args, err, 125<<1|1, out)
			}
		})
	}
	// A disk image (yolk image) with SeaBIOS: the backtrace symbolized
	// from the kernel on its EFI system partition.
	t.Run("bios-disk", func(t *testing.T) {
		disk := filepath.Join(t.TempDir(), "stub.raw")
		if err := image.BuildDisk(t.Context(), kernel, image.DiskOptions{Output: disk, Size: 128 << 20}); err != nil {
			t.Fatal(err)
		}
		res, out := runStub(t, "", "pc", Config{Image: disk, Board: "pc", Disk: "virtio-blk"})
		want := fmt.Sprintf("yolk:   at 0x%016x main.main+0x0", mainPC)
		if res.ExitCode != 125 || !strings.Contains(out, "yolk: fault: vector 6 (#UD)\n") || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks the fault report or %q:\n%s", res.ExitCode, want, out)
		}
	})
}

// TestPCImageTextScreen boots a program from a PC image with SeaBIOS on a
// machine with a VGA card: GRUB leaves the EGA text screen and says so in
// the Multiboot2 information, and the kernel shows its console there too.
// The program waits for the end of its input; meanwhile QEMU's monitor
// saves the text screen's memory (0xB8000), which must hold the line the
// program printed.
func TestPCImageTextScreen(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module screen\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	fmt.Println("shown on the text screen")
	io.ReadAll(os.Stdin)
}
`), 0o644)
	iso := filepath.Join(dir, "screen.iso")
	if _, err := image.Build(t.Context(), dir, image.Options{Output: iso, Board: "pc", Cmdline: "--"}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "monitor.sock")
	dump := filepath.Join(dir, "screen.bin")
	stdinR, stdinW := io.Pipe()
	printed := make(chan struct{})
	var once sync.Once
	go func() {
		defer stdinW.Close()
		select {
		case <-printed:
		case <-t.Context().Done():
			return
		}
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "pmemsave 0xb8000 4000 %q\n", dump)
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if st, err := os.Stat(dump); err == nil && st.Size() == 4000 {
				return
			}
		}
		t.Error("QEMU's monitor did not save the screen")
	}()
	res, out := runStub(t, "", "q35", Config{
		Image: iso, Board: "pc", Stdin: stdinR,
		Extra: []string{"-vga", "std", "-monitor", "unix:" + sock + ",server,nowait"},
		OnLine: func(l string) {
			if l == "shown on the text screen" {
				once.Do(func() { close(printed) })
			}
		},
	})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %v\n%s", res.ExitCode, res.Messages, out)
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := 0; i+1 < len(b); i += 2 {
		text.WriteByte(b[i])
		if i/2%80 == 79 {
			text.WriteByte('\n')
		}
	}
	if !strings.Contains(text.String(), "shown on the text screen") || !strings.Contains(text.String(), "yolk: boot: ") {
		t.Errorf("the text screen lacks the kernel's boot line or the program's output:\n%s", text.String())
	}
}
