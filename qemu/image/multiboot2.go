package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// Multiboot2 header (The Multiboot2 Specification, version 2.0, section
// 3.1): a loader such as GRUB's multiboot2 command finds it by scanning the
// first Multiboot2Search bytes of the file for Multiboot2Magic at an 8-byte
// aligned offset with a valid checksum. The Go linker puts its text at 4 KiB
// and beyond and nothing of ours could go first, so PatchMultiboot2 writes
// the header into zero padding of the ELF file that no header, section or
// non-loadable segment uses: in Go's linux/amd64 output, the gap between the
// section header table and the first note, inside the first page.
const (
	Multiboot2Magic      = 0xE85250D6
	Multiboot2Search     = 32 << 10
	Multiboot2HeaderSize = 40
	multiboot2Align      = 8
)

// Multiboot2Header returns the header PatchMultiboot2 writes, with the
// 32-bit physical entry address entry:
//
//	0  magic     0xE85250D6
//	4  arch      0 (i386: 32-bit protected mode)
//	8  length    40
//	12 checksum  -(magic + arch + length), so the four words sum to 0 mod 2^32
//	16 entry-address tag: type 3, flags 0, size 12, entry_addr; padded to 8
//	32 end tag: type 0, flags 0, size 8
//
// No address tag: the loader takes the load addresses from the ELF program
// headers (GRUB loads each PT_LOAD at its p_paddr); the entry-address tag
// overrides e_entry, which is the Go runtime's Linux entry, with the
// kernel's 32-bit entry — the same one the PVH note names.
func Multiboot2Header(entry uint32) []byte {
	b := make([]byte, Multiboot2HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], Multiboot2Magic)
	le.PutUint32(b[4:], 0)
	le.PutUint32(b[8:], Multiboot2HeaderSize)
	le.PutUint32(b[12:], 0-(le.Uint32(b[0:])+le.Uint32(b[4:])+le.Uint32(b[8:])))
	le.PutUint16(b[16:], 3)  // MULTIBOOT_HEADER_TAG_ENTRY_ADDRESS
	le.PutUint16(b[18:], 0)  // flags: required
	le.PutUint32(b[20:], 12) // size without padding
	le.PutUint32(b[24:], entry)
	le.PutUint16(b[32:], 0) // end tag
	le.PutUint16(b[34:], 0)
	le.PutUint32(b[36:], 8)
	return b
}

// FindMultiboot2 returns the offset of the first Multiboot2 header a loader
// would accept in data (8-byte aligned, entirely inside the first
// Multiboot2Search bytes, checksum valid), or -1.
func FindMultiboot2(data []byte) int {
	le := binary.LittleEndian
	for off := 0; off+16 <= min(len(data), Multiboot2Search); off += multiboot2Align {
		if le.Uint32(data[off:]) != Multiboot2Magic {
			continue
		}
		arch, length, sum := le.Uint32(data[off+4:]), le.Uint32(data[off+8:]), le.Uint32(data[off+12:])
		if Multiboot2Magic+arch+length+sum == 0 && uint64(off)+uint64(length) <= uint64(min(len(data), Multiboot2Search)) {
			return off
		}
	}
	return -1
}

// Multiboot2Info describes what PatchMultiboot2 did.
type Multiboot2Info struct {
	Symbol    string // the ELF symbol used for the entry
	Entry     uint64 // physical address in the entry-address tag
	Offset    int    // file offset of the header
	Unchanged bool   // the image already carried the same header
}

// PatchMultiboot2 writes a Multiboot2 header into the ELF file at path (see
// PatchMultiboot2Bytes). The file is replaced atomically.
func PatchMultiboot2(path string, symbols ...string) (*Multiboot2Info, error) {
	var info *Multiboot2Info
	err := patchFile(path, func(data []byte) (out []byte, unchanged bool, err error) {
		out, info, err = PatchMultiboot2Bytes(data, symbols...)
		return out, err == nil && info.Unchanged, err
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// PatchMultiboot2Bytes returns a copy of the amd64 ELF image data with a
// Multiboot2 header (Multiboot2Header) whose entry is the physical address
// of the first symbol in symbols that exists (default DefaultEntrySymbol,
// as for Patch). Exactly Multiboot2HeaderSize bytes change.
//
// An image that already has a header gets it rewritten in place (Unchanged
// if it was the same). Otherwise the header goes to the lowest 8-byte
// aligned offset whose bytes are all zero and used by nothing the ELF file
// describes: not the ELF header, the program or section header tables, a
// section's contents or a segment other than PT_LOAD (whose padding it may
// share; it is then loaded with the kernel, harmlessly). If there is no
// such place inside the first Multiboot2Search bytes, PatchMultiboot2Bytes
// fails and says so: a loader would not find the header. Every PT_LOAD
// must lie below 4 GiB, where a 32-bit loader can put it.
func PatchMultiboot2Bytes(data []byte, symbols ...string) ([]byte, *Multiboot2Info, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		return nil, nil, fmt.Errorf("a Multiboot2 header needs a little-endian ELF64 x86-64 executable (%v, %v, %v, %v)", f.Class, f.Data, f.Machine, f.Type)
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
		return nil, nil, fmt.Errorf("entry %s at physical %#x: Multiboot2 needs a non-zero 32-bit address", name, paddr)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Paddr+p.Memsz > 1<<32 {
			return nil, nil, fmt.Errorf("PT_LOAD at physical %#x+%#x ends above 4 GiB: a Multiboot2 loader cannot load it", p.Paddr, p.Memsz)
		}
	}
	hdr := Multiboot2Header(uint32(paddr))
	info := &Multiboot2Info{Symbol: name, Entry: paddr}

	if off := FindMultiboot2(data); off >= 0 {
		if off+len(hdr) > len(data) {
			return nil, nil, fmt.Errorf("a Multiboot2 header at %#x is cut off by the end of the file", off)
		}
		info.Offset = off
		if bytes.Equal(data[off:off+len(hdr)], hdr) {
			info.Unchanged = true
			return data, info, nil
		}
		if binary.LittleEndian.Uint32(data[off+8:]) != Multiboot2HeaderSize {
			return nil, nil, fmt.Errorf("the image has a Multiboot2 header at %#x that yolk did not write; refusing to overwrite it", off)
		}
	} else {
		off, err := findPadding(data, usedRanges(f, data), len(hdr), Multiboot2Search)
		if err != nil {
			return nil, nil, err
		}
		info.Offset = off
	}
	out := bytes.Clone(data)
	copy(out[info.Offset:], hdr)
	return out, info, nil
}

// span is a half-open byte range [lo, hi) of the file.
type span struct{ lo, hi uint64 }

// usedRanges are the parts of the file the ELF structures describe, except
// PT_LOAD segments (which may contain padding): the ELF header, the program
// and section header tables, every section's contents and every other
// segment.
func usedRanges(f *elf.File, data []byte) []span {
	le := binary.LittleEndian
	phoff, phentsize := elfPhdrTable(data)
	shoff, shentsize := elfShdrTable(data)
	used := []span{
		{0, uint64(le.Uint16(data[52:]))}, // e_ehsize
		{phoff, phoff + phentsize*uint64(len(f.Progs))},
		{shoff, shoff + shentsize*uint64(len(f.Sections))},
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL && s.FileSize > 0 {
			used = append(used, span{s.Offset, s.Offset + s.FileSize})
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD && p.Filesz > 0 {
			used = append(used, span{p.Off, p.Off + p.Filesz})
		}
	}
	return used
}

// findPadding returns the lowest multiboot2Align-aligned offset at which
// size bytes of data are zero, overlap no used range and end within limit.
func findPadding(data []byte, used []span, size, limit int) (int, error) {
	end := min(limit, len(data))
next:
	for off := 0; off+size <= end; off += multiboot2Align {
		lo, hi := uint64(off), uint64(off+size)
		for _, u := range used {
			if lo < u.hi && u.lo < hi {
				continue next
			}
		}
		for _, b := range data[off : off+size] {
			if b != 0 {
				continue next
			}
		}
		return off, nil
	}
	return 0, fmt.Errorf("no %d bytes of unused zero padding at an %d-byte aligned offset in the first %d KiB of the image: "+
		"a Multiboot2 loader only looks for the header there (did the linker's layout change?)", size, multiboot2Align, limit>>10)
}

// replaceFile writes data to a temporary file beside path, with path's
// permissions, and renames it over path.
func replaceFile(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".yolk-patch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
