package qemu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"yolk/qemu/image"
)

// Board images (Config.Board): "rpi3" boots a Raspberry Pi 3 SD card — the
// boot directory image.WriteRPi3 wrote, or its FAT disk image (.img) — on
// QEMU raspi3b, which loads kernel8.img and the card's device tree itself
// (no GPU firmware): 4 Cortex-A53 cores, 1 GiB, the PL011 as the serial
// port, semihosting for the exit status.

// Boards are the board images Run boots: rpi3 here, pc (a PC's ISO) in
// pc.go.
var Boards = []string{"rpi3", "pc"}

// RPi3Machine is QEMU's Raspberry Pi 3 model; it has exactly 4 cores and
// 1 GiB of RAM.
const RPi3Machine = "raspi3b"

// boardFiles resolves a board image to its boot directory: dir itself, or
// a .img's files extracted into a new temporary directory (cleanup removes
// it). elfPath is the kernel's ELF for symbols ("" if none is found:
// <dir>/kernel8.elf, beside an .img <name>/kernel8.elf).
func boardFiles(board, path string) (dir, elfPath string, cleanup func(), err error) {
	cleanup = func() {}
	if board != "rpi3" {
		return "", "", cleanup, fmt.Errorf("board %q: want one of %s", board, strings.Join(Boards, ", "))
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", "", cleanup, err
	}
	if st.IsDir() {
		dir = path
	} else {
		disk, err := os.ReadFile(path)
		if err != nil {
			return "", "", cleanup, err
		}
		files, err := image.FATFiles(disk)
		if err != nil {
			return "", "", cleanup, fmt.Errorf("%s: %w (want the SD-card image or the boot directory yolk build -board rpi3 wrote)", path, err)
		}
		if dir, err = os.MkdirTemp("", "yolk-rpi3-"); err != nil {
			return "", "", cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
				cleanup()
				return "", "", func() {}, err
			}
		}
		path = strings.TrimSuffix(path, filepath.Ext(path))
	}
	for _, name := range []string{"kernel8.img", image.RPi3DTB} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			cleanup()
			return "", "", func() {}, fmt.Errorf("%s has no %s: not a yolk Raspberry Pi 3 card (yolk build -board rpi3)", path, name)
		}
	}
	if e := filepath.Join(path, "kernel8.elf"); fileExists(e) {
		elfPath = e
	}
	return dir, elfPath, cleanup, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// rpi3Check refuses a Config that asks the Pi for another machine, CPU
// count or memory size than its own.
func rpi3Check(c Config) error {
	if c.Machine != "" && c.Machine != RPi3Machine {
		return fmt.Errorf("board rpi3 boots on machine %s, not %s", RPi3Machine, c.Machine)
	}
	if c.SMP != 0 && c.SMP != 4 {
		return errors.New("board rpi3 has 4 cores: -smp must be 4 (or not given)")
	}
	if c.Memory != "" && c.Memory != "1G" && c.Memory != "1024M" {
		return errors.New("board rpi3 has 1 GiB of RAM: -m must be 1G (or not given)")
	}
	return nil
}

// CheckBoardImage reports whether path is a board image Run can boot for
// board, without booting it.
func CheckBoardImage(board, path string) error {
	if board == "pc" {
		return CheckPCImage(path)
	}
	_, _, cleanup, err := boardFiles(board, path)
	cleanup()
	return err
}
