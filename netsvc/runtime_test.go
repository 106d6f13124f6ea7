package netsvc

import (
	"debug/dwarf"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestRuntimeOffsets checks the two places where gVisor's pkg/sync reads
// the Go runtime's private structures at fixed offsets against this
// toolchain's layout, from the DWARF of this package's test binary
// (which links them): runtime.sched.nmspinning, which its amd64 assembly reaches at
// NMSPINNING_OFFSET, and internal/abi.MapType.Hasher. A toolchain
// upgrade that moves either breaks the netstack silently; this test says
// so instead.
func TestRuntimeOffsets(t *testing.T) {
	// go test runs its binaries without DWARF: build one that has it.
	exe := filepath.Join(t.TempDir(), "netsvc.test")
	if out, err := exec.Command("go", "test", "-c", "-o", exe, "yolk/netsvc").CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatalf("DWARF: %v", err)
	}
	if runtime.GOARCH == "amd64" {
		want := gvisorDefine(t, "pkg/sync/runtime_spinning_asm_impl_amd64.s", "NMSPINNING_OFFSET")
		if got := fieldOffset(t, d, "runtime.schedt", "nmspinning"); got != want {
			t.Errorf("runtime.schedt.nmspinning is at %d; gVisor's pkg/sync reaches it at %d", got, want)
		}
	}
	if got := fieldOffset(t, d, "internal/abi.MapType", "Hasher"); got != 72 {
		t.Errorf("internal/abi.MapType.Hasher is at %d, not the 72 gVisor's maptype copy has (docs/net.md)", got)
	}
}

// fieldOffset is the offset of struct typ's member field in d.
func fieldOffset(t *testing.T, d *dwarf.Data, typ, field string) int64 {
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit {
			continue
		}
		if e.Tag != dwarf.TagStructType || e.Val(dwarf.AttrName) != typ {
			r.SkipChildren()
			continue
		}
		for {
			m, err := r.Next()
			if err != nil || m == nil || m.Tag == 0 {
				break
			}
			if m.Tag == dwarf.TagMember && m.Val(dwarf.AttrName) == field {
				if off, ok := m.Val(dwarf.AttrDataMemberLoc).(int64); ok {
					return off
				}
			}
		}
	}
	t.Fatalf("no member %s.%s in the DWARF", typ, field)
	return -1
}

// gvisorDefine reads a #define from a file of the gVisor module in use.
func gvisorDefine(t *testing.T, file, name string) int64 {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "gvisor.dev/gvisor").Output()
	if err != nil {
		t.Skipf("go list -m gvisor.dev/gvisor: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), file))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define\s+` + name + `\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no #define %s in %s", name, file)
	}
	v, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return v
}
