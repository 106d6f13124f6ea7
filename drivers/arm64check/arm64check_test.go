package arm64check

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// drivers are the packages checked, and the program's main: the
// disassembly attributes a driver function inlined into main to main (the
// program itself does nothing that allocates).
var drivers = regexp.MustCompile(`^(yolk/drivers/(fdt|gic|gtimer|mmio|pl011|psci|semihosting|virtio)|main)\.`)

// forbidden are runtime entry points that allocate, run write barriers or
// enter the scheduler (kernel/kcontext_test.go's list). The compiler's
// check panics (bounds, unsafe.String) and morestack are accepted for the
// reason given there: in kernel context they fault loudly instead.
var forbidden = regexp.MustCompile(`runtime\.(newobject|mallocgc|makeslice|makeslicecopy|growslice|makemap|makemap_small|makechan|convT|convTstring|convTslice|convT64|convT32|convT16|gcWriteBarrier|wbZero|wbMove|typedmemmove|typedmemclr|typedslicecopy|concatstring|slicebytetostring|stringtoslicebyte|rawstring|newproc|gopark|goready|chansend|chanrecv|mapassign|deferproc|gopanic|panicwrap)`)

func TestArm64DriversNoAllocNoWriteBarrier(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and disassembles an arm64 program")
	}
	bin := filepath.Join(t.TempDir(), "prog")
	build := exec.Command("go", "build", "-o", bin, "yolk/drivers/arm64check/testdata/prog")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dis, err := exec.Command("go", "tool", "objdump", bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var fn string
	funcs := map[string]bool{}
	calls := 0
	sc := bufio.NewScanner(bytes.NewReader(dis))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "TEXT "); ok {
			fn, _, _ = strings.Cut(rest, "(SB)")
			if drivers.MatchString(fn) && !strings.HasPrefix(fn, "main.") {
				funcs[fn[:strings.Index(fn, ".")]] = true
			}
			continue
		}
		if !drivers.MatchString(fn) {
			continue
		}
		i := strings.Index(line, "CALL ")
		if i < 0 {
			continue
		}
		calls++
		if target := line[i+5:]; forbidden.MatchString(target) {
			t.Errorf("%s calls %s (in main: a driver function inlined there)", fn, strings.TrimSpace(target))
		}
	}
	if len(funcs) != 8 || calls < 50 {
		t.Fatalf("found functions of %d packages (%v) and %d calls: disassembly format changed?", len(funcs), funcs, calls)
	}
	t.Logf("checked %d packages, %d calls", len(funcs), calls)
}
