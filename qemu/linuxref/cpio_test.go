package linuxref

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// cpioEntry is one entry as read back by parseNewc.
type cpioEntry struct {
	name                         string
	ino, mode, nlink, rmaj, rmin uint32
	uid, gid, mtime, dmaj, dmin  uint32
	data                         []byte
}

// parseNewc is an independent reader of the newc format, written from the
// format's description (kernel's Documentation/driver-api/early-userspace/
// buffer-format.rst): it checks the magic, the field syntax, the name's NUL,
// the zero padding and the trailer, and returns the entries before it.
func parseNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	for {
		if off%4 != 0 {
			t.Fatalf("entry at %d not 4-aligned", off)
		}
		if len(b)-off < 110 {
			t.Fatalf("truncated header at %d", off)
		}
		h := b[off : off+110]
		if string(h[:6]) != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		var f [13]uint32
		for i := range f {
			s := string(h[6+8*i : 14+8*i])
			v, err := strconv.ParseUint(s, 16, 32)
			if err != nil {
				t.Fatalf("field %d %q at %d: %v", i, s, off, err)
			}
			f[i] = uint32(v)
		}
		namesize, size := int(f[11]), int(f[6])
		if f[12] != 0 {
			t.Fatalf("check field %#x, want 0", f[12])
		}
		nameEnd := off + 110 + namesize
		if namesize < 2 || nameEnd > len(b) || b[nameEnd-1] != 0 {
			t.Fatalf("bad name (size %d) at %d", namesize, off)
		}
		name := string(b[off+110 : nameEnd-1])
		dataOff := nameEnd + (4-nameEnd%4)%4
		if !allZero(b[nameEnd:dataOff]) {
			t.Fatalf("%s: non-zero name padding", name)
		}
		end := dataOff + size
		next := end + (4-end%4)%4
		if next > len(b) {
			t.Fatalf("%s: data runs past the archive", name)
		}
		if !allZero(b[end:next]) {
			t.Fatalf("%s: non-zero data padding", name)
		}
		if name == "TRAILER!!!" {
			if next != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-next)
			}
			return out
		}
		out = append(out, cpioEntry{
			name: name, ino: f[0], mode: f[1], uid: f[2], gid: f[3], nlink: f[4], mtime: f[5],
			dmaj: f[7], dmin: f[8], rmaj: f[9], rmin: f[10], data: b[dataOff:end],
		})
		off = next
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func TestCPIORoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewCPIOWriter(&buf)
	// Names and data of every length modulo 4 exercise both paddings.
	type want struct {
		name string
		mode uint32
		data []byte
	}
	var wants []want
	if err := w.Dir("/dev", 0o755); err != nil {
		t.Fatal(err)
	}
	wants = append(wants, want{"dev", ModeDir | 0o755, nil})
	if err := w.CharDev("dev/console", 0o600, 5, 1); err != nil {
		t.Fatal(err)
	}
	wants = append(wants, want{"dev/console", ModeCharDev | 0o600, nil})
	for n := 0; n < 9; n++ {
		name := fmt.Sprintf("f%s", bytes.Repeat([]byte("x"), n))
		data := bytes.Repeat([]byte{byte('a' + n)}, n*3)
		if err := w.File(name, 0o644, data); err != nil {
			t.Fatal(err)
		}
		wants = append(wants, want{name, ModeRegular | 0o644, data})
	}
	if err := w.File("init", 0o4755|0o170000, []byte("\x7fELF")); err != nil {
		t.Fatal(err)
	}
	// Type bits in perm are dropped; setuid is kept.
	wants = append(wants, want{"init", ModeRegular | 0o4755, []byte("\x7fELF")})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d not a multiple of 4", buf.Len())
	}

	got := parseNewc(t, buf.Bytes())
	if len(got) != len(wants) {
		t.Fatalf("%d entries, want %d", len(got), len(wants))
	}
	for i, e := range got {
		wn := wants[i]
		if e.name != wn.name || e.mode != wn.mode || !bytes.Equal(e.data, wn.data) {
			t.Errorf("entry %d = %q mode %#o %d bytes, want %q mode %#o %d bytes",
				i, e.name, e.mode, len(e.data), wn.name, wn.mode, len(wn.data))
		}
		if e.ino != uint32(i+1) {
			t.Errorf("%s: ino %d, want %d", e.name, e.ino, i+1)
		}
		if e.uid != 0 || e.gid != 0 || e.mtime != 0 || e.dmaj != 0 || e.dmin != 0 {
			t.Errorf("%s: uid %d gid %d mtime %d dev %d:%d, want all 0", e.name, e.uid, e.gid, e.mtime, e.dmaj, e.dmin)
		}
		wantLinks := uint32(1)
		if e.mode&0o170000 == ModeDir {
			wantLinks = 2
		}
		if e.nlink != wantLinks {
			t.Errorf("%s: nlink %d, want %d", e.name, e.nlink, wantLinks)
		}
		wantRdev := [2]uint32{}
		if e.name == "dev/console" {
			wantRdev = [2]uint32{5, 1}
		}
		if [2]uint32{e.rmaj, e.rmin} != wantRdev {
			t.Errorf("%s: rdev %d:%d, want %d:%d", e.name, e.rmaj, e.rmin, wantRdev[0], wantRdev[1])
		}
	}
}

// TestCPIOExactBytes pins one entry and the trailer byte for byte.
func TestCPIOExactBytes(t *testing.T) {
	var buf bytes.Buffer
	w := NewCPIOWriter(&buf)
	if err := w.File("ab", 0o755, []byte("xyz")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "070701" + "00000001" + "000081ed" + "00000000" + "00000000" + "00000001" + "00000000" +
		"00000003" + "00000000" + "00000000" + "00000000" + "00000000" + "00000003" + "00000000" +
		"ab\x00" + "\x00\x00\x00" + // 110+3 bytes, padded to 116
		"xyz\x00" +
		"070701" + "00000000" + "00000000" + "00000000" + "00000000" + "00000001" + "00000000" +
		"00000000" + "00000000" + "00000000" + "00000000" + "00000000" + "0000000b" + "00000000" +
		"TRAILER!!!\x00" + "\x00\x00\x00" // 110+11 bytes, padded to 124
	if got := buf.String(); got != want {
		t.Errorf("archive\n%q\nwant\n%q", got, want)
	}
}

func TestCPIOErrors(t *testing.T) {
	var buf bytes.Buffer
	w := NewCPIOWriter(&buf)
	if err := w.File("", 0o644, nil); err == nil {
		t.Error("empty name accepted")
	}
	if err := w.File("ok", 0o644, nil); err == nil {
		t.Error("an error is not sticky: write after a failed write succeeded")
	}
	w = NewCPIOWriter(&buf)
	if err := w.File("a\x00b", 0o644, nil); err == nil {
		t.Error("name with NUL accepted")
	}
	w = NewCPIOWriter(&buf)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.File("late", 0o644, nil); err == nil {
		t.Error("write after Close accepted")
	}
}

func TestWriteInitramfs(t *testing.T) {
	init, prog := []byte("\x7fELF fake init"), []byte("\x7fELF fake program")
	mods := []Module{{"virtio", []byte("ko 1")}, {"9p", []byte("ko 2")}}
	var buf bytes.Buffer
	if err := WriteInitramfs(&buf, init, prog, mods); err != nil {
		t.Fatal(err)
	}
	got := parseNewc(t, buf.Bytes())
	names := map[string]cpioEntry{}
	for _, e := range got {
		names[e.name] = e
	}
	if e, ok := names["init"]; !ok || e.mode != ModeRegular|0o755 || !bytes.Equal(e.data, init) {
		t.Errorf("/init missing, not executable or wrong contents: %+v", e)
	}
	if e, ok := names["program"]; !ok || "/"+e.name != ProgramPath || e.mode != ModeRegular|0o755 || !bytes.Equal(e.data, prog) {
		t.Errorf("/program missing, not executable or wrong contents: %+v", e)
	}
	for _, m := range mods {
		if e := names["lib/modules/"+m.Name+".ko"]; !bytes.Equal(e.data, m.Data) {
			t.Errorf("module %s: %+v", m.Name, e)
		}
	}
	if e := names["lib/modules/order"]; "/"+e.name != ModuleOrder || string(e.data) != "virtio.ko\n9p.ko\n" {
		t.Errorf("module order: %+v", e)
	}
	for i, e := range got {
		if e.name == "lib/modules" && (i == 0 || got[i-1].name != "lib") {
			t.Error("lib/modules not right after lib")
		}
	}
	buf.Reset()
	WriteInitramfs(&buf, init, prog, nil)
	for _, e := range parseNewc(t, buf.Bytes()) {
		if strings.HasPrefix(e.name, "lib") {
			t.Errorf("no modules, yet %s", e.name)
		}
	}
	if e, ok := names["dev/console"]; !ok || e.mode&0o170000 != ModeCharDev || e.rmaj != 5 || e.rmin != 1 {
		t.Errorf("/dev/console missing or not char 5:1: %+v", e)
	}
	if e, ok := names["dev"]; !ok || e.mode&0o170000 != ModeDir {
		t.Errorf("/dev missing or not a directory")
	}
	// The parent directory comes before its entries, as Linux unpacks in order.
	for i, e := range got {
		if e.name == "dev" {
			for _, f := range got[:i] {
				if f.name == "dev/console" {
					t.Error("dev/console precedes dev")
				}
			}
		}
	}
}
