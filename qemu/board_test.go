package qemu

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"yolk/qemu/image"
)

func TestQEMUArgsRPi3(t *testing.T) {
	got, err := QEMUArgs(Config{Image: "card", Board: "rpi3", Initrd: "files.tar", Env: []string{"A=1"}, Args: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-machine", "raspi3b", "-accel", "tcg", "-cpu", "cortex-a53", "-m", "1G", "-smp", "4",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
		"-semihosting-config", "enable=on,target=native",
		"-kernel", "card/kernel8.img", "-dtb", "card/yolk.dtb", "-append", "A=1 -- x",
		"-initrd", "files.tar",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// No environment, no arguments: the card's own command line (the
	// tree's bootargs) stays.
	got, err = QEMUArgs(Config{Image: "card", Board: "rpi3"})
	if err != nil || strings.Contains(strings.Join(got, " "), "-append") {
		t.Errorf("without arguments: %q, %v", got, err)
	}
	for _, c := range []Config{
		{Image: "card", Board: "rpi3", SMP: 2},
		{Image: "card", Board: "rpi3", Memory: "2G"},
		{Image: "card", Board: "rpi3", Machine: "virt"},
		{Image: "card", Board: "rpi4"},
	} {
		if _, err := QEMUArgs(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// boardFiles takes the boot directory or the disk image, and refuses what
// is not a card of ours.
func TestBoardFiles(t *testing.T) {
	dir := t.TempDir()
	card := filepath.Join(dir, "card")
	os.Mkdir(card, 0o755)
	files := []image.FATFile{{Name: "kernel8.img", Data: []byte("kernel")}, {Name: "yolk.dtb", Data: []byte("tree")}}
	for _, f := range files {
		os.WriteFile(filepath.Join(card, f.Name), f.Data, 0o644)
	}
	os.WriteFile(filepath.Join(card, "kernel8.elf"), []byte("elf"), 0o644)
	disk, err := image.FATDisk("yolk", files)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(card+".img", disk, 0o644)

	d, elfPath, cleanup, err := boardFiles("rpi3", card)
	if err != nil || d != card || elfPath != filepath.Join(card, "kernel8.elf") {
		t.Errorf("directory: %q %q %v", d, elfPath, err)
	}
	cleanup()
	d, elfPath, cleanup, err = boardFiles("rpi3", card+".img")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "kernel8.img")); string(b) != "kernel" || elfPath != filepath.Join(card, "kernel8.elf") {
		t.Errorf("disk image: kernel8.img %q, symbols %q", b, elfPath)
	}
	cleanup()
	if _, err := os.Stat(d); err == nil {
		t.Error("cleanup left the extracted files")
	}

	os.Remove(filepath.Join(card, "yolk.dtb"))
	if _, _, _, err := boardFiles("rpi3", card); err == nil || !strings.Contains(err.Error(), "yolk.dtb") {
		t.Errorf("card without its device tree: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "junk.img"), make([]byte, 4096), 0o644)
	if _, _, _, err := boardFiles("rpi3", filepath.Join(dir, "junk.img")); err == nil {
		t.Error("a file without a FAT partition accepted")
	}
}

// A card boots with its own command line when yolk run gives none (the
// tree's bootargs, after the start mark), and a program whose string
// literals sit in the image's first 2 MiB (the Pi's image starts at
// 0x80000) prints its panic: system calls accept those addresses.
func TestRPi3CardBoot(t *testing.T) {
	if _, err := FindQEMUFor("arm64"); err != nil {
		t.Fatal(err)
	}
	card := filepath.Join(t.TempDir(), "card")
	res, err := image.Build(t.Context(), "yolk/examples/hello", image.Options{Output: filepath.Join(card, "kernel8.elf"), Arch: "arm64", Board: "rpi3", Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	line, err := Cmdline([]string{"USER=pi"}, []string{"-panic"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := image.WriteRPi3(res.Output, card, image.RPi3Options{Cmdline: line})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r, err := Run(t.Context(), Config{Image: c.Disk, Board: "rpi3", Timeout: 2 * time.Minute, Stdout: &out, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`args ["-panic"], USER="pi"`, "panic: hello: asked to panic"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if r.ExitCode != 2 {
		t.Errorf("exit %d, want 2 (Go panic); %q", r.ExitCode, r.Messages)
	}
}
