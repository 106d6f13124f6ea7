package qemu

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestChooseAccelForcedAndBad(t *testing.T) {
	for _, m := range []string{"kvm", "tcg"} {
		c, err := ChooseAccel(t.Context(), AccelOptions{Mode: m})
		if err != nil || c.Accel != m || c.String() != "yolk: accel "+m+" (forced)" {
			t.Errorf("%s: %v %v", m, c, err)
		}
	}
	if _, err := ChooseAccel(t.Context(), AccelOptions{Mode: "xen"}); err == nil {
		t.Error("mode xen accepted")
	}
}

func TestChooseAccelNoDevice(t *testing.T) {
	needQEMU(t)
	c, err := ChooseAccel(t.Context(), AccelOptions{KVMDevice: "/nonexistent/kvm", CacheDir: t.TempDir()})
	if err != nil || c.String() != "yolk: accel tcg (no usable /nonexistent/kvm: no such file or directory)" {
		t.Errorf("%v %v", c, err)
	}
}

// The probe's verdict logic, with the probe booted under TCG so that the
// outcome does not depend on this host's KVM: a probe that reaches
// "yolk: exit 0" selects KVM and is cached; any other outcome selects TCG.
func TestChooseAccelProbe(t *testing.T) {
	needQEMU(t)
	cases := []struct {
		entry, want string
	}{
		{"stubEcho", "yolk: accel kvm (kvm probe passed)"},
		{"stubExit3", "yolk: accel tcg (kvm probe failed: exit 3)"},
		{"stubHang", "yolk: accel tcg (kvm probe failed: timeout)"},
		{"stubTriple", "yolk: accel tcg (kvm probe failed: guest reset without an exit report (triple fault?))"},
	}
	for _, c := range cases {
		t.Run(c.entry, func(t *testing.T) {
			cache := t.TempDir()
			o := AccelOptions{
				KVMDevice: os.DevNull, ProbeImage: stubImage(t, c.entry), CacheDir: cache,
				ProbeTimeout: time.Second, probeAccel: "tcg",
			}
			got, err := ChooseAccel(t.Context(), o)
			if err != nil || got.String() != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
			files, _ := filepath.Glob(filepath.Join(cache, "kvm-probe-*"))
			timedOut := c.entry == "stubHang"
			if want := map[bool]int{false: 1, true: 2}[timedOut]; len(files) != want {
				t.Fatalf("cache files %q, want %d", files, want)
			}
			// A timeout holds for the host's other machines; any other
			// verdict is the machine's own.
			other := o
			other.Machine = "pc"
			if got4, _ := ChooseAccel(t.Context(), other); strings.HasSuffix(got4.Reason, "; cached") != timedOut {
				t.Fatalf("another machine after %q: %v", got, got4)
			}
			// A changed probe image (one byte appended) is probed afresh...
			img := mustRead(t, o.ProbeImage)
			os.WriteFile(o.ProbeImage, append(img, 0), 0o644)
			got2, _ := ChooseAccel(t.Context(), o)
			if got2.Accel != got.Accel || strings.HasSuffix(got2.Reason, "; cached") {
				t.Fatalf("a changed probe image gave %v", got2)
			}
			// ...and the original image's verdict comes from the cache.
			os.WriteFile(o.ProbeImage, img, 0o644)
			got3, _ := ChooseAccel(t.Context(), o)
			if got3.Accel != got.Accel || got3.Reason != got.Reason+"; cached" {
				t.Fatalf("cached choice %q, want %q", got3, got.String()+"; cached")
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A guest of the other architecture runs under TCG, without a probe and
// without looking for QEMU (KVM runs only the host's architecture).
func TestChooseAccelForeignArch(t *testing.T) {
	foreign := "arm64"
	if runtime.GOARCH == "arm64" {
		foreign = "amd64"
	}
	t.Setenv("PATH", "/nonexistent")
	t.Setenv("YOLK_QEMU", "")
	t.Setenv("YOLK_QEMU_ARM64", "")
	c, err := ChooseAccel(t.Context(), AccelOptions{Arch: foreign, KVMDevice: os.DevNull, ProbeImage: "/nonexistent/probe.elf", CacheDir: t.TempDir()})
	want := "yolk: accel tcg (an " + foreign + " guest on an " + runtime.GOARCH + " host: no KVM)"
	if err != nil || c.String() != want {
		t.Errorf("got %q, %v; want %q", c, err, want)
	}
	if _, err := ChooseAccel(t.Context(), AccelOptions{Arch: "riscv64"}); err == nil {
		t.Error("riscv64 accepted")
	}
}
