package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// DefaultEntrySymbol is the 32-bit PVH entry of the yolk kernel (boot/, Go
// assembly, ABI0).
const DefaultEntrySymbol = "yolk/boot.pvhEntry"

// XenElfnotePhys32Entry is XEN_ELFNOTE_PHYS32_ENTRY, the note type QEMU's PVH
// loader looks for.
const XenElfnotePhys32Entry = 18

// XenNoteSize is the size of the note written by Patch.
const XenNoteSize = 24

// noteAlign is the p_align the patched PT_NOTE gets. QEMU 7.2
// (hw/i386/x86.c, read_pvh_start_addr) finds the descriptor of an ELFCLASS64
// note at 12 + align_up(namesz, p_align) and reads it as a host size_t (8 bytes
// on a 64-bit host); the walk over notes (include/hw/elf_ops.h,
// get_elf_note_type) also aligns by p_align. With p_align 4 that is exactly the
// standard ELF note layout: header at 0, "Xen\0" at 12, an 8-byte descriptor at
// 16.
const noteAlign = 4

// XenNote returns the PHYS32_ENTRY note for a 32-bit physical entry address,
// laid out as QEMU reads it from an ELFCLASS64 image with p_align 4:
//
//	0  namesz = 4      (uint32 LE)
//	4  descsz = 8      (uint32 LE)
//	8  type   = 18     (uint32 LE)
//	12 "Xen\0"
//	16 entry           (uint64 LE; the high half is zero)
func XenNote(entry uint32) []byte {
	b := make([]byte, XenNoteSize)
	binary.LittleEndian.PutUint32(b[0:], 4)
	binary.LittleEndian.PutUint32(b[4:], 8)
	binary.LittleEndian.PutUint32(b[8:], XenElfnotePhys32Entry)
	copy(b[12:], "Xen\x00")
	binary.LittleEndian.PutUint64(b[16:], uint64(entry))
	return b
}

// PatchInfo describes what Patch did.
type PatchInfo struct {
	Symbol    string // the ELF symbol used for the entry
	Entry     uint64 // physical address written into the note
	NoteOff   uint64 // file offset of the note
	OldSize   uint64 // PT_NOTE p_filesz before patching
	Unchanged bool   // the image already carried the same note
}

// Patch rewrites the PT_NOTE segment of the ELF file at path into a Xen
// PHYS32_ENTRY note pointing at the first of symbols found (see PatchBytes).
// The file is replaced atomically.
func Patch(path string, symbols ...string) (*PatchInfo, error) {
	var info *PatchInfo
	err := patchFile(path, func(data []byte) (out []byte, unchanged bool, err error) {
		out, info, err = PatchBytes(data, symbols...)
		return out, err == nil && info.Unchanged, err
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// patchFile replaces the file at path with what patch makes of its
// contents, atomically, unless patch fails or changes nothing.
func patchFile(path string, patch func([]byte) ([]byte, bool, error)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, unchanged, err := patch(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if unchanged {
		return nil
	}
	return replaceFile(path, out)
}

// PatchBytes returns a copy of the ELF image data in which the PT_NOTE segment
// holds a single Xen PHYS32_ENTRY note (XenNote) whose address is the physical
// address of the first symbol in symbols that exists (for each name, the
// ABI0 body "name.abi0" is preferred over "name", which may be an ABIInternal
// wrapper). With no symbols, DefaultEntrySymbol is used.
//
// Exactly these bytes change: the old note range [p_offset, p_offset+p_filesz)
// (the new note, then zeros), the PT_NOTE program header's p_filesz, p_memsz
// and p_align, and sh_size of the SHT_NOTE section that starts at p_offset.
// Everything else, every PT_LOAD header included, stays byte-identical.
//
// The PT_NOTE must hold the Go linker's build-id note or an earlier Xen note:
// patching is idempotent (same entry: Unchanged; another entry: rewritten),
// and any other note content is refused.
//
// An arm64 image (EM_AARCH64) instead gets its ELF entry point (e_entry)
// set to the symbol (default ArmEntrySymbol), QEMU virt's way in: that
// header field is the only change.
func PatchBytes(data []byte, symbols ...string) ([]byte, *PatchInfo, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || (f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64) {
		return nil, nil, fmt.Errorf("not a little-endian ELF64 x86-64 or AArch64 image (%v, %v, %v)", f.Class, f.Data, f.Machine)
	}
	if f.Type != elf.ET_EXEC {
		return nil, nil, fmt.Errorf("ELF type %v, want ET_EXEC (a statically linked executable)", f.Type)
	}
	if f.Machine == elf.EM_AARCH64 {
		return patchEntry(data, f, symbols)
	}
	if len(symbols) == 0 {
		symbols = []string{DefaultEntrySymbol}
	}

	name, vaddr, err := findEntrySymbol(f, symbols)
	if err != nil {
		return nil, nil, err
	}
	paddr, err := physAddr(f, vaddr)
	if err != nil {
		return nil, nil, fmt.Errorf("entry %s at %#x: %w", name, vaddr, err)
	}
	if paddr == 0 || paddr >= 1<<32 {
		return nil, nil, fmt.Errorf("entry %s at physical %#x: PVH needs a non-zero 32-bit address (below 4 GiB)", name, paddr)
	}

	phIdx := -1
	for i, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		if phIdx >= 0 {
			return nil, nil, errors.New("more than one PT_NOTE segment; expected the Go linker's single build-id note")
		}
		phIdx = i
	}
	if phIdx < 0 {
		return nil, nil, errors.New("no PT_NOTE segment to rewrite (is this Go linker output?)")
	}
	ph := f.Progs[phIdx]
	if ph.Filesz < XenNoteSize {
		return nil, nil, fmt.Errorf("PT_NOTE is %d bytes, need %d for the Xen note", ph.Filesz, XenNoteSize)
	}
	if ph.Off+ph.Filesz > uint64(len(data)) {
		return nil, nil, errors.New("PT_NOTE extends past the end of the file")
	}
	old := data[ph.Off : ph.Off+ph.Filesz]
	note := XenNote(uint32(paddr))
	info := &PatchInfo{Symbol: name, Entry: paddr, NoteOff: ph.Off, OldSize: ph.Filesz}

	switch kind := noteKind(old); kind {
	case "xen":
		if ph.Filesz == XenNoteSize && bytes.Equal(old, note) && ph.Memsz == XenNoteSize && ph.Align == noteAlign {
			info.Unchanged = true
			return data, info, nil
		}
	case "go":
	default:
		return nil, nil, fmt.Errorf("PT_NOTE at %#x holds %s, not the Go build-id note or a Xen PHYS32_ENTRY note; refusing to overwrite it", ph.Off, kind)
	}

	out := bytes.Clone(data)
	dst := out[ph.Off : ph.Off+ph.Filesz]
	clear(dst)
	copy(dst, note)

	// Program header (Elf64_Phdr): p_filesz at 32, p_memsz at 40, p_align at 48.
	phoff, phentsize := elfPhdrTable(data)
	p := phoff + uint64(phIdx)*phentsize
	le := binary.LittleEndian
	le.PutUint64(out[p+32:], XenNoteSize)
	le.PutUint64(out[p+40:], XenNoteSize)
	le.PutUint64(out[p+48:], noteAlign)

	// Section header (Elf64_Shdr): sh_size at 32.
	shoff, shentsize := elfShdrTable(data)
	for i, s := range f.Sections {
		if s.Type == elf.SHT_NOTE && s.Offset == ph.Off {
			le.PutUint64(out[shoff+uint64(i)*shentsize+32:], XenNoteSize)
		}
	}
	return out, info, nil
}

// noteKind names the first note of a PT_NOTE segment: "go" for the Go
// build-id note, "xen" for a Xen PHYS32_ENTRY note, or a description.
func noteKind(b []byte) string {
	if len(b) < 12 {
		return "a truncated note"
	}
	le := binary.LittleEndian
	namesz, descsz, typ := le.Uint32(b[0:]), le.Uint32(b[4:]), le.Uint32(b[8:])
	name := b[12:]
	if uint64(len(name)) > uint64(namesz) {
		name = name[:namesz]
	}
	switch {
	case namesz == 4 && string(name) == "Go\x00\x00" && typ == 4:
		return "go"
	case namesz == 4 && string(name) == "Xen\x00" && typ == XenElfnotePhys32Entry && descsz == 8:
		return "xen"
	}
	return fmt.Sprintf("a note named %q of type %d", bytes.TrimRight(name, "\x00"), typ)
}

// findEntrySymbol returns the first of symbols present in the ELF symbol
// table, trying name+".abi0" before name for each.
func findEntrySymbol(f *elf.File, symbols []string) (string, uint64, error) {
	syms, err := f.Symbols()
	if err != nil {
		return "", 0, fmt.Errorf("reading the symbol table: %w (was the image linked with -s?)", err)
	}
	byName := make(map[string]uint64, len(syms))
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			byName[s.Name] = s.Value
		}
	}
	var tried []string
	for _, name := range symbols {
		for _, n := range []string{name + ".abi0", name} {
			tried = append(tried, n)
			if v, ok := byName[n]; ok {
				return n, v, nil
			}
		}
	}
	return "", 0, fmt.Errorf("no entry symbol in the image (looked for %q); is the yolk kernel linked in?", tried)
}

// physAddr translates a virtual address inside an executable PT_LOAD into the
// physical address QEMU loads it at (p_paddr).
func physAddr(f *elf.File, vaddr uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && vaddr >= p.Vaddr && vaddr-p.Vaddr < p.Filesz {
			return vaddr - p.Vaddr + p.Paddr, nil
		}
	}
	return 0, errors.New("not inside an executable PT_LOAD segment")
}

func elfPhdrTable(data []byte) (off, entsize uint64) {
	le := binary.LittleEndian
	return le.Uint64(data[32:]), uint64(le.Uint16(data[54:]))
}

func elfShdrTable(data []byte) (off, entsize uint64) {
	le := binary.LittleEndian
	return le.Uint64(data[40:]), uint64(le.Uint16(data[58:]))
}

// ArmEntrySymbol is the arm64 kernel entry (boot/entry_arm64.s).
const ArmEntrySymbol = "yolk/boot.entry"

// patchEntry sets an arm64 image's e_entry to the physical address of the
// first of symbols found (default ArmEntrySymbol).
func patchEntry(data []byte, f *elf.File, symbols []string) ([]byte, *PatchInfo, error) {
	if len(symbols) == 0 {
		symbols = []string{ArmEntrySymbol}
	}
	name, vaddr, err := findEntrySymbol(f, symbols)
	if err != nil {
		return nil, nil, err
	}
	paddr, err := physAddr(f, vaddr)
	if err != nil {
		return nil, nil, fmt.Errorf("entry %s at %#x: %w", name, vaddr, err)
	}
	info := &PatchInfo{Symbol: name, Entry: paddr}
	const eEntry = 24 // Elf64_Ehdr.e_entry
	le := binary.LittleEndian
	if le.Uint64(data[eEntry:]) == paddr {
		info.Unchanged = true
		return data, info, nil
	}
	out := bytes.Clone(data)
	le.PutUint64(out[eEntry:], paddr)
	return out, info, nil
}
