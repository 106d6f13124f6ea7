package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goListIn returns go list -f format for pkg, run in dir.
func goListIn(t *testing.T, dir, format, pkg string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", format, pkg)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.TrimSpace(string(out))
}

// buildTestLinks builds p's test binary with yolk/qemu/report linked in
// and checks that the overlay took effect and that p's directory is as it
// was.
func buildTestLinks(t *testing.T, p TestPackage) {
	t.Helper()
	before, _ := os.ReadDir(p.Dir)
	out := filepath.Join(t.TempDir(), p.Name+".test")
	if _, err := BuildTest(t.Context(), p, Options{Output: out, LinkPackage: "yolk/qemu/report", NoPatch: true, Stderr: os.Stderr}); err != nil {
		t.Fatal(err)
	}
	syms := symbolNames(t, out)
	linked, tested := false, false
	for s := range syms {
		linked = linked || strings.HasPrefix(s, "yolk/qemu/report.")
		tested = tested || strings.HasPrefix(s, p.ImportPath+".")
	}
	if !linked || !tested {
		t.Errorf("report linked %v, %s linked %v", linked, p.ImportPath, tested)
	}
	if after, _ := os.ReadDir(p.Dir); len(after) != len(before) {
		t.Errorf("package directory changed: %d entries, then %d", len(before), len(after))
	}
}

// A dependency's package is tested in place, in the module cache, from
// the main module that requires it (go test example.com/dep/pkg): the
// go command refuses an -overlay that adds a file beneath GOMODCACHE, so
// BuildTest builds it through an alias of its module directory.
func TestBuildTestModuleCache(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "golang.org/x/sync/errgroup"
	f := strings.Fields(goListIn(t, root, "{{.Dir}} {{.Module.Path}} {{.Module.Dir}}", pkg))
	buildTestLinks(t, TestPackage{ImportPath: pkg, Dir: f[0], Name: "errgroup", Module: f[1], ModuleDir: f[2], Main: root})
}

// A toolchain the go command fetched itself (GOTOOLCHAIN=go1.N.M) lives in
// the module cache, and so do its standard packages: BuildTest builds them
// through an alias of its GOROOT. The test puts this GOROOT (a link) in a
// module cache of links to the real one's modules.
func TestBuildTestToolchainInModuleCache(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Fields(string(out))
	realCache, goroot := env[0], env[1]
	fake := t.TempDir()
	ents, err := os.ReadDir(realCache)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(realCache, e.Name()), filepath.Join(fake, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	fakeRoot := filepath.Join(fake, "toolchain-go")
	if err := os.Symlink(goroot, fakeRoot); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMODCACHE", fake)
	t.Setenv("GOROOT", fakeRoot)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	if alias, err := aliasDir(fakeRoot); err == nil {
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(alias)) })
	}
	buildTestLinks(t, TestPackage{ImportPath: "strings", Dir: filepath.Join(fakeRoot, "src", "strings"), Name: "strings", Standard: true})
}
