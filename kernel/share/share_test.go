package share

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio"
	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

// The hosted tests: what the share does without a device. The 9P
// client's own tests (drivers/virtio9p) run it against a server over a
// host directory; the calls that reach the host run in the guest
// (kernel/selftest's TestShare*).

// testenv records what the package asks of the kernel.
type testenv struct{ dev int }

var (
	unbacked []string
	logged   strings.Builder
)

func (testenv) Lock()                                   {}
func (testenv) Unlock()                                 {}
func (testenv) Wait(*uint32, uint32)                    {}
func (testenv) Wake(*uint32)                            {}
func (testenv) Copy(dst, src uintptr, n int) bool       { return false }
func (testenv) Post(s, out int) bool                    { return false }
func (testenv) Exchange(s, out, od, id int) (int, bool) { return 0, false }
func (testenv) Page() (uintptr, uint64)                 { return 0, 0 }
func (testenv) Dev(dev int) testenv                     { return testenv{dev} }
func (testenv) Log(s string)                            { logged.WriteString(s) }
func (testenv) Print(s string)                          { logged.WriteString(s) }
func (testenv) PrintBytes(b []byte)                     { logged.Write(b) }
func (testenv) PrintDec(v int64)                        { logged.WriteString(itoa(v)) }
func (testenv) PrintHex(v uint64, digits int)           { fmt.Fprintf(&logged, "0x%0*x", digits, v) }
func (testenv) Ending() bool                            { return false }
func (testenv) Exit()                                   {}
func (testenv) LockFiles()                              {}
func (testenv) UnlockFiles()                            {}
func (testenv) Get(fd int) int                          { return -1 }
func (testenv) Install(h int) (uintptr, abi.Errno)      { return uintptr(h), 0 }
func (testenv) Unback(h int, off int64) {
	if sizesHeld {
		panic("Unback with the sizes lock held: it waits for the areas, which a write-back holds while it waits for the sizes lock")
	}
	unbacked = append(unbacked, string(rune('0'+h))+":"+itoa(off))
}
func (testenv) TakeDirty(a, end uintptr) (uintptr, uintptr) { return end, end }
func (testenv) LockSizes() {
	if sizesHeld {
		panic("the sizes lock taken twice")
	}
	sizesHeld = true
	sizesTaken++
}
func (testenv) UnlockSizes() { sizesHeld = false }

// sizesHeld: the sizes lock is held; sizesTaken: how often it was taken.
var (
	sizesHeld  bool
	sizesTaken int
)

func (testenv) Umask() uint32                         { return 0o022 }
func (testenv) Mount(path []byte, id int32) abi.Errno { return 0 }
func (testenv) CwdEntered()                           {}

func itoa(v int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		if v /= 10; v == 0 {
			return string(b[i:])
		}
	}
}

func TestCleanJoin(t *testing.T) {
	for _, c := range []struct{ base, path, want string }{
		{"/", "a/b", "/a/b"},
		{"/m", "", "/m"},
		{"/m/d", "../x/./y/", "/m/x/y"},
		{"/m", "../../..", "/"},
		{"/m", "/abs/./p", "/abs/p"},
		{"/m/a", "..", "/m"},
		{"/m", ".//.//b", "/m/b"},
	} {
		var b [64]byte
		n := cleanJoin(b[:], copy(b[:], c.base), []byte(c.path))
		if got := string(b[:max(n, 0)]); got != c.want {
			t.Errorf("cleanJoin(%q, %q) = %q, want %q", c.base, c.path, got, c.want)
		}
	}
	var b [8]byte
	if n := cleanJoin(b[:], copy(b[:], "/m"), []byte("toolong")); n != -1 {
		t.Errorf("cleanJoin past the buffer = %d, want -1", n)
	}
}

func TestSplitName(t *testing.T) {
	for _, c := range []struct{ p, dir, name string }{
		{"a", "", "a"},
		{"a/b", "a/", "b"},
		{"a/b//", "a/", "b"},
		{"/", "", ""},
		{"", "", ""},
		{"x/..", "x/", ".."},
	} {
		d, n := splitName([]byte(c.p))
		if string(d) != c.dir || string(n) != c.name {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", c.p, d, n, c.dir, c.name)
		}
	}
}

func TestOptionAndMounts(t *testing.T) {
	var s Shares[testenv]
	for _, o := range []string{"yolk0:/work/src/", "yolk1:/yolk/exe", "bad", ":/x", "t:/", "t:rel"} {
		s.Option([]byte(o))
	}
	if !s.bad {
		t.Error("malformed options were not noted")
	}
	if s.NumMounts() != 2 {
		t.Fatalf("%d mounts, want 2", s.NumMounts())
	}
	if m := s.Mount(0); string(m.Path()) != "/work/src" || string(m.Tag()) != "yolk0" || m.Dev != -1 {
		t.Errorf("mount 0: %q %q dev %d", m.Path(), m.Tag(), m.Dev)
	}
	for _, c := range []struct {
		p    string
		want int
	}{{"/work/src", 0}, {"/work/src/a/b", 0}, {"/work/srcx", -1}, {"/work", -1}, {"/yolk/exe/img", 1}} {
		if got := s.MountOf([]byte(c.p)); got != c.want {
			t.Errorf("MountOf(%q) = %d, want %d", c.p, got, c.want)
		}
	}
	s.Mount(1).Dev = 0
	if s.MountIndex(0) != 1 || s.MountIndex(3) != -1 {
		t.Errorf("MountIndex: %d, %d", s.MountIndex(0), s.MountIndex(3))
	}
	for i := 0; i < MaxShares; i++ {
		s.Option([]byte("more:/m"))
	}
	if s.NumMounts() != MaxShares {
		t.Errorf("%d mounts after too many options, want %d", s.NumMounts(), MaxShares)
	}
}

// entry is one Rreaddir entry.
func entry(path, off uint64, typ uint8, name string) []byte {
	b := []byte{0}
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, path)
	b = binary.LittleEndian.AppendUint64(b, off)
	b = append(b, typ)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

func TestDirents(t *testing.T) {
	names := []string{".", "..", "a", "longer-name.txt", strings.Repeat("n", 255)}
	var in []byte
	for i, n := range names {
		in = append(in, entry(uint64(100+i), uint64(i+1), unix.DT_REG, n)...)
	}
	// Big enough for all: every entry rewritten, in order.
	b := make([]byte, 2*len(in)+64)
	copy(b[len(b)/2:], in)
	out, last, ok := dirents(b, len(in))
	if !ok || last != int64(len(names)) {
		t.Fatalf("dirents: last %d ok %v", last, ok)
	}
	p := b[:out]
	for i, n := range names {
		ino := binary.LittleEndian.Uint64(p)
		off := binary.LittleEndian.Uint64(p[8:])
		rec := int(binary.LittleEndian.Uint16(p[16:]))
		if ino != uint64(100+i) || off != uint64(i+1) || p[18] != unix.DT_REG || rec%8 != 0 {
			t.Fatalf("entry %d: ino %d off %d type %d reclen %d", i, ino, off, p[18], rec)
		}
		if got := string(p[19 : 19+len(n)]); got != n || p[19+len(n)] != 0 {
			t.Fatalf("entry %d: name %q", i, got)
		}
		p = p[rec:]
	}
	if len(p) != 0 {
		t.Errorf("%d bytes past the entries", len(p))
	}
	// A buffer whose half is just the first entry: only entries that
	// fit, never over one not yet read.
	first := entry(1, 1, unix.DT_DIR, "x")
	two := append(append([]byte{}, first...), entry(2, 2, unix.DT_DIR, "y")...)
	b = make([]byte, 2*len(first))
	copy(b[len(b)/2:], two[:len(first)])
	out, last, ok = dirents(b, len(first))
	if !ok || last != 1 || out != 24 {
		t.Errorf("one entry: out %d last %d ok %v", out, last, ok)
	}
	// Only part of an entry: nothing written (Getdents says EINVAL).
	b = make([]byte, len(first)+8)
	copy(b[len(b)/2:], first)
	if out, _, ok = dirents(b, len(b)-len(b)/2); out != 0 || ok {
		t.Errorf("no room: out %d ok %v", out, ok)
	}
}

func TestSetattrs(t *testing.T) {
	a := setTimes([2]int64{fs.UtimeNow, 3_500_000_000})
	if a.Valid != virtio9p.SetAtime|virtio9p.SetMtime|virtio9p.SetMtimeSet || a.Mtime != 3 || a.MtimeNs != 500_000_000 || a.Atime != 0 {
		t.Errorf("setTimes(now, 3.5s) = %+v", a)
	}
	if a := setTimes([2]int64{fs.UtimeOmit, fs.UtimeOmit}); a.Valid != 0 {
		t.Errorf("setTimes(omit, omit) = %+v", a)
	}
	if a := owner(-1, 7); a.Valid != virtio9p.SetGID || a.GID != 7 {
		t.Errorf("owner(-1, 7) = %+v", a)
	}
	var st unix.Stat_t
	fillStat(&st, 2, &virtio9p.Attr{Qid: virtio9p.Qid{Path: 42}, Mode: unix.S_IFREG | 0o644, Nlink: 3, Size: 9, Blksize: 4096, Mtime: 5, MtimeNs: 6})
	if st.Dev != 0x9002 || st.Ino != 42 || st.Nlink != 3 || st.Size != 9 || st.Blksize != 4096 || st.Mtim.Sec != 5 || st.Mtim.Nsec != 6 {
		t.Errorf("fillStat: %+v", st)
	}
}

// TestResized: the size faults are judged by follows the program's
// changes, for every open file of the host file and only while mapped;
// a shrink takes the pages past the new end (Env.Unback).
func TestResized(t *testing.T) {
	var s Shares[testenv]
	s.files[1] = File{Used: true, Refs: 1, Dev: 0, Qpath: 7, Size: 8192}
	s.files[2] = File{Used: true, Refs: 1, Dev: 0, Qpath: 7, Size: 8192}
	s.files[3] = File{Used: true, Refs: 1, Dev: 1, Qpath: 7, Size: 8192} // another share
	s.files[4] = File{Used: true, Refs: 1, Dev: 0, Qpath: 7, Dir: true}  // a directory
	unbacked = nil
	s.Resized(0, 7, 100, true)
	if s.files[1].Size != 8192 || len(unbacked) != 0 {
		t.Fatal("resized with nothing mapped")
	}
	s.MapRefs = 1
	sizesTaken = 0
	s.Resized(0, 7, 100, true) // truncate: exact
	if sizesTaken != 1 || sizesHeld {
		t.Errorf("the sizes lock taken %d times, held after: %v", sizesTaken, sizesHeld)
	}
	if s.files[1].Size != 100 || s.files[2].Size != 100 || s.files[3].Size != 8192 || s.files[4].Size != 0 {
		t.Errorf("after truncate: %d %d %d %d", s.files[1].Size, s.files[2].Size, s.files[3].Size, s.files[4].Size)
	}
	if strings.Join(unbacked, " ") != "1:4096 2:4096" {
		t.Errorf("unbacked %q", unbacked)
	}
	unbacked = nil
	s.Resized(0, 7, 50, false) // a write below the end: no change
	s.Resized(0, 7, 9000, false)
	if s.files[1].Size != 9000 || len(unbacked) != 0 {
		t.Errorf("after growth: %d, unbacked %q", s.files[1].Size, unbacked)
	}
	if s.files[1].Refs != 1 || s.closing != 0 {
		t.Errorf("references: %d, closing %d", s.files[1].Refs, s.closing)
	}
}

// TestFiles: flags, seek without the host, references.
func TestFiles(t *testing.T) {
	var s Shares[testenv]
	s.files[0] = File{Used: true, Refs: 2, Flags: unix.O_RDONLY | unix.O_CREAT | unix.O_CLOEXEC}
	if fl, _ := s.Getfl(0); fl != unix.O_RDONLY {
		t.Errorf("Getfl = %#x", fl)
	}
	s.Setfl(0, unix.O_APPEND|unix.O_NONBLOCK|unix.O_WRONLY)
	if fl, _ := s.Getfl(0); fl != unix.O_APPEND|unix.O_NONBLOCK {
		t.Errorf("Getfl after Setfl = %#x", fl)
	}
	if pos, e := s.Seek(0, 10, unix.SEEK_SET); pos != 10 || e != 0 {
		t.Errorf("SEEK_SET: %d %d", pos, e)
	}
	if pos, e := s.Seek(0, -4, unix.SEEK_CUR); pos != 6 || e != 0 {
		t.Errorf("SEEK_CUR: %d %d", pos, e)
	}
	if _, e := s.Seek(0, -7, unix.SEEK_CUR); e != abi.EINVAL {
		t.Errorf("SEEK_CUR before 0: %d", e)
	}
	if _, e := s.RW(0, make([]byte, 1), -1, true); e != abi.EBADF {
		t.Errorf("write on O_RDONLY: %d", e)
	}
	if e := s.Ftruncate(0, 0); e != abi.EINVAL {
		t.Errorf("ftruncate on O_RDONLY: %d", e)
	}
	s.files[1] = File{Used: true, Refs: 1, Dir: true}
	if _, e := s.Getdents(0, make([]byte, 64)); e != abi.Errno(unix.ENOTDIR) {
		t.Errorf("getdents of a file: %d", e)
	}
	if _, e := s.RW(1, make([]byte, 1), 0, false); e != abi.Errno(unix.EISDIR) {
		t.Errorf("read of a directory: %d", e)
	}
	if _, e := s.Seek(1, 0, unix.SEEK_END); e != abi.EINVAL {
		t.Errorf("SEEK_END on a directory: %d", e)
	}
	var b [16]byte
	if _, e := s.FchdirPath(0, b[:]); e != abi.Errno(unix.ENOTDIR) {
		t.Errorf("fchdir to a file: %d", e)
	}
	if _, e := s.FchdirPath(1, b[:]); e != abi.EINVAL {
		t.Errorf("fchdir to a directory without its path: %d", e)
	}
	s.dirPaths[0].owner = 2
	s.dirPaths[0].n = copy(s.dirPaths[0].p[:], "/m/d")
	if n, e := s.FchdirPath(1, b[:]); e != 0 || string(b[:n]) != "/m/d" {
		t.Errorf("fchdir to a kept path: %q %d", b[:n], e)
	}
	s.dirForget(1)
	if s.DirPath(1, b[:]) != -1 {
		t.Error("the path slot outlived its file")
	}
	s.Unref(0)
	if s.closing != 0 || s.dead[0] {
		t.Error("a file with references left marked for its clunk")
	}
	s.Unref(0)
	if s.closing != 1 || !s.dead[0] {
		t.Error("the last reference did not mark the file")
	}
}

func TestGetcwd(t *testing.T) {
	var s Shares[testenv]
	if _, _, on := s.Getcwd(make([]byte, 8)); on {
		t.Error("Getcwd on with no share's working directory")
	}
	s.cwd.on = true
	s.cwd.plen = copy(s.cwd.path[:], "/m/dir")
	if _, e, _ := s.Getcwd(make([]byte, 6)); e != abi.Errno(unix.ERANGE) {
		t.Errorf("short buffer: %d", e)
	}
	b := make([]byte, 16)
	if n, e, on := s.Getcwd(b); n != 7 || e != 0 || !on || string(b[:n]) != "/m/dir\x00" {
		t.Errorf("Getcwd = %d %d %v %q", n, e, on, b[:n])
	}
	if string(s.CwdPath()) != "/m/dir" {
		t.Errorf("CwdPath = %q", s.CwdPath())
	}
}

// TestSharesFull: a virtio-9p device beyond MaxShares is not used, and
// the console says which (its transport, address and line).
func TestSharesFull(t *testing.T) {
	var s Shares[testenv]
	s.n = MaxShares
	logged.Reset()
	if ok, e := s.Attach(virtio.Device{}, "pci", 0x30, 10); ok || e != virtio.OK {
		t.Errorf("Attach of a fifth share = %v, %v", ok, e)
	}
	if want := "share: virtio-9p (pci 0x30, irq 10) not used: more than 4 virtio-9p devices\n"; logged.String() != want {
		t.Errorf("console %q, want %q", logged.String(), want)
	}
}
