package kernel_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The disassembling tests (kcontext_test.go, bssfault_test.go) share one
// build and one disassembly per architecture and program within a test
// run: a build of the self-test image takes about 15 s, its disassembly
// about 7 s and 1.3 million lines.

var (
	imageMu    sync.Mutex
	imageDir   string
	imageCache = map[string]*builtImage{}
)

type builtImage struct {
	once sync.Once
	path string
	dis  []byte // go tool objdump's output for the whole image
	err  string
}

// TestMain removes the shared images' directory after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if imageDir != "" {
		os.RemoveAll(imageDir)
	}
	os.Exit(code)
}

// disassembledImage builds pkg for linux/arch (once per test run) and
// returns the image's path and its disassembly.
func disassembledImage(t *testing.T, arch, pkg string) (string, []byte) {
	t.Helper()
	imageMu.Lock()
	if imageDir == "" {
		d, err := os.MkdirTemp("", "yolk-kernel-test-")
		if err != nil {
			imageMu.Unlock()
			t.Fatal(err)
		}
		imageDir = d
	}
	key := arch + " " + pkg
	b := imageCache[key]
	if b == nil {
		b = &builtImage{path: filepath.Join(imageDir, arch+"-"+filepath.Base(pkg)+".elf")}
		imageCache[key] = b
	}
	imageMu.Unlock()
	b.once.Do(func() {
		build := exec.Command("go", "build", "-o", b.path, pkg)
		build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.err = "build: " + err.Error() + "\n" + string(out)
			return
		}
		dis, err := exec.Command("go", "tool", "objdump", b.path).Output()
		if err != nil {
			b.err = "objdump: " + err.Error()
			return
		}
		b.dis = dis
	})
	if b.err != "" {
		t.Fatal(b.err)
	}
	return b.path, b.dis
}
