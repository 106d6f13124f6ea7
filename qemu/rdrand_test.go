package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"yolk/qemu/image"
)

// TestWeakRandomWarning boots the probe image on a CPU without RDRAND and
// checks that the kernel says, once, that getrandom falls back to a
// non-cryptographic generator, and that it says nothing when RDRAND is there.
// It needs the yolk kernel.
func TestWeakRandomWarning(t *testing.T) {
	needQEMU(t)
	img := filepath.Join(t.TempDir(), "probe.elf")
	if _, err := image.Build(t.Context(), ProbePackage, image.Options{Output: img}); err != nil {
		t.Fatal(err)
	}
	choice, err := ChooseAccel(t.Context(), AccelOptions{Mode: os.Getenv("YOLK_ACCEL"), ProbeImage: img})
	if err != nil {
		t.Fatal(err)
	}
	cpu := "max"
	if choice.Accel == "kvm" {
		cpu = "host"
	}
	const warning = "yolk: warning: no working RDRAND: getrandom and AT_RANDOM fall back"
	for _, c := range []struct {
		cpu  string
		want int
	}{{cpu + ",-rdrand", 1}, {cpu, 0}} {
		var out strings.Builder
		res, err := Run(t.Context(), Config{Image: img, Accel: choice.Accel, Timeout: time.Minute,
			Extra: []string{"-cpu", c.cpu}, OnLine: func(l string) { out.WriteString(l + "\n") }})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), warning); res.ExitCode != 0 || n != c.want {
			t.Errorf("-cpu %s: exit %d, %d warning lines, want %d:\n%s", c.cpu, res.ExitCode, n, c.want, out.String())
		}
	}
}
