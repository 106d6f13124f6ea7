package gdbprof

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

//go:noinline
func knownLeaf(x int) int { return x*3 + 1 }

//go:noinline
func knownCaller() []uintptr {
	pcs := make([]uintptr, 4)
	n := runtime.Callers(1, pcs) // pcs[0]: the return address in knownCaller
	return pcs[:n]
}

// The test binary itself (no DWARF: go test strips it): the functions at
// the entries of known functions and at a return address are named right,
// and FuncEntry finds the entry.
func TestSymbolizeSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sym, err := OpenSymbolizer(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []any{knownLeaf, knownCaller, TestSymbolizeSelf, strconv.Itoa} {
		f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
		entry := uint64(f.Entry())
		frames := sym.Frames(entry + 1)
		if len(frames) == 0 || frames[len(frames)-1].Func != f.Name() {
			t.Errorf("Frames(%#x) = %v, want %s", entry+1, frames, f.Name())
			continue
		}
		if got, ok := sym.FuncEntry(entry + 1); !ok || got != entry {
			t.Errorf("FuncEntry(%#x) = %#x, %v; want %#x", entry+1, got, ok, entry)
		}
		if fr := frames[len(frames)-1]; !strings.HasSuffix(fr.File, ".go") || fr.Line == 0 {
			t.Errorf("Frames(%#x): no position: %+v", entry+1, fr)
		}
	}
	ret := uint64(knownCaller()[0])
	frames := sym.Frames(ret - 1)
	want := runtime.FuncForPC(uintptr(ret - 1))
	wantFile, wantLine := want.FileLine(uintptr(ret - 1))
	if len(frames) != 1 || frames[0].Func != "yolk/qemu/gdbprof.knownCaller" || frames[0].File != wantFile || frames[0].Line != wantLine {
		t.Errorf("Frames(%#x) = %+v, want knownCaller at %s:%d", ret-1, frames, wantFile, wantLine)
	}
	if _, ok := sym.FuncEntry(0x10); ok {
		t.Error("FuncEntry(0x10) found a function")
	}
	if fr := sym.Frames(0x10); fr != nil {
		t.Errorf("Frames(0x10) = %v, want none", fr)
	}
}

// inlineProg records its own stack with runtime.Callers, from a call
// inlined twice over, and prints one line per logical frame, innermost
// first: "pc entry function file line". runtime.Callers gives each
// inlined frame a PC of its own; those of one physical frame share the
// entry of the function they are inlined into, and the first of them is
// the physical frame's return address.
const inlineProg = `package main

import (
	"fmt"
	"runtime"
)

//go:noinline
func leaf() []uintptr {
	pcs := make([]uintptr, 16)
	return pcs[:runtime.Callers(1, pcs)]
}

func inner() []uintptr { return leaf() }

func middle() []uintptr { return inner() }

//go:noinline
func outer() []uintptr { return middle() }

func main() {
	for _, pc := range outer() {
		f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
		fmt.Printf("%x %x %s %s %d\n", pc, runtime.FuncForPC(pc-1).Entry(), f.Function, f.File, f.Line)
	}
}
`

// A program built with go build (DWARF included): the frames at its
// return addresses, inlined ones included, are those the Go runtime
// reports, and a profile of them reads back the same.
func TestSymbolizeInlined(t *testing.T) {
	exe := buildProg(t, inlineProg)
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64][]Frame{} // by physical return address
	var pcs []uint64             // the physical return addresses
	lastEntry := uint64(0)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		pc, _ := strconv.ParseUint(f[0], 16, 64)
		entry, _ := strconv.ParseUint(f[1], 16, 64)
		line, _ := strconv.Atoi(f[4])
		if entry != lastEntry {
			pcs = append(pcs, pc)
			lastEntry = entry
		}
		ret := pcs[len(pcs)-1]
		want[ret] = append(want[ret], Frame{Func: f[2], File: f[3], Line: line})
	}
	sym, err := OpenSymbolizer(exe)
	if err != nil {
		t.Fatal(err)
	}
	if !sym.HasInlines() {
		t.Fatal("no DWARF in a go build binary")
	}
	sawInline := false
	for _, pc := range pcs {
		if strings.HasPrefix(want[pc][0].Func, "runtime.") {
			continue // main's callers: the runtime's own
		}
		var got []Frame
		for _, fr := range sym.Frames(pc - 1) {
			got = append(got, Frame{Func: fr.Func, File: fr.File, Line: fr.Line})
		}
		if !reflect.DeepEqual(got, want[pc]) {
			t.Errorf("Frames(%#x - 1):\n got %+v\nwant %+v", pc, got, want[pc])
		}
		sawInline = sawInline || len(want[pc]) > 1
	}
	if !sawInline {
		t.Errorf("no inlined call among the program's frames:\n%s", out)
	}

	// As a profile: one stack of the return addresses (the first as the
	// PC), read back through pprof's parser.
	stack := pcs
	p := NewProfile([][]uint64{stack, stack}, sym, 5*time.Millisecond)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Sample) != 1 || back.Sample[0].Value[0] != 2 || back.Sample[0].Value[1] != 10e6 {
		t.Fatalf("samples %v, want one with 2 samples of 10ms", back.Sample)
	}
	var names []string
	for i, loc := range back.Sample[0].Location {
		wantAddr := stack[i]
		if i > 0 {
			wantAddr--
		}
		if loc.Address != wantAddr {
			t.Errorf("location %d: address %#x, want %#x", i, loc.Address, wantAddr)
		}
		for _, l := range loc.Line {
			names = append(names, l.Function.Name)
		}
	}
	for _, fn := range []string{"main.leaf", "main.inner", "main.middle", "main.outer", "main.main"} {
		if !slices.Contains(names, fn) {
			t.Errorf("profile lacks %s: %v", fn, names)
		}
	}
}

// go tool pprof -top reads the profile with no binary at hand.
func TestPprofTop(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	leaf := uint64(runtime.FuncForPC(reflect.ValueOf(knownLeaf).Pointer()).Entry())
	ret := uint64(knownCaller()[0])
	var stacks [][]uint64
	for range 3 {
		stacks = append(stacks, []uint64{leaf + 1, ret})
	}
	stacks = append(stacks, []uint64{ret - 1})
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteProfile(f, exe, stacks, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command(goTool, "tool", "pprof", "-top", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+dir) // nowhere to find binaries
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	for _, want := range []string{"gdbprof.knownLeaf", "gdbprof.knownCaller", "100% of 20ms total"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pprof -top lacks %q:\n%s", want, out)
		}
	}
	// knownLeaf: flat 3 of 4 samples.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(l, "gdbprof.knownLeaf") && !strings.Contains(l, "15ms 75.00%") {
			t.Errorf("knownLeaf's line %q, want flat 15ms 75.00%%", l)
		}
	}
}

// buildProg builds the one-file program src with go build (DWARF kept).
func buildProg(t *testing.T, src string) string {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/prog\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "prog")
	cmd := exec.Command(goTool, "build", "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// An ABI wrapper (same name, "<autogenerated>") between an assembly
// caller and the Go function is left out of the stack, as Go's own
// tracebacks do; another autogenerated function is not.
func TestABIWrapper(t *testing.T) {
	fn := func(name, file string) *profile.Location {
		return &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: name, Filename: file}}}}
	}
	callee := fn("yolk/kernel.syscall", "/src/kernel/syscall.go")
	if !abiWrapper(fn("yolk/kernel.syscall", "<autogenerated>"), []*profile.Location{callee}) {
		t.Error("the ABI wrapper of the callee is kept")
	}
	if abiWrapper(fn("main.T.M-fm", "<autogenerated>"), []*profile.Location{callee}) {
		t.Error("a method value wrapper is left out")
	}
	if abiWrapper(fn("yolk/kernel.syscall", "<autogenerated>"), nil) {
		t.Error("a wrapper at the top of the stack is left out")
	}
}
