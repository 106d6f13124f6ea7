package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
)

// bootBench builds the two trivial programs with netsvc auto, on and off,
// boots each image count times on machine with one CPU and the user
// network (as yolk run), and writes benchmark lines: image bytes, and the
// times from QEMU's start to its first serial line, to main's line and to
// QEMU's exit, and the kernel's own "boot N µs".
func bootBench(ctx context.Context, machines []string, count int) error {
	variants := []struct{ name, pkg, netsvc string }{
		{"plain-auto", "./cmd/netbench/trivial/plain", "auto"},
		{"plain-on", "./cmd/netbench/trivial/plain", "on"},
		{"usenet-auto", "./cmd/netbench/trivial/usenet", "auto"},
		{"usenet-off", "./cmd/netbench/trivial/usenet", "off"},
	}
	imgs := map[string]string{}
	for _, v := range variants {
		abs, _ := filepath.Abs(v.pkg)
		out := filepath.Join(*outDir, "trivial-"+v.name+".elf")
		if _, err := image.Build(ctx, abs, image.Options{Output: out, Arch: "amd64", NetService: v.netsvc}); err != nil {
			return err
		}
		imgs[v.name] = out
	}
	f, err := os.Create(filepath.Join(*outDir, "boot.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "goos: linux\ngoarch: amd64\npkg: yolk/cmd/netbench/host\n")
	for i := 0; i < count; i++ {
		for _, m := range machines {
			for _, v := range variants {
				st, err := os.Stat(imgs[v.name])
				if err != nil {
					return err
				}
				var firstAt, mainAt time.Duration
				var kboot float64
				start := time.Now()
				res, err := qemu.Run(ctx, qemu.Config{Image: imgs[v.name], Machine: m, Accel: "tcg", SMP: 1, Net: qemu.NetUser, Timeout: time.Minute,
					OnLine: func(l string) {
						if firstAt == 0 {
							firstAt = time.Since(start)
						}
						if strings.HasPrefix(l, "netbench-trivial: main") && mainAt == 0 {
							mainAt = time.Since(start)
						}
						if j := strings.Index(l, ", boot "); j >= 0 && strings.HasSuffix(l, " µs") {
							kboot, _ = strconv.ParseFloat(strings.TrimSuffix(l[j+len(", boot "):], " µs"), 64)
						}
					}})
				if err != nil {
					return err
				}
				if res.ExitCode != 0 || mainAt == 0 {
					return fmt.Errorf("%s on %s: exit %d, main seen %v: %v", v.name, m, res.ExitCode, mainAt != 0, res.Messages)
				}
				pre := firstAt - res.FirstLine
				ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
				l := fmt.Sprintf("BenchmarkBoot/%s/%s\t1\t%d ns/op\t%d image-bytes\t%.1f ms-to-first-line\t%.1f ms-to-main\t%.1f ms-to-exit\t%.2f kernel-boot-ms",
					m, v.name, res.Elapsed.Nanoseconds(), st.Size(), ms(res.FirstLine), ms(mainAt-pre), ms(res.Elapsed), kboot/1000)
				fmt.Fprintln(f, l)
				fmt.Println(l)
			}
		}
	}
	return nil
}
