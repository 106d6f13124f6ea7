package image

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
)

// memDisk is a sparse in-memory disk: its sectors that are not zero.
type memDisk map[int64][]byte

func (m memDisk) ReadAt(b []byte, off int64) (int, error) {
	for i := range b {
		s := m[(off+int64(i))/sectorSize]
		if s == nil {
			b[i] = 0
		} else {
			b[i] = s[(off+int64(i))%sectorSize]
		}
	}
	return len(b), nil
}

// at returns n bytes at off.
func (m memDisk) at(off int64, n int) []byte {
	b := make([]byte, n)
	m.ReadAt(b, off)
	return b
}

// flip returns a copy of m with a bit of the byte at off flipped.
func (m memDisk) flip(off int64) memDisk {
	c := memDisk{}
	for k, v := range m {
		c[k] = bytes.Clone(v)
	}
	s := off / sectorSize
	if c[s] == nil {
		c[s] = make([]byte, sectorSize)
	}
	c[s][off%sectorSize] ^= 1
	return c
}

func writeGPT(t *testing.T, sectors uint64, parts []GPTPartition, code []byte) (memDisk, string) {
	t.Helper()
	disk := memDisk{}
	guid := NewGUID()
	secs, err := EncodeGPT(sectors, guid, parts, code)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		for i := 0; i < len(s.Data); i += sectorSize {
			disk[(s.Offset+int64(i))/sectorSize] = s.Data[i : i+sectorSize]
		}
	}
	return disk, guid
}

// TestGPTRoundTrip writes a table and reads it back: the protective MBR
// (boot code kept), both headers and entry arrays with their CRCs, the
// partitions' types, GUIDs, sectors and names; then a flipped bit in
// either copy is caught.
func TestGPTRoundTrip(t *testing.T) {
	const sectors = 1 << 21 // 1 GiB
	parts := []GPTPartition{
		{Type: GPTTypeBIOSBoot, GUID: NewGUID(), First: 2048, Last: 4095, Name: "BIOS boot partition"},
		{Type: GPTTypeESP, GUID: NewGUID(), First: 4096, Last: 135167, Attributes: 1, Name: "EFI system partition"},
	}
	code := bytes.Repeat([]byte{0x90}, 440)
	disk, guid := writeGPT(t, sectors, parts, code)
	size := int64(sectors * sectorSize)
	g, err := ParseGPT(disk, size)
	if err != nil {
		t.Fatal(err)
	}
	if g.DiskGUID != guid || g.Sectors != sectors || !reflect.DeepEqual(g.Partitions, parts) {
		t.Errorf("parsed %+v, want disk %s, %d sectors, %+v", g, guid, uint64(sectors), parts)
	}
	if !bytes.Equal(disk.at(0, 440), code) {
		t.Error("the MBR's boot code was not kept")
	}
	le := binary.LittleEndian
	// Known encodings: the ESP type GUID on disk (UEFI spec, 5.3.3),
	// the protective entry, the headers' fields.
	if want := []byte{0x28, 0x73, 0x2A, 0xC1, 0x1F, 0xF8, 0xD2, 0x11, 0xBA, 0x4B, 0x00, 0xA0, 0xC9, 0x3E, 0xC9, 0x3B}; !bytes.Equal(disk.at(2*sectorSize+128, 16), want) {
		t.Errorf("ESP type GUID on disk % x, want % x", disk.at(2*sectorSize+128, 16), want)
	}
	if pe := disk.at(446, 16); pe[4] != 0xEE || le.Uint32(pe[8:]) != 1 || le.Uint32(pe[12:]) != sectors-1 || pe[0] != 0 {
		t.Errorf("protective MBR entry % x", pe)
	}
	for _, c := range []struct{ lba, my, alt, entries uint64 }{{1, 1, sectors - 1, 2}, {sectors - 1, sectors - 1, 1, sectors - 33}} {
		h := disk.at(int64(c.lba)*sectorSize, sectorSize)
		if le.Uint64(h[24:]) != c.my || le.Uint64(h[32:]) != c.alt || le.Uint64(h[72:]) != c.entries ||
			le.Uint64(h[40:]) != 34 || le.Uint64(h[48:]) != sectors-34 || le.Uint32(h[8:]) != 0x10000 {
			t.Errorf("header at %d: my %d alt %d entries %d usable %d–%d", c.lba, le.Uint64(h[24:]), le.Uint64(h[32:]), le.Uint64(h[72:]), le.Uint64(h[40:]), le.Uint64(h[48:]))
		}
		hc := bytes.Clone(h[:92])
		le.PutUint32(hc[16:], 0)
		if crc32.ChecksumIEEE(hc) != le.Uint32(h[16:]) {
			t.Errorf("header at %d: CRC", c.lba)
		}
		if crc32.ChecksumIEEE(disk.at(int64(c.entries)*sectorSize, 128*128)) != le.Uint32(h[88:]) {
			t.Errorf("entries at %d: CRC", c.entries)
		}
	}
	for _, c := range []struct {
		off  int64
		want string
	}{
		{sectorSize + 40, "primary GPT header: CRC"},
		{(sectors-1)*sectorSize + 40, "backup GPT header: CRC"},
		{2*sectorSize + 200, "primary GPT entries: CRC"},
		{(sectors-33)*sectorSize + 200, "backup GPT entries: CRC"},
		{446 + 4, "protective MBR"},
	} {
		if _, err := ParseGPT(disk.flip(c.off), size); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bit flipped at %d: %v, want %q", c.off, err, c.want)
		}
	}
}

func TestGPTRefusals(t *testing.T) {
	p := func(first, last uint64) GPTPartition {
		return GPTPartition{Type: GPTTypeESP, GUID: NewGUID(), First: first, Last: last}
	}
	for _, c := range []struct {
		sectors uint64
		parts   []GPTPartition
		code    int
		want    string
	}{
		{1 << 20, []GPTPartition{p(2048, 4095), p(4000, 5000)}, 0, "overlap"},
		{1 << 20, []GPTPartition{p(33, 100)}, 0, "outside"},
		{1 << 20, []GPTPartition{p(2048, 1<<20-34+1)}, 0, "outside"},
		{1 << 20, nil, 441, "boot code"},
		{60, nil, 0, "too small"},
		{1 << 20, []GPTPartition{{Type: "nope", GUID: NewGUID(), First: 2048, Last: 2049}}, 0, "GUID"},
	} {
		if _, err := EncodeGPT(c.sectors, NewGUID(), c.parts, make([]byte, c.code)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("EncodeGPT(%d, %v): %v, want %q", c.sectors, c.parts, err, c.want)
		}
	}
}

func TestGUID(t *testing.T) {
	for range 10 {
		g := NewGUID()
		b, err := guidBytes(g)
		if err != nil || guidString(b[:]) != g || g[14] != '4' || !strings.ContainsRune("89AB", rune(g[19])) {
			t.Errorf("NewGUID %s: bytes % x, back %s, %v", g, b, guidString(b[:]), err)
		}
	}
}
