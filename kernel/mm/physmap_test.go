package mm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAsmPhysBase ties the physical map's base that kernel/entry_arm64.s
// uses as a literal (the access-flag fault's table walk, which runs before
// any Go code; annotated "// mm's physBase") to physBase.
func TestAsmPhysBase(t *testing.T) {
	src, err := os.ReadFile("../entry_arm64.s")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\$(0x[0-9a-fA-F]+),.*//\s*mm's physBase\s*$`)
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if v, err := strconv.ParseUint(m[1], 0, 64); err != nil || v != physBase {
			t.Errorf("entry_arm64.s:%d: physBase is %s, want %#x", i+1, m[1], uint64(physBase))
		}
	}
	if n == 0 {
		t.Error(`entry_arm64.s: no instruction annotated "// mm's physBase"`)
	}
}
