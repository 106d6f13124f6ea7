package qemu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"yolk/qemu/image"
)

// BenchmarkBoot boots the probe image (a Go program that prints one line
// from main and returns) on each machine with one CPU, and on microvm with
// four and virt with two (the arm64 build on the arm64 machines), and the
// Raspberry Pi 3 card on raspi3b (4 cores), and the probe's PC image
// (pcEntries: GRUB from q35's CD-ROM drive, SeaBIOS and OVMF) with one,
// and reports, per boot, the time from starting QEMU to the kernel's first
// line (ms-to-kernel: after the firmware and GRUB for a PC image), to the
// first serial line (the kernel's first output for an ELF image; the
// firmware's under OVMF), to the line printed by main, and to QEMU's exit,
// plus the image size. It needs
// the yolk kernel. The accelerator comes from $YOLK_ACCEL (auto, kvm or tcg)
// as in TestGuest; the choice is logged.
func BenchmarkBoot(b *testing.B) {
	imgs := map[string]string{}
	for _, arch := range image.Arches {
		if _, err := FindQEMUFor(arch); err != nil {
			b.Fatal(err)
		}
		imgs[arch] = filepath.Join(b.TempDir(), "probe-"+arch+".elf")
		if _, err := image.Build(b.Context(), ProbePackage, image.Options{Output: imgs[arch], Arch: arch}); err != nil {
			b.Fatal(err)
		}
	}
	card := filepath.Join(b.TempDir(), "probe-rpi3")
	if res, err := image.Build(b.Context(), ProbePackage, image.Options{Output: filepath.Join(card, "kernel8.elf"), Arch: "arm64", Board: "rpi3"}); err != nil {
		b.Fatal(err)
	} else if c, err := image.WriteRPi3(res.Output, card, image.RPi3Options{}); err != nil {
		b.Fatal(err)
	} else {
		imgs["rpi3"] = c.Disk
	}
	iso := filepath.Join(b.TempDir(), "probe.iso")
	kernel := filepath.Join(b.TempDir(), "probe-pc.elf")
	if elf, err := os.ReadFile(imgs["amd64"]); err != nil {
		b.Fatal(err)
	} else if err := os.WriteFile(kernel, elf, 0o755); err != nil {
		b.Fatal(err)
	}
	if _, err := image.PatchMultiboot2(kernel); err != nil {
		b.Fatal(err)
	}
	if err := image.BuildISO(b.Context(), kernel, image.ISOOptions{Output: iso}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		m     string
		cpus  int
		board string
	}{{"microvm", 1, ""}, {"microvm", 4, ""}, {Firecracker, 1, ""}, {CloudHypervisor, 1, ""}, {"pc", 1, ""}, {"q35", 1, ""}, {"iso-bios", 1, "pc"}, {"iso-uefi", 1, "pc"},
		{"virt", 1, ""}, {"virt", 2, ""}, {"virt-gicv3", 1, ""}, {RPi3Machine, 4, "rpi3"}} {
		m, firmware := c.m, pcEntries[c.m]
		arch := ArchOfMachine(m)
		img := imgs[arch]
		switch c.board {
		case "rpi3":
			arch, img = "arm64", imgs[c.board]
		case "pc":
			m, arch, img = "q35", "amd64", iso
		}
		st, err := os.Stat(img)
		if err != nil {
			b.Fatal(err)
		}
		choice, err := ChooseAccel(b.Context(), AccelOptions{Mode: os.Getenv("YOLK_ACCEL"), Arch: arch, Machine: m, ProbeImage: imgs[arch]})
		if err != nil {
			b.Fatal(err)
		}
		b.Log(choice)
		b.Run(fmt.Sprintf("%s/cpus=%d", c.m, c.cpus), func(b *testing.B) {
			var first, toKernel, toMain, total time.Duration
			for b.Loop() {
				var firstAt, kernelAt, mainAt time.Duration
				start := time.Now()
				res, err := Run(b.Context(), Config{
					Image: img, Board: c.board, Firmware: firmware, Arch: arch, Machine: m, SMP: c.cpus, Accel: choice.Accel, Timeout: time.Minute,
					OnLine: func(l string) {
						if firstAt == 0 {
							firstAt = time.Since(start)
						}
						if kernelAt == 0 && strings.Contains(l, "yolk: boot: yolk kernel") {
							kernelAt = time.Since(start)
						}
						if strings.HasPrefix(l, "yolk: kvm probe: Go main reached") {
							mainAt = time.Since(start)
						}
					},
				})
				if err != nil {
					b.Fatal(err)
				}
				if res.ExitCode != 0 || mainAt == 0 {
					b.Fatalf("probe boot: exit %d, main line seen: %v, %q", res.ExitCode, mainAt != 0, res.Messages)
				}
				// From QEMU's start, as res.FirstLine: without what Run
				// does before it (a board's .img is read and unpacked).
				pre := firstAt - res.FirstLine
				first += res.FirstLine
				toKernel += kernelAt - pre
				toMain += mainAt - pre
				total += res.Elapsed
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
			b.ReportMetric(ms(first), "ms-to-first-line")
			b.ReportMetric(ms(toKernel), "ms-to-kernel")
			b.ReportMetric(ms(toMain), "ms-to-main")
			b.ReportMetric(ms(total), "ms-to-exit")
			b.ReportMetric(float64(st.Size()), "image-bytes")
		})
	}
}
