package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The test program: real linker output with an ABI0 assembly function (as the
// kernel's PVH entry is) and a non-inlined Go function.
const testMain = `package main

import "os"

func entry32()

//go:noinline
func add(a, b int) int {
	return a + b
}

func main() {
	if len(os.Args) > 1000 {
		entry32()
	}
	os.Exit(add(len(os.Args), -1))
}
`

const testAsm = `#include "textflag.h"

TEXT ·entry32(SB), NOSPLIT|NOFRAME, $0-0
	BYTE $0xF4
	RET
`

// testAsmArm64 is testAsm for arm64 (BRK #0).
const testAsmArm64 = `#include "textflag.h"

TEXT ·entry32(SB), NOSPLIT|NOFRAME, $0-0
	WORD $0xd4200000
	RET
`

var (
	buildOnce sync.Map // arch and ldflags -> *builtProgram
)

type builtProgram struct {
	once sync.Once
	path string
	err  error
}

// testProgram builds the amd64 test program once per set of -ldflags with
// the stock toolchain and returns the path of the (unpatched) binary.
func testProgram(t *testing.T, ldflags string) string {
	t.Helper()
	return testProgramArch(t, "amd64", ldflags)
}

// testProgramArch is testProgram for GOARCH arch.
func testProgramArch(t *testing.T, arch, ldflags string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(arch+" "+ldflags, &builtProgram{})
	b := v.(*builtProgram)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "yolk-image-test-")
		if err != nil {
			b.err = err
			return
		}
		files := map[string]string{
			"go.mod":        "module testprog\n\ngo 1.26\n",
			"main.go":       testMain,
			"entry_amd64.s": testAsm,
			"entry_arm64.s": testAsmArm64,
		}
		for name, src := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
				b.err = err
				return
			}
		}
		args := []string{"build", "-o", "prog"}
		if ldflags != "" {
			args = append(args, "-ldflags", ldflags)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{err, out}
			return
		}
		b.path = filepath.Join(dir, "prog")
	})
	if b.err != nil {
		t.Fatalf("building the test program: %v", b.err)
	}
	return b.path
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

func TestMain(m *testing.M) {
	code := m.Run()
	buildOnce.Range(func(_, v any) bool {
		if b := v.(*builtProgram); b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
		return true
	})
	os.Exit(code)
}

func symbolValue(t *testing.T, f *elf.File, name string) uint64 {
	t.Helper()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("symbol %s not found", name)
	return 0
}

// qemuReadsEntry re-implements what QEMU 7.2 does with an ELFCLASS64
// PT_NOTE: walk the notes with names and descriptors aligned to p_align
// (get_elf_note_type) to the first of type 18, then read a 64-bit value at
// 12 + align_up(namesz, p_align) (read_pvh_start_addr).
func qemuReadsEntry(t *testing.T, img []byte) uint64 {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	alignUp := func(n, a uint64) uint64 { return (n + a - 1) / a * a }
	le := binary.LittleEndian
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := img[p.Off : p.Off+p.Filesz]
		off := uint64(0)
		for off+12 <= uint64(len(data)) {
			namesz, descsz, typ := uint64(le.Uint32(data[off:])), uint64(le.Uint32(data[off+4:])), le.Uint32(data[off+8:])
			if typ == XenElfnotePhys32Entry {
				d := off + 12 + alignUp(namesz, p.Align)
				if d+8 > uint64(len(img)) {
					t.Fatalf("descriptor at %#x past the end", d)
				}
				return le.Uint64(data[d:])
			}
			off += 12 + alignUp(namesz, p.Align) + alignUp(descsz, p.Align)
		}
	}
	return 0
}

func TestPatchRealLinkerOutput(t *testing.T) {
	path := testProgram(t, "")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f0, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	want := symbolValue(t, f0, "main.main")

	patched, info, err := PatchBytes(orig, "main.main")
	if err != nil {
		t.Fatal(err)
	}
	if info.Symbol != "main.main" || info.Entry != want || info.Unchanged {
		t.Fatalf("info = %+v, want symbol main.main entry %#x", info, want)
	}
	if len(patched) != len(orig) {
		t.Fatalf("size changed: %d -> %d", len(orig), len(patched))
	}
	if got := qemuReadsEntry(t, patched); got != want {
		t.Fatalf("QEMU would read entry %#x, want %#x", got, want)
	}

	f1, err := elf.NewFile(bytes.NewReader(patched))
	if err != nil {
		t.Fatalf("patched image does not parse: %v", err)
	}
	var note *elf.Prog
	for i, p := range f1.Progs {
		p0 := f0.Progs[i]
		if p.Type == elf.PT_NOTE {
			note = p
			if p.Off != p0.Off || p.Vaddr != p0.Vaddr || p.Paddr != p0.Paddr || p.Flags != p0.Flags {
				t.Errorf("PT_NOTE moved: %+v -> %+v", p0.ProgHeader, p.ProgHeader)
			}
			continue
		}
		if p.ProgHeader != p0.ProgHeader {
			t.Errorf("program header %d (%v) changed: %+v -> %+v", i, p.Type, p0.ProgHeader, p.ProgHeader)
		}
	}
	if note == nil {
		t.Fatal("no PT_NOTE after patching")
	}
	if note.Filesz != XenNoteSize || note.Memsz != XenNoteSize || note.Align != 4 {
		t.Errorf("PT_NOTE filesz/memsz/align = %d/%d/%d, want 24/24/4", note.Filesz, note.Memsz, note.Align)
	}
	// The exact note bytes: namesz 4, descsz 8, type 18, "Xen\0", 8-byte LE entry.
	gotNote := patched[note.Off : note.Off+XenNoteSize]
	wantNote := []byte{4, 0, 0, 0, 8, 0, 0, 0, 18, 0, 0, 0, 'X', 'e', 'n', 0}
	wantNote = binary.LittleEndian.AppendUint64(wantNote, want)
	if !bytes.Equal(gotNote, wantNote) {
		t.Errorf("note bytes\n got % x\nwant % x", gotNote, wantNote)
	}
	// The section that was the Go build-id note now has the note's size.
	sec := f1.Section(".note.go.buildid")
	if sec == nil || sec.Size != XenNoteSize || sec.Offset != note.Off {
		t.Errorf(".note.go.buildid section = %+v, want size 24 at %#x", sec, note.Off)
	}

	// Every byte outside the old note range and the two header fields is
	// unchanged: in particular every PT_LOAD's file contents outside the note.
	ph := f0.Progs[progIndex(t, f0, elf.PT_NOTE)]
	allowed := func(off uint64) bool {
		phoff, phent := elfPhdrTable(orig)
		p := phoff + uint64(progIndex(t, f0, elf.PT_NOTE))*phent
		shoff, shent := elfShdrTable(orig)
		s := shoff + uint64(sectionIndex(t, f0, ".note.go.buildid"))*shent
		return (off >= ph.Off && off < ph.Off+ph.Filesz) ||
			(off >= p+32 && off < p+56) || (off >= s+32 && off < s+40)
	}
	for i := range orig {
		if orig[i] != patched[i] && !allowed(uint64(i)) {
			t.Fatalf("byte at %#x changed outside the note and its headers", i)
		}
	}
	for i := ph.Off + XenNoteSize; i < ph.Off+ph.Filesz; i++ {
		if patched[i] != 0 {
			t.Fatalf("stale build-id byte at %#x", i)
		}
	}
	for _, p := range f0.Progs {
		if p.Type == elf.PT_LOAD && p.Off <= ph.Off && ph.Off+ph.Filesz <= p.Off+p.Filesz {
			t.Logf("note lies inside PT_LOAD at %#x; only its %d bytes change there", p.Off, ph.Filesz)
		}
	}

	// Patching again is idempotent; patching with another entry rewrites
	// just the descriptor.
	again, info2, err := PatchBytes(patched, "main.main")
	if err != nil || !info2.Unchanged || !bytes.Equal(again, patched) {
		t.Fatalf("second patch: unchanged=%v err=%v", info2 != nil && info2.Unchanged, err)
	}
	other := symbolValue(t, f0, "main.add")
	re, info3, err := PatchBytes(patched, "main.add")
	if err != nil || info3.Unchanged {
		t.Fatalf("repatch: %+v %v", info3, err)
	}
	if got := qemuReadsEntry(t, re); got != other {
		t.Fatalf("repatched entry %#x, want %#x", got, other)
	}
	for i := range re {
		if re[i] != patched[i] && (uint64(i) < ph.Off+16 || uint64(i) >= ph.Off+24) {
			t.Fatalf("repatch changed byte %#x outside the descriptor", i)
		}
	}
}

func progIndex(t *testing.T, f *elf.File, typ elf.ProgType) int {
	for i, p := range f.Progs {
		if p.Type == typ {
			return i
		}
	}
	t.Fatalf("no %v", typ)
	return -1
}

func sectionIndex(t *testing.T, f *elf.File, name string) int {
	for i, s := range f.Sections {
		if s.Name == name {
			return i
		}
	}
	t.Fatalf("no section %s", name)
	return -1
}

func TestPatchABI0Symbol(t *testing.T) {
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := elf.NewFile(bytes.NewReader(orig))
	want := symbolValue(t, f, "main.entry32.abi0")
	// A missing first choice falls through to the next name; the assembly
	// function is found under its ".abi0" name.
	_, info, err := PatchBytes(orig, "yolk/boot.pvhEntry", "main.entry32")
	if err != nil {
		t.Fatal(err)
	}
	if info.Symbol != "main.entry32.abi0" || info.Entry != want {
		t.Fatalf("got %s at %#x, want main.entry32.abi0 at %#x", info.Symbol, info.Entry, want)
	}
}

func TestPatchRefusals(t *testing.T) {
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	// The default entry symbol is missing from a plain Go program.
	if _, _, err := PatchBytes(orig); err == nil || !strings.Contains(err.Error(), "yolk/boot.pvhEntry") {
		t.Errorf("missing symbol: err = %v", err)
	}
	// A data symbol is not an executable entry.
	if _, _, err := PatchBytes(orig, "runtime.buildVersion"); err == nil {
		t.Errorf("data symbol accepted")
	}
	// Unknown note content is not overwritten.
	f, _ := elf.NewFile(bytes.NewReader(orig))
	ph := f.Progs[progIndex(t, f, elf.PT_NOTE)]
	bad := bytes.Clone(orig)
	copy(bad[ph.Off+12:], "Gnu\x00")
	if _, _, err := PatchBytes(bad, "main.main"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("foreign note: err = %v", err)
	}
	// Not an ELF file.
	if _, _, err := PatchBytes([]byte("#!/bin/sh\n"), "main.main"); err == nil {
		t.Errorf("non-ELF accepted")
	}
}

func TestPatchRefusesEntryAbove4GiB(t *testing.T) {
	// Real linker output placed above 4 GiB with the linker's -T flag.
	orig, err := os.ReadFile(testProgram(t, "-T 0x100001000"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = PatchBytes(orig, "main.main")
	if err == nil || !strings.Contains(err.Error(), "4 GiB") {
		t.Fatalf("err = %v, want a 4 GiB refusal", err)
	}
}

func TestPatchFile(t *testing.T) {
	src := testProgram(t, "")
	dst := filepath.Join(t.TempDir(), "img.elf")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := Patch(dst, "main.main")
	if err != nil || info.Unchanged {
		t.Fatalf("Patch: %+v %v", info, err)
	}
	st, err := os.Stat(dst)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("mode after patch: %v %v", st.Mode(), err)
	}
	got, _ := os.ReadFile(dst)
	if e := qemuReadsEntry(t, got); e != info.Entry {
		t.Fatalf("file entry %#x, want %#x", e, info.Entry)
	}
	info, err = Patch(dst, "main.main")
	if err != nil || !info.Unchanged {
		t.Fatalf("second Patch: %+v %v", info, err)
	}
}

// TestLinkFlags: arm64 images are always linked at ArmTextAddr, with the
// user's flags after it; amd64 images get the user's flags alone.
func TestLinkFlags(t *testing.T) {
	for _, c := range []struct{ arch, user, want string }{
		{"arm64", "", "-T 0x40201000"},
		{"arm64", "-s -w", "-T 0x40201000 -s -w"},
		{"amd64", "", ""},
		{"amd64", "-s", "-s"},
	} {
		if got := LinkFlags(c.arch, c.user); got != c.want {
			t.Errorf("LinkFlags(%q, %q) = %q, want %q", c.arch, c.user, got, c.want)
		}
	}
}

// TestPatchArm64 patches real arm64 linker output (linked as Build links
// arm64 images, without the kernel): the first PT_LOAD starts at
// 0x40200000, e_entry becomes the symbol's physical address and no other
// byte changes (the Go build-id note stays); a second patch changes
// nothing; a missing or non-function symbol is an error.
func TestPatchArm64(t *testing.T) {
	orig, err := os.ReadFile(testProgramArch(t, "arm64", LinkFlags("arm64", "")))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("machine %v", f.Machine)
	}
	first := f.Progs[progIndex(t, f, elf.PT_LOAD)]
	if first.Paddr != 0x40200000 || first.Vaddr != 0x40200000 {
		t.Errorf("first PT_LOAD at physical %#x (virtual %#x), want 0x40200000", first.Paddr, first.Vaddr)
	}
	want := symbolValue(t, f, "main.entry32.abi0")

	out, info, err := PatchBytes(orig, "yolk/boot.entry", "main.entry32")
	if err != nil {
		t.Fatal(err)
	}
	if info.Symbol != "main.entry32.abi0" || info.Entry != want || info.Unchanged {
		t.Fatalf("patch %+v, want main.entry32.abi0 at %#x", info, want)
	}
	if len(out) != len(orig) {
		t.Fatalf("size %d, was %d", len(out), len(orig))
	}
	for i := range out {
		if out[i] != orig[i] && (i < 24 || i >= 32) {
			t.Fatalf("byte %#x changed outside e_entry", i)
		}
	}
	g, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if g.Entry != want {
		t.Errorf("e_entry %#x, want %#x", g.Entry, want)
	}
	if again, info, err := PatchBytes(out, "main.entry32"); err != nil || !info.Unchanged || !bytes.Equal(again, out) {
		t.Errorf("second patch: %+v %v", info, err)
	}

	// The default symbol is the kernel's arm64 entry, absent here.
	if _, _, err := PatchBytes(orig); err == nil || !strings.Contains(err.Error(), ArmEntrySymbol) {
		t.Errorf("missing entry: err = %v, want it to name %s", err, ArmEntrySymbol)
	}
	if _, _, err := PatchBytes(orig, "runtime.buildVersion"); err == nil {
		t.Error("data symbol accepted")
	}
	// Neither x86-64 nor AArch64: refused.
	riscv := bytes.Clone(orig)
	binary.LittleEndian.PutUint16(riscv[18:], uint16(elf.EM_RISCV))
	if _, _, err := PatchBytes(riscv, "main.entry32"); err == nil || !strings.Contains(err.Error(), "AArch64") {
		t.Errorf("RISC-V image: err = %v", err)
	}
}
