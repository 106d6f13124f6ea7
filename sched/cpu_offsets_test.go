package sched

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// asmFiles use CPU and Context fields at literal offsets.
var asmFiles = []string{"../kernel/entry_amd64.s", "../kernel/trampoline_amd64.s", "cpu_amd64.s", "../kernel/entry_arm64.s"}

var (
	asmAnnotRE = regexp.MustCompile(`//\s*(CPU|Context)\.([\w.]+)\s*$`)
	asmNumRE   = regexp.MustCompile(`\$(-?\d+)|(-?\d+)\(`) // $imm or disp(reg)
)

// fieldOffset is the offset of the field called name in v's struct type;
// name may be a path through nested structs ("TrapG.StackLo").
func fieldOffset(v any, name string) (uintptr, bool) {
	t, off := reflect.TypeOf(v), uintptr(0)
	for _, part := range strings.Split(name, ".") {
		f, ok := t.FieldByName(part)
		if !ok {
			return 0, false
		}
		t, off = f.Type, off+f.Offset
	}
	return off, true
}

// TestAsmOffsets ties the literal offsets in the entry and switch assembly
// to the Go structs: every instruction annotated "// CPU.Field" or
// "// Context.Field" must use exactly one offset ($imm or disp(reg)) and it
// must be that field's offset; every GS-relative operand must be
// annotated. Reordering or resizing a field makes this fail. It also checks
// the layout the Go runtime imposes: the g slot just below each TLS block
// (the runtime reads g at -8(FS)).
func TestAsmOffsets(t *testing.T) {
	checked := map[string]int{}
	for _, file := range asmFiles {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			where := file + ":" + strconv.Itoa(i+1)
			code, _, _ := strings.Cut(line, "//")
			m := asmAnnotRE.FindStringSubmatch(line)
			if m == nil {
				if strings.Contains(code, "(GS)") {
					t.Errorf("%s: GS-relative operand without a // CPU.Field annotation: %s", where, strings.TrimSpace(line))
				}
				continue
			}
			var off uintptr
			var ok bool
			if m[1] == "CPU" {
				off, ok = fieldOffset(CPU{}, m[2])
			} else {
				off, ok = fieldOffset(Context{}, m[2])
			}
			if !ok {
				t.Errorf("%s: %s has no field %s", where, m[1], m[2])
				continue
			}
			nums := asmNumRE.FindAllStringSubmatch(code, -1)
			if len(nums) != 1 {
				t.Errorf("%s: want exactly one offset in %q, found %d", where, strings.TrimSpace(code), len(nums))
				continue
			}
			n, _ := strconv.Atoi(nums[0][1] + nums[0][2])
			if uintptr(n) != off {
				t.Errorf("%s: %s uses offset %d for %s.%s, which is at %d", where, strings.TrimSpace(code), n, m[1], m[2], off)
			}
			checked[m[1]+"."+m[2]]++
		}
	}
	// The fields the assembly must use at least once.
	for _, f := range []string{"CPU.Self", "CPU.UserSP", "CPU.KStackTop", "CPU.GSlot", "CPU.TLS", "CPU.TrapTLS", "CPU.TrapG.StackLo", "CPU.TrapG.StackHi", "CPU.TrapG.Guard0", "CPU.TrapG.Guard1", "Context.SP", "Context.BP"} {
		if checked[f] == 0 {
			t.Errorf("no annotated use of %s in %q", f, asmFiles)
		}
	}
	for _, p := range [][2]string{{"GSlot", "TLS"}, {"TrapGSlot", "TrapTLS"}} {
		g, _ := fieldOffset(CPU{}, p[0])
		tls, _ := fieldOffset(CPU{}, p[1])
		if g+8 != tls {
			t.Errorf("CPU.%s at %d, want 8 below CPU.%s at %d (g is read at -8(FS))", p[0], g, p[1], tls)
		}
	}
	if off, _ := fieldOffset(CPU{}, "Self"); off != 0 {
		t.Errorf("CPU.Self at %d, want 0", off)
	}
	t.Logf("checked %v", checked)
}
