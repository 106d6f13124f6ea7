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
// Raspberry Pi 3 card on raspi3b (4 cores), and reports, per boot, the time from
// starting QEMU to the first serial line (the kernel's first output), to the
// line printed by main, and to QEMU's exit, plus the image size. It needs
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
	for _, c := range []struct {
		m     string
		cpus  int
		board string
	}{{"microvm", 1, ""}, {"microvm", 4, ""}, {"pc", 1, ""}, {"q35", 1, ""}, {"virt", 1, ""}, {"virt", 2, ""}, {"virt-gicv3", 1, ""}, {RPi3Machine, 4, "rpi3"}} {
		m := c.m
		arch := ArchOfMachine(m)
		img := imgs[arch]
		if c.board != "" {
			arch, img = "arm64", imgs[c.board]
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
		b.Run(fmt.Sprintf("%s/cpus=%d", m, c.cpus), func(b *testing.B) {
			var first, toMain, total time.Duration
			for b.Loop() {
				var mainAt time.Duration
				start := time.Now()
				res, err := Run(b.Context(), Config{
					Image: img, Board: c.board, Arch: arch, Machine: m, SMP: c.cpus, Accel: choice.Accel, Timeout: time.Minute,
					OnLine: func(l string) {
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
				first += res.FirstLine
				toMain += mainAt
				total += res.Elapsed
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
			b.ReportMetric(ms(first), "ms-to-first-line")
			b.ReportMetric(ms(toMain), "ms-to-main")
			b.ReportMetric(ms(total), "ms-to-exit")
			b.ReportMetric(float64(st.Size()), "image-bytes")
		})
	}
}
