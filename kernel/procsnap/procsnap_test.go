package procsnap

// Hosted tests of the fill's parts that reach the kernel only through
// Env: the in-memory file system's walk for paths (here the host's own
// file system under a temporary directory, through the same calls), the
// descriptors, the mounts and the shares' paths, the load average and
// the limits. The scheduler's and mm's parts need the kernel (the
// guest's TestProcfs).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
	"yolk/kernel/net"
	"yolk/kernel/procfs"
)

// testEnv is an Env over the host: its file system is the directory
// open as root (a descriptor: the Env is a value without pointers), its
// descriptors and shares the tables below.
type testEnv struct{ root int }

var (
	testFDs    []procfs.FD // by descriptor; Kind 0 and FD -1: closed
	testWants  []uint64    // inodes each FD call asks paths for
	testShares []struct {
		dev        int
		point, tag string
	}
	testState  *State[testEnv] // WantIno's
	testIfaces net.Ifaces      // Iface's
)

func (testEnv) Now() int64                        { return 0 }
func (testEnv) WallBase() int64                   { return 0 }
func (testEnv) Hostname() string                  { return "yolk" }
func (testEnv) Exe() []byte                       { return nil }
func (testEnv) Args() (int, []byte)               { return 0, nil }
func (testEnv) Image() (lo, ro, bss, end uintptr) { return 0, 0, 0, 0 }
func (testEnv) Stack() (top, size uintptr)        { return 0, 0 }
func (testEnv) Umask() uint32                     { return 0o22 }
func (testEnv) Files() int                        { return len(testFDs) }
func (testEnv) SigActions() (uint64, uint64)      { return 0, 0 }
func (testEnv) SigThread(int) (uint64, uint64)    { return 0, 0 }
func (testEnv) Cwd(*procfs.Snapshot, []byte) (int, bool) {
	return 0, false
}
func (testEnv) ShareArea(*procfs.Snapshot, *procfs.Area) {}
func (testEnv) FilePages() int64                         { return 0 }
func (testEnv) APICID(int) uint32                        { return 0 }
func (testEnv) XCR0() uint64                             { return 7 }
func (testEnv) HWCap() uint64                            { return 0 }

func (testEnv) Iface(i int, p *net.Iface) bool {
	if i >= testIfaces.N {
		return false
	}
	*p = testIfaces.If[i]
	return true
}

func (testEnv) FD(fd int, s *procfs.Snapshot, d *procfs.FD) bool {
	if testFDs[fd].FD < 0 {
		return false
	}
	*d = testFDs[fd]
	if d.Kind == procfs.FDFile && d.MntID == MntRoot && d.Path.Len == 0 {
		testState.WantIno(d.Ino)
	}
	return true
}

func (testEnv) Disk(i int) (uint64, []byte, []byte, bool, bool, bool) {
	return 0, nil, nil, false, false, false
}
func (testEnv) Share(i int) (int, []byte, []byte, bool) {
	if i >= len(testShares) {
		return 0, nil, nil, false
	}
	return testShares[i].dev, []byte(testShares[i].point), []byte(testShares[i].tag), true
}

func (e testEnv) FSRootIno() (uint64, bool) {
	var st unix.Stat_t
	if unix.Fstat(e.root, &st) != nil {
		return 0, false
	}
	return st.Ino, true
}

func (e testEnv) FSOpen(dir int, path []byte, flags int) (int, fs.Errno) {
	p := string(path)
	if dir == fs.AtCWD {
		dir, p = e.root, "."+p
	}
	h, err := unix.Openat(dir, p, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fs.Errno(err.(unix.Errno))
	}
	return h, 0
}

func (testEnv) FSGetdents(h int, b []byte) int {
	n, err := unix.Getdents(h, b)
	if err != nil {
		return 0
	}
	return n
}

func (testEnv) FSClose(h int) { unix.Close(h) }

// newState is a State over the tree dir.
func newState(t *testing.T, dir string) (*State[testEnv], *procfs.Snapshot) {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	st := &State[testEnv]{env: testEnv{root}}
	testState = st
	return st, &st.s
}

func ino(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// tree makes files (a trailing slash: a directory) under a new
// directory.
func tree(t *testing.T, files ...string) string {
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f)
		d := filepath.Dir(p)
		if strings.HasSuffix(f, "/") {
			d = p
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if d == p {
			continue
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFSNames(t *testing.T) {
	dir := tree(t, "dev/null", "tmp/a", "tmp/deep/er/still/x", "b", ".hidden/y", "empty/")
	st, s := newState(t, dir)
	s.Reset()
	want := map[uint64]string{}
	for _, p := range []string{"dev/null", "tmp/a", "tmp/deep/er/still/x", "b", ".hidden/y", "empty", "tmp/deep", ""} {
		i := ino(t, filepath.Join(dir, p))
		want[i] = "/" + p
		st.WantIno(i)
		st.WantIno(i) // once
	}
	st.WantIno(1 << 60) // no such inode: "/"
	if st.nwant != len(want)+1 {
		t.Fatalf("%d wanted, want %d", st.nwant, len(want)+1)
	}
	st.fsNames(s)
	for i, p := range want {
		if got := string(s.Bytes(st.pathOf(s, i))); got != p {
			t.Errorf("inode %d: %q, want %q", i, got, p)
		}
	}
	if got := string(s.Bytes(st.pathOf(s, 1<<60))); got != "/" {
		t.Errorf("missing inode: %q", got)
	}

	// Found at once when all are near the root: the walk stops there.
	st.nwant = 0
	st.WantIno(ino(t, filepath.Join(dir, "b")))
	st.fsNames(s)
	if !st.want[0].found || st.missing() {
		t.Error("b not found")
	}
}

func TestFillFDs(t *testing.T) {
	dir := tree(t, "dev/zero", "tmp/f")
	st, s := newState(t, dir)
	s.Reset()
	closed := procfs.FD{FD: -1}
	testFDs = []procfs.FD{
		{FD: 0, Kind: procfs.FDConsole, MntID: MntDev, Ino: 5},
		closed,
		{FD: 2, Kind: procfs.FDFile, MntID: MntRoot, Ino: ino(t, filepath.Join(dir, "dev/zero"))},
		{FD: 3, Kind: procfs.FDFile, MntID: MntRoot, Ino: ino(t, filepath.Join(dir, "tmp/f")), Pos: 7},
		{FD: 4, Kind: procfs.FDPipe, MntID: MntPipe, Ino: 99},
		closed,
	}
	t.Cleanup(func() { testFDs = nil })
	st.fillFDs(s)
	if s.NumFDs != 4 {
		t.Fatalf("%d descriptors, want 4", s.NumFDs)
	}
	for i, w := range []struct {
		fd   int32
		mnt  int32
		path string
	}{{0, MntDev, ""}, {2, MntDev, "/dev/zero"}, {3, MntRoot, "/tmp/f"}, {4, MntPipe, ""}} {
		d := &s.FDs[i]
		if d.FD != w.fd || d.MntID != w.mnt || string(s.Bytes(d.Path)) != w.path {
			t.Errorf("fd %d: fd %d, mount %d, path %q; want %d, %d, %q", i, d.FD, d.MntID, s.Bytes(d.Path), w.fd, w.mnt, w.path)
		}
	}
}

// TestFillNet: the interfaces as kernel/net's table holds them (lo, and
// eth0 with an IPv4 address, its link-local and a global IPv6 address):
// index, name, flags and the IPv6 addresses in the table's order (global
// first), the IPv4 ones left out.
func TestFillNet(t *testing.T) {
	st, s := newState(t, t.TempDir())
	testIfaces.Init()
	t.Cleanup(func() { testIfaces = net.Ifaces{} })
	eth := testIfaces.AddEthernet("eth0", [6]byte{2, 0xfc, 0, 0, 0, 1}, 1500)
	testIfaces.AddAddr4(eth, [4]byte{10, 0, 2, 15}, 24)
	testIfaces.AddLinkLocal6(eth)
	global := [16]byte{0: 0xfd, 15: 2}
	testIfaces.AddAddr6(eth, global, 64)
	s.Reset()
	st.Fill(s, procfs.PartNet)
	if s.NumIfaces != 2 {
		t.Fatalf("%d interfaces, want 2", s.NumIfaces)
	}
	lo, e := &s.Ifaces[0], &s.Ifaces[1]
	if lo.Index != 1 || string(lo.Name[:3]) != "lo\x00" || lo.Flags&unix.IFF_LOOPBACK == 0 || lo.NAddr6 != 1 || lo.Addr6[0] != [16]byte{15: 1} {
		t.Errorf("lo = %+v", *lo)
	}
	ll := [16]byte{0: 0xfe, 1: 0x80, 8: 0, 9: 0xfc, 10: 0, 11: 0xff, 12: 0xfe, 13: 0, 14: 0, 15: 1}
	if e.Index != int32(eth) || string(e.Name[:5]) != "eth0\x00" || e.Flags&unix.IFF_UP == 0 || e.NAddr6 != 2 || e.Addr6[0] != global || e.Addr6[1] != ll {
		t.Errorf("eth0 = %+v", *e)
	}
	s.Reset()
	if s.NumIfaces != 0 {
		t.Errorf("Reset left %d interfaces", s.NumIfaces)
	}
}

func TestMountsShares(t *testing.T) {
	st, s := newState(t, t.TempDir())
	s.Reset()
	testShares = []struct {
		dev        int
		point, tag string
	}{{0, "/go", "share0"}, {-1, "/lost", "share1"}, {2, "/data", "share2"}}
	t.Cleanup(func() { testShares = nil })
	st.fillMounts(s)
	if s.NumMounts != 7 {
		t.Fatalf("%d mounts, want 7", s.NumMounts)
	}
	for i, w := range []struct {
		id          int32
		point, typ  string
		parent      int32
		major, minr uint32
	}{{MntRoot, "/", "tmpfs", MntRoot, 0, fs.Dev}, {MntDev, "/dev", "tmpfs", MntRoot, 0, fs.Dev}, {MntProc, "/proc", "proc", MntRoot, 0, fs.Dev + 1},
		{MntSys, "/sys", "sysfs", MntRoot, 0, fs.Dev + 2}, {MntCgroup, "/sys/fs/cgroup", "cgroup2", MntSys, 0, fs.Dev + 3},
		{MntShare, "/go", "9p", MntRoot, 0x90, 0}, {MntShare + 2, "/data", "9p", MntRoot, 0x90, 2}} {
		m := &s.Mounts[i]
		if m.ID != w.id || string(s.Bytes(m.Point)) != w.point || string(s.Bytes(m.Type)) != w.typ || m.Parent != w.parent || m.Major != w.major || m.Minor != w.minr {
			t.Errorf("mount %d: %+v (%q %q), want %+v", i, *m, s.Bytes(m.Point), s.Bytes(m.Type), w)
		}
	}

	// A share file's path: its directory's kept path, else its share's
	// guest path; the first share's if no device matches.
	for _, c := range []struct {
		dev       int
		dir, path string
		id        int32
	}{{2, "", "/data", MntShare + 2}, {2, "/data/sub", "/data/sub", MntShare + 2}, {0, "", "/go", MntShare}, {7, "", "/go", MntShare}} {
		id, p := st.SharePath(s, c.dev, []byte(c.dir))
		if id != c.id || string(s.Bytes(p)) != c.path {
			t.Errorf("dev %d dir %q: %d %q, want %d %q", c.dev, c.dir, id, s.Bytes(p), c.id, c.path)
		}
	}
}

func TestLoadAvg(t *testing.T) {
	var st State[testEnv]
	// Nothing before the first period ends.
	st.loadAvg(procfs.LoadFreqNS-1, 3)
	if st.load != [3]uint64{} || st.loadAt != 0 {
		t.Fatalf("early: %v at %d", st.load, st.loadAt)
	}
	// One step per period since the last, as calc_load.
	var want [3]uint64
	for range 3 {
		procfs.UpdateLoad(&want, 2)
	}
	st.loadAvg(3*procfs.LoadFreqNS+5, 2)
	if st.load != want || st.loadAt != 3*procfs.LoadFreqNS {
		t.Errorf("3 periods: %v at %d, want %v", st.load, st.loadAt, want)
	}
	// After long idle the old average is gone: the active count.
	st.loadAvg(2000*procfs.LoadFreqNS, 1)
	if st.load != [3]uint64{procfs.Fixed1, procfs.Fixed1, procfs.Fixed1} || st.loadAt != 2000*procfs.LoadFreqNS {
		t.Errorf("after idle: %v at %d", st.load, st.loadAt)
	}
}

func TestRlimit(t *testing.T) {
	for res, want := range map[int][2]uint64{
		unix.RLIMIT_NOFILE: {1024, 1024}, unix.RLIMIT_STACK: {8 << 20, procfs.Inf}, unix.RLIMIT_AS: {procfs.Inf, procfs.Inf},
	} {
		if c, m := Rlimit(res, 1024); c != want[0] || m != want[1] {
			t.Errorf("resource %d: %d %d, want %v", res, c, m, want)
		}
	}
}
