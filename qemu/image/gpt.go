package image

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"unicode/utf16"
)

// A GUID Partition Table (UEFI 2.10, chapter 5): a protective MBR in
// sector 0, the primary header in sector 1 and its 128 entries of 128
// bytes in sectors 2–33, the same entries again in the 32 sectors before
// the disk's last one and the backup header in the last sector. The
// disk image (disk.go) has two partitions: GRUB's BIOS boot partition and
// the EFI system partition.

// Partition type GUIDs.
const (
	GPTTypeBIOSBoot = "21686148-6449-6E6F-744E-656564454649" // GRUB's core image, for BIOS
	GPTTypeESP      = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B" // EFI system partition
)

const (
	gptEntries     = 128
	gptEntrySize   = 128
	gptEntrySects  = gptEntries * gptEntrySize / sectorSize // 32
	gptHeaderSize  = 92
	gptFirstUsable = 2 + gptEntrySects // 34
)

// GPTPartition is one entry of the table. LBAs are in 512-byte sectors,
// Last inclusive, as the table stores them.
type GPTPartition struct {
	Type, GUID  string // upper-case text form
	First, Last uint64
	Attributes  uint64
	Name        string
}

// GPT is a parsed table: the disk's GUID and its partitions in entry order
// (empty entries left out).
type GPT struct {
	DiskGUID   string
	Sectors    uint64 // the disk's size the backup header gives (its LBA + 1)
	Partitions []GPTPartition
}

// guidBytes encodes a GUID's text form in its on-disk mixed-endian form:
// the first three fields little-endian, the last two as written.
func guidBytes(s string) ([16]byte, error) {
	var g [16]byte
	h, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(h) != 16 || len(s) != 36 {
		return g, fmt.Errorf("GUID %q: want 8-4-4-4-12 hex digits", s)
	}
	le := binary.LittleEndian
	be := binary.BigEndian
	le.PutUint32(g[0:], be.Uint32(h[0:]))
	le.PutUint16(g[4:], be.Uint16(h[4:]))
	le.PutUint16(g[6:], be.Uint16(h[6:]))
	copy(g[8:], h[8:])
	return g, nil
}

// guidString is guidBytes' inverse.
func guidString(g []byte) string {
	le := binary.LittleEndian
	return fmt.Sprintf("%08X-%04X-%04X-%X-%X", le.Uint32(g[0:]), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:10], g[10:16])
}

// NewGUID returns a random (version 4) GUID.
func NewGUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%X-%X-%X-%X-%X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// GPTSectors are the sectors WriteGPT fills, each as a disk offset and its
// bytes (the MBR's boot code is the caller's: bootCode, up to 440 bytes).
type GPTSectors struct {
	Offset int64
	Data   []byte
}

// EncodeGPT returns the protective MBR (with bootCode, at most 440 bytes,
// in front of it), the primary header and entries, and the backup entries
// and header of a disk of sectors 512-byte sectors holding parts.
func EncodeGPT(sectors uint64, diskGUID string, parts []GPTPartition, bootCode []byte) ([]GPTSectors, error) {
	if len(bootCode) > 440 {
		return nil, fmt.Errorf("MBR boot code of %d bytes: at most 440", len(bootCode))
	}
	if len(parts) > gptEntries {
		return nil, fmt.Errorf("%d partitions: at most %d", len(parts), gptEntries)
	}
	if sectors < 2*gptFirstUsable+1 {
		return nil, fmt.Errorf("a disk of %d sectors is too small for a GPT", sectors)
	}
	lastUsable := sectors - gptFirstUsable // before the backup entries
	le := binary.LittleEndian
	entries := make([]byte, gptEntries*gptEntrySize)
	for i, p := range parts {
		if p.First < gptFirstUsable || p.Last < p.First || p.Last > lastUsable {
			return nil, fmt.Errorf("partition %d (%s): sectors %d–%d outside %d–%d", i+1, p.Name, p.First, p.Last, gptFirstUsable, lastUsable)
		}
		for j := range i {
			if p.First <= parts[j].Last && parts[j].First <= p.Last {
				return nil, fmt.Errorf("partitions %d and %d overlap", j+1, i+1)
			}
		}
		e := entries[i*gptEntrySize:]
		t, err := guidBytes(p.Type)
		if err != nil {
			return nil, err
		}
		u, err := guidBytes(p.GUID)
		if err != nil {
			return nil, err
		}
		copy(e[0:], t[:])
		copy(e[16:], u[:])
		le.PutUint64(e[32:], p.First)
		le.PutUint64(e[40:], p.Last)
		le.PutUint64(e[48:], p.Attributes)
		name := utf16.Encode([]rune(p.Name))
		if len(name) > 36 {
			return nil, fmt.Errorf("partition name %q: at most 36 UTF-16 units", p.Name)
		}
		for k, c := range name {
			le.PutUint16(e[56+2*k:], c)
		}
	}
	dg, err := guidBytes(diskGUID)
	if err != nil {
		return nil, err
	}
	entriesCRC := crc32.ChecksumIEEE(entries)
	header := func(my, alt, entriesLBA uint64) []byte {
		h := make([]byte, sectorSize)
		copy(h[0:], "EFI PART")
		le.PutUint32(h[8:], 0x00010000)
		le.PutUint32(h[12:], gptHeaderSize)
		le.PutUint64(h[24:], my)
		le.PutUint64(h[32:], alt)
		le.PutUint64(h[40:], gptFirstUsable)
		le.PutUint64(h[48:], lastUsable)
		copy(h[56:], dg[:])
		le.PutUint64(h[72:], entriesLBA)
		le.PutUint32(h[80:], gptEntries)
		le.PutUint32(h[84:], gptEntrySize)
		le.PutUint32(h[88:], entriesCRC)
		le.PutUint32(h[16:], crc32.ChecksumIEEE(h[:gptHeaderSize]))
		return h
	}
	mbr := make([]byte, sectorSize)
	copy(mbr, bootCode)
	pe := mbr[446:]
	copy(pe[1:4], []byte{0x00, 0x02, 0x00}) // CHS of LBA 1
	pe[4] = 0xEE                            // GPT protective
	copy(pe[5:8], []byte{0xff, 0xff, 0xff})
	le.PutUint32(pe[8:], 1)
	le.PutUint32(pe[12:], uint32(min(sectors-1, 0xffffffff)))
	mbr[510], mbr[511] = 0x55, 0xAA
	last := sectors - 1
	return []GPTSectors{
		{0, mbr},
		{sectorSize, header(1, last, 2)},
		{2 * sectorSize, entries},
		{int64(last-gptEntrySects) * sectorSize, entries},
		{int64(last) * sectorSize, header(last, 1, last-gptEntrySects)},
	}, nil
}

// ParseGPT reads the table of a disk image of size bytes
// and checks it: the protective MBR, both headers' signatures, sizes,
// locations and CRCs, and that both entry arrays match their CRC and each
// other.
func ParseGPT(r io.ReaderAt, size int64) (*GPT, error) {
	le := binary.LittleEndian
	sectors := uint64(size / sectorSize)
	if sectors < 2*gptFirstUsable+1 {
		return nil, errors.New("too small for a GPT")
	}
	read := func(lba uint64, n int) ([]byte, error) {
		b := make([]byte, n)
		_, err := r.ReadAt(b, int64(lba)*sectorSize)
		return b, err
	}
	mbr, err := read(0, sectorSize)
	if err != nil {
		return nil, err
	}
	if mbr[510] != 0x55 || mbr[511] != 0xAA || mbr[446+4] != 0xEE || le.Uint32(mbr[446+8:]) != 1 {
		return nil, errors.New("no protective MBR (a type 0xEE partition from sector 1)")
	}
	var tables [2][]byte
	var g GPT
	for i, lba := range []uint64{1, sectors - 1} {
		h, err := read(lba, sectorSize)
		if err != nil {
			return nil, err
		}
		which := [2]string{"primary", "backup"}[i]
		if string(h[0:8]) != "EFI PART" || le.Uint32(h[12:]) != gptHeaderSize {
			return nil, fmt.Errorf("%s GPT header: bad signature or size", which)
		}
		crc := le.Uint32(h[16:])
		le.PutUint32(h[16:], 0)
		if crc32.ChecksumIEEE(h[:gptHeaderSize]) != crc {
			return nil, fmt.Errorf("%s GPT header: CRC mismatch", which)
		}
		alt := [2]uint64{sectors - 1, 1}[i]
		if le.Uint64(h[24:]) != lba || le.Uint64(h[32:]) != alt {
			return nil, fmt.Errorf("%s GPT header at %d says it is at %d, the other at %d", which, lba, le.Uint64(h[24:]), le.Uint64(h[32:]))
		}
		if n, sz := le.Uint32(h[80:]), le.Uint32(h[84:]); n != gptEntries || sz != gptEntrySize {
			return nil, fmt.Errorf("%s GPT header: %d entries of %d bytes, want %d of %d", which, n, sz, gptEntries, gptEntrySize)
		}
		ents, err := read(le.Uint64(h[72:]), gptEntries*gptEntrySize)
		if err != nil {
			return nil, err
		}
		if crc32.ChecksumIEEE(ents) != le.Uint32(h[88:]) {
			return nil, fmt.Errorf("%s GPT entries: CRC mismatch", which)
		}
		tables[i] = ents
		g.DiskGUID = guidString(h[56:72])
	}
	if string(tables[0]) != string(tables[1]) {
		return nil, errors.New("primary and backup GPT entries differ")
	}
	g.Sectors = sectors
	for i := range gptEntries {
		e := tables[0][i*gptEntrySize : (i+1)*gptEntrySize]
		if string(e[0:16]) == string(make([]byte, 16)) {
			continue
		}
		var name []uint16
		for k := 56; k < gptEntrySize; k += 2 {
			if c := le.Uint16(e[k:]); c != 0 {
				name = append(name, c)
			} else {
				break
			}
		}
		g.Partitions = append(g.Partitions, GPTPartition{
			Type: guidString(e[0:16]), GUID: guidString(e[16:32]),
			First: le.Uint64(e[32:]), Last: le.Uint64(e[40:]), Attributes: le.Uint64(e[48:]),
			Name: string(utf16.Decode(name)),
		})
	}
	return &g, nil
}
