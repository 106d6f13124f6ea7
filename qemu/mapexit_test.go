package qemu

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"yolk/qemu/image"
)

// TestShareMapExit: writes through MAP_SHARED mappings of a file on a
// share reach the host file when the program ends without msync or
// munmap — by exit_group and by a signal's default action — as on Linux,
// where the page cache outlives the process (the fixture runs on the host
// first: the reference), on amd64 (microvm) and arm64 (virt). Only the file's bytes: one written past its end
// in the last page does not grow it. A guest self-test cannot see its own
// end, so the host looks at the file after QEMU exits.
func TestShareMapExit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const pkg = "yolk/qemu/testdata/mapexit"
	dir := t.TempDir()
	host := fixtureHost(t, pkg, dir)
	machines := map[string]string{"amd64": "microvm", "arm64": "virt"}
	imgs := map[string]string{}
	for _, arch := range image.Arches {
		imgs[arch] = fixtureImage(t, pkg, dir, arch)
	}
	const page, size = 4096, 3*4096 + 100
	want := bytes.Repeat([]byte{'h'}, size)
	want[0], want[page-1], want[page+7], want[2*page], want[size-1] = 'A', 'B', 'C', 'D', 'E'
	file := func(t *testing.T) string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "f"), bytes.Repeat([]byte{'h'}, size), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	check := func(t *testing.T, where, d string) {
		b, err := os.ReadFile(filepath.Join(d, "f"))
		if err != nil || !bytes.Equal(b, want) {
			var diff []int
			for i := range min(len(b), len(want)) {
				if b[i] != want[i] {
					diff = append(diff, i)
				}
			}
			t.Errorf("%s: the file after the end: %d bytes (want %d), differing at %v, %v", where, len(b), size, diff, err)
		}
	}
	for _, c := range []struct {
		how    string
		code   int            // yolk's exit status
		signal syscall.Signal // the host's death, 0 for an exit
	}{
		{"exit", 3, 0},
		{"signal", 128 + int(syscall.SIGTERM), syscall.SIGTERM},
	} {
		t.Run(c.how, func(t *testing.T) {
			d := file(t)
			out, err := exec.Command(host, filepath.Join(d, "f"), c.how).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || c.signal == 0 && ee.ExitCode() != c.code || c.signal != 0 && ee.Sys().(syscall.WaitStatus).Signal() != c.signal {
				t.Fatalf("on the host: %v, want status %d or death by %v\n%s", err, c.code, c.signal, out)
			}
			check(t, "on the host", d)

			for _, arch := range image.Arches {
				d = file(t)
				var serial bytes.Buffer
				res, err := Run(t.Context(), Config{Image: imgs[arch], Args: []string{"/yolk/share/f", c.how},
					Machine: machines[arch], Timeout: 2 * time.Minute, Shares: []Share{{HostDir: d, GuestPath: "/yolk/share"}}, Stdout: &serial, Stderr: &serial})
				if err != nil {
					t.Fatal(err)
				}
				if res.ExitCode != c.code || !strings.Contains(serial.String(), "mapexit: written through the mappings") {
					t.Errorf("%s: exit status %d, want %d:\n%s", arch, res.ExitCode, c.code, serial.String())
				}
				check(t, "on yolk "+arch, d)
			}
		})
	}
}
