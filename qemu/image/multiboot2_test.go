package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkMultiboot2 checks the header a loader finds in img: inside the first
// 32 KiB, 8-byte aligned, the four words summing to zero, the entry-address
// tag naming entry and the end tag closing it.
func checkMultiboot2(t *testing.T, img []byte, entry uint64) int {
	t.Helper()
	off := FindMultiboot2(img)
	if off < 0 {
		t.Fatal("no Multiboot2 header in the first 32 KiB")
	}
	if off%8 != 0 || off+Multiboot2HeaderSize > 32<<10 {
		t.Fatalf("header at %#x: not 8-byte aligned or not inside the first 32 KiB", off)
	}
	le := binary.LittleEndian
	h := img[off : off+Multiboot2HeaderSize]
	var sum uint32
	for i := 0; i < 16; i += 4 {
		sum += le.Uint32(h[i:])
	}
	if le.Uint32(h) != 0xE85250D6 || le.Uint32(h[4:]) != 0 || le.Uint32(h[8:]) != 40 || sum != 0 {
		t.Fatalf("header % x: want magic e85250d6, arch 0, length 40, checksum making the sum 0 (sum %#x)", h[:16], sum)
	}
	if typ, size, addr := le.Uint16(h[16:]), le.Uint32(h[20:]), le.Uint32(h[24:]); typ != 3 || size != 12 || uint64(addr) != entry {
		t.Errorf("entry-address tag: type %d size %d addr %#x, want 3, 12, %#x", typ, size, addr, entry)
	}
	if typ, size := le.Uint16(h[32:]), le.Uint32(h[36:]); typ != 0 || size != 8 {
		t.Errorf("end tag: type %d size %d, want 0, 8", typ, size)
	}
	return off
}

// TestMultiboot2RealLinkerOutput patches the stock linker's output: the
// header lands in the padding of the first page, only its 40 bytes
// change, the ELF still parses with the same headers, and patching again
// changes nothing.
func TestMultiboot2RealLinkerOutput(t *testing.T) {
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	f0, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	want := symbolValue(t, f0, "main.entry32.abi0")
	if FindMultiboot2(orig) >= 0 {
		t.Fatal("the linker's output already has a Multiboot2 header")
	}

	patched, info, err := PatchMultiboot2Bytes(orig, "main.entry32")
	if err != nil {
		t.Fatal(err)
	}
	if info.Symbol != "main.entry32.abi0" || info.Entry != want || info.Unchanged {
		t.Fatalf("info = %+v, want main.entry32.abi0 at %#x", info, want)
	}
	off := checkMultiboot2(t, patched, want)
	if off != info.Offset {
		t.Errorf("header found at %#x, Multiboot2Info.Offset %#x", off, info.Offset)
	}
	if len(patched) != len(orig) {
		t.Fatalf("size changed: %d -> %d", len(orig), len(patched))
	}
	for i := range orig {
		if orig[i] != patched[i] && (i < off || i >= off+Multiboot2HeaderSize) {
			t.Fatalf("byte %#x changed outside the header", i)
		}
	}
	for _, u := range usedRanges(f0, orig) {
		if uint64(off) < u.hi && u.lo < uint64(off+Multiboot2HeaderSize) {
			t.Errorf("header [%#x, %#x) overlaps used range [%#x, %#x)", off, off+Multiboot2HeaderSize, u.lo, u.hi)
		}
	}
	f1, err := elf.NewFile(bytes.NewReader(patched))
	if err != nil {
		t.Fatalf("patched image does not parse: %v", err)
	}
	for i, p := range f1.Progs {
		if p.ProgHeader != f0.Progs[i].ProgHeader {
			t.Errorf("program header %d changed", i)
		}
	}
	t.Logf("header at %#x, entry %#x", off, want)

	again, info2, err := PatchMultiboot2Bytes(patched, "main.entry32")
	if err != nil || !info2.Unchanged || !bytes.Equal(again, patched) {
		t.Fatalf("second patch: %+v, %v", info2, err)
	}
	// Another entry rewrites the header in place.
	other := symbolValue(t, f0, "main.add")
	re, info3, err := PatchMultiboot2Bytes(patched, "main.add")
	if err != nil || info3.Unchanged || info3.Offset != off {
		t.Fatalf("repatch: %+v, %v", info3, err)
	}
	checkMultiboot2(t, re, other)

	// Both patches together: the PVH note and the Multiboot2 header are
	// independent.
	both, _, err := PatchBytes(patched, "main.entry32")
	if err != nil {
		t.Fatal(err)
	}
	checkMultiboot2(t, both, want)
	if got := qemuReadsEntry(t, both); got != want {
		t.Errorf("PVH entry %#x after both patches, want %#x", got, want)
	}
}

// TestMultiboot2NoRoom: when the first 32 KiB hold no unused zero padding,
// the patch fails and says why, rather than writing a header a loader would
// never find.
func TestMultiboot2NoRoom(t *testing.T) {
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	// The padding is there but not zero: someone else's bytes.
	f, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	used := usedRanges(f, orig)
	filled := bytes.Clone(orig)
fill:
	for i := 0; i < 32<<10; i++ {
		for _, u := range used {
			if uint64(i) >= u.lo && uint64(i) < u.hi {
				continue fill
			}
		}
		if filled[i] == 0 {
			filled[i] = 0xCC
		}
	}
	_, _, err = PatchMultiboot2Bytes(filled, "main.entry32")
	if err == nil || !strings.Contains(err.Error(), "first 32 KiB") {
		t.Errorf("filled padding: err = %v, want a refusal naming the first 32 KiB", err)
	}

	// Synthetic layouts: a gap that only begins at 32 KiB - 32 is too
	// late for a 40-byte header; one 8 bytes earlier fits exactly.
	data := make([]byte, 64<<10)
	used = []span{{0, 32<<10 - 32}}
	if off, err := findPadding(data, used, Multiboot2HeaderSize, Multiboot2Search); err == nil {
		t.Errorf("gap at 32 KiB - 32: header placed at %#x, want an error", off)
	}
	used = []span{{0, 32<<10 - 40}}
	if off, err := findPadding(data, used, Multiboot2HeaderSize, Multiboot2Search); err != nil || off != 32<<10-40 {
		t.Errorf("gap at 32 KiB - 40: off %#x, %v; want %#x", off, err, 32<<10-40)
	}
	// A gap too small between two used ranges is skipped, and an
	// unaligned start rounds up.
	used = []span{{0, 0x100}, {0x120, 0x203}}
	if off, err := findPadding(data, used, Multiboot2HeaderSize, Multiboot2Search); err != nil || off != 0x208 {
		t.Errorf("off %#x, %v; want 0x208", off, err)
	}
}

// TestMultiboot2Refusals: foreign headers, arm64 images and a missing
// entry symbol are refused.
func TestMultiboot2Refusals(t *testing.T) {
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := PatchMultiboot2Bytes(orig, "no.such.symbol"); err == nil {
		t.Error("missing entry symbol: no error")
	}
	foreign, _, err := PatchMultiboot2Bytes(orig, "main.entry32")
	if err != nil {
		t.Fatal(err)
	}
	off := FindMultiboot2(foreign)
	le := binary.LittleEndian
	le.PutUint32(foreign[off+8:], 24) // another length, checksum fixed up
	le.PutUint32(foreign[off+12:], 0-(le.Uint32(foreign[off:])+24))
	if _, _, err := PatchMultiboot2Bytes(foreign, "main.entry32"); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Errorf("foreign header: err = %v", err)
	}
	arm, err := os.ReadFile(testProgramArch(t, "arm64", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := PatchMultiboot2Bytes(arm, "main.entry32"); err == nil {
		t.Error("arm64 image: no error")
	}
}

// TestMultiboot2File patches a file in place, keeping its mode.
func TestMultiboot2File(t *testing.T) {
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, orig, 0o751); err != nil {
		t.Fatal(err)
	}
	info, err := PatchMultiboot2(path, "main.entry32")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if FindMultiboot2(b) != info.Offset {
		t.Errorf("file: header at %#x, info says %#x", FindMultiboot2(b), info.Offset)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o751 {
		t.Errorf("mode after patching: %v, %v", st.Mode(), err)
	}
}
