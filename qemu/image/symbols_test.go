package image

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// addr2line asks the toolchain's own addr2line, an independent reader of
// the same tables, about pcs.
func addr2line(t *testing.T, path string, pcs []uint64) []string {
	t.Helper()
	var in bytes.Buffer
	for _, pc := range pcs {
		fmt.Fprintf(&in, "%#x\n", pc)
	}
	cmd := exec.Command("go", "tool", "addr2line", path)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool addr2line: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2*len(pcs) {
		t.Fatalf("addr2line printed %d lines for %d pcs", len(lines), len(pcs))
	}
	var res []string
	for i := range pcs {
		res = append(res, lines[2*i]+" "+lines[2*i+1])
	}
	return res
}

func TestSymbolizerAgainstAddr2line(t *testing.T) {
	path := testProgram(t, "")
	s, err := OpenSymbolizer(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mainPC := symbolValue(t, f, "main.main")
	addPC := symbolValue(t, f, "main.add")
	syms, _ := f.Symbols()
	// A spread of pcs over the whole text: every 97th function symbol.
	pcs := []uint64{mainPC, mainPC + 9, addPC, addPC + 3}
	for i, sym := range syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && i%97 == 0 && sym.Size > 4 {
			pcs = append(pcs, sym.Value, sym.Value+sym.Size/2)
		}
	}
	want := addr2line(t, path, pcs)
	for i, pc := range pcs {
		fr, ok := s.Lookup(pc, true)
		if !ok {
			t.Errorf("%#x: not found (addr2line: %s)", pc, want[i])
			continue
		}
		got := fmt.Sprintf("%s %s:%d", fr.Func, fr.File, fr.Line)
		if got != want[i] {
			t.Errorf("%#x: got %q, addr2line %q", pc, got, want[i])
		}
	}

	fr, ok := s.Lookup(mainPC+9, true)
	if !ok || fr.Func != "main.main" || fr.Offset != 9 || !strings.HasSuffix(fr.File, "/main.go") {
		t.Fatalf("main.main+9 = %+v", fr)
	}
	if got, want := fr.String(), fmt.Sprintf("main.main+0x9 %s:%d", fr.File, fr.Line); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestSymbolizerReturnAddress(t *testing.T) {
	path := testProgram(t, "")
	s, err := OpenSymbolizer(path)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := elf.Open(path)
	defer f.Close()
	addPC := symbolValue(t, f, "main.add")
	// As the innermost frame, the entry of main.add is main.add+0.
	fr, ok := s.Lookup(addPC, true)
	if !ok || fr.Func != "main.add" || fr.Offset != 0 {
		t.Fatalf("first frame at main.add entry = %+v", fr)
	}
	// As a return address, the same pc means "returned to the end of the
	// function before it": the lookup uses pc-1, the offset stays pc-entry
	// of that function.
	fr2, ok := s.Lookup(addPC, false)
	if !ok || fr2.Func == "main.add" {
		t.Fatalf("return address at main.add entry attributed to %+v", fr2)
	}
	want := addr2line(t, path, []uint64{addPC - 1})[0]
	if got := fmt.Sprintf("%s %s:%d", fr2.Func, fr2.File, fr2.Line); got != want {
		t.Errorf("pc-1 lookup: got %q, addr2line %q", got, want)
	}
	if fr2.PC != addPC || fr2.Offset == 0 {
		t.Errorf("return-address frame = %+v", fr2)
	}
	if _, ok := s.Lookup(0x10, true); ok {
		t.Errorf("pc 0x10 symbolized")
	}
}
