package image

import (
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "qemu", "image", "build.go")); err != nil {
		t.Fatalf("root %s: %v", root, err)
	}
}

// writeModule creates a module with one main package in a temp dir.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func symbolNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		t.Fatalf("%s: %v %v", path, f.Machine, f.Type)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, s := range syms {
		m[s.Name] = true
	}
	return m
}

// A package of another module gets a yolk package linked in through the
// overlay and a temporary go.work, without any file of its own changing.
func TestBuildExternalModule(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":           "module example.com/ext\n\ngo 1.26\n",
		"cmd/app/main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"ext\") }\n",
		"cmd/app/other.go": "package main\n\nfunc helper() int { return 1 }\n",
	})
	pkg := filepath.Join(dir, "cmd", "app")
	out := filepath.Join(t.TempDir(), "app.elf")
	res, err := Build(t.Context(), pkg, Options{Output: out, LinkPackage: "yolk/qemu/report", NoPatch: true, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if res.ModRoot != dir || res.PkgDir != pkg || res.Output != out || res.Patch != nil {
		t.Errorf("result %+v", res)
	}
	syms := symbolNames(t, out)
	if !syms["main.main"] {
		t.Error("main.main missing")
	}
	linked := false
	for s := range syms {
		linked = linked || strings.HasPrefix(s, "yolk/qemu/report.")
	}
	if !linked {
		t.Error("no yolk/qemu/report symbol: the overlay import did not take effect")
	}
	entries, _ := os.ReadDir(pkg)
	if len(entries) != 2 {
		t.Errorf("package directory changed: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
		t.Error("go.work written into the module")
	}
}

// Build then Patch, with the entry symbol given: the result is a PVH image.
func TestBuildAndPatch(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod":  "module example.com/p\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() {}\n",
	})
	out := filepath.Join(t.TempDir(), "p.elf")
	res, err := Build(t.Context(), dir, Options{Output: out, LinkPackage: "-", Entry: []string{"main.main"}, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	if res.Patch == nil || res.Patch.Symbol != "main.main" || qemuReadsEntry(t, data) != res.Patch.Entry {
		t.Fatalf("patch %+v", res.Patch)
	}
	// The default entry symbol is the kernel's; a program without the
	// kernel is refused with a message that says so.
	_, err = Build(t.Context(), dir, Options{Output: out, LinkPackage: "-", Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "yolk/boot.pvhEntry") || !strings.Contains(err.Error(), "kernel linked in") {
		t.Errorf("err = %v", err)
	}
}

func TestBuildRefusals(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "qemu", "report")
	if _, err := Build(t.Context(), lib, Options{Output: filepath.Join(t.TempDir(), "x"), Stderr: io.Discard}); err == nil ||
		!strings.Contains(err.Error(), "not a main package") {
		t.Errorf("library package: %v", err)
	}
	if _, err := Build(t.Context(), "./no/such/dir", Options{Stderr: io.Discard}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := Build(t.Context(), "example.com/not/yolk", Options{Stderr: io.Discard}); err == nil {
		t.Error("foreign import path accepted")
	}
	dir := writeModule(t, map[string]string{
		"go.mod":    "module example.com/c\n\ngo 1.26\n",
		"main.go":   "package main\n\nfunc main() {}\n",
		overlayFile: "package main\n",
	})
	if _, err := Build(t.Context(), dir, Options{Output: filepath.Join(t.TempDir(), "x"), Stderr: io.Discard}); err == nil ||
		!strings.Contains(err.Error(), "already exists") {
		t.Errorf("overlay collision: %v", err)
	}
}

// An arm64 build is linked above QEMU virt's device tree (first PT_LOAD at
// 0x40200000) and differs from the unpatched image only in e_entry, which
// names the kernel's arm64 entry.
func TestBuildArm64(t *testing.T) {
	dir := t.TempDir()
	plain, patched := filepath.Join(dir, "plain.elf"), filepath.Join(dir, "app.elf")
	for _, c := range []struct {
		out     string
		noPatch bool
	}{{plain, true}, {patched, false}} {
		if _, err := Build(t.Context(), "yolk/examples/hello", Options{Output: c.out, Arch: "arm64", NoPatch: c.noPatch, Stderr: io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := elf.Open(patched)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("machine %v", f.Machine)
	}
	lowest := uint64(1<<64 - 1)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lowest = min(lowest, p.Paddr)
		}
	}
	if lowest != 0x40200000 {
		t.Errorf("lowest PT_LOAD at %#x, want 0x40200000 (above the device tree, 2 MiB aligned)", lowest)
	}
	_, want, err := findEntrySymbol(f, []string{ArmEntrySymbol})
	if err != nil {
		t.Fatal(err)
	}
	if f.Entry != want {
		t.Errorf("e_entry %#x, want %s at %#x", f.Entry, ArmEntrySymbol, want)
	}
	a, _ := os.ReadFile(plain)
	b, _ := os.ReadFile(patched)
	if len(a) != len(b) {
		t.Fatalf("sizes %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] && (i < 24 || i >= 32) {
			t.Fatalf("byte %#x differs outside e_entry", i)
		}
	}
	if _, err := Build(t.Context(), "yolk/examples/hello", Options{Output: patched, Arch: "riscv64"}); err == nil {
		t.Error("riscv64 accepted")
	}
}
