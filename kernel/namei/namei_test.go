package namei

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

// fakeEnv models the tree: an in-memory root with a share mounted at
// /mnt (mount 1, its mount point in directory 7); the share's "abs" is a
// link to /tmp/x, its "loop" a link to /mnt/loop.
type fakeEnv struct{}

var (
	visits []string
	dones  int
)

func (fakeEnv) Start(dirfd int, path []byte) (Place, abi.Errno) { return At(fs.AtCWD, path), 0 }
func (fakeEnv) Mem(op int, pl *Place, a *Args) (uintptr, abi.Errno) {
	p := string(pl.Path)
	if strings.HasPrefix(p, "/mnt") && pl.D == fs.AtCWD {
		return 0, abi.Errno(fs.ECross)
	}
	visits = append(visits, "mem:"+itoa(pl.D)+":"+p)
	return 0, 0
}
func (fakeEnv) Share(op int, pl *Place, a *Args) (uintptr, abi.Errno) {
	visits = append(visits, "share:"+string(pl.R.Rel))
	var t string
	switch string(pl.R.Rel) {
	case "abs":
		t = "/tmp/x"
	case "loop":
		t = "/mnt/loop"
	default:
		return 0, 0
	}
	pl.R.LinkLen = copy(pl.R.Link, t)
	return 0, ErrMoved
}
func (fakeEnv) Proc(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno) {
	return Place{}, 0, abi.ENOSYS
}
func (fakeEnv) Disk(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno) {
	return Place{}, 0, abi.ENOSYS
}
func (fakeEnv) Cross(d int, path []byte, flags int, rest []byte) (int32, int, fs.Errno) {
	return 1, copy(rest, strings.TrimLeft(strings.TrimPrefix(string(path), "/mnt"), "/")), 0
}
func (fakeEnv) ShareDev(m int32) int { return 0 }
func (fakeEnv) Done(pl *Place)       { dones++ }

func itoa(d int) string {
	if d == fs.AtCWD {
		return "cwd"
	}
	if d == fs.AtIno(7) {
		return "ino7"
	}
	return "?"
}

// TestWalk: the loop crosses into a mount, climbs out of it by "..",
// follows a link out of it through the root, stops a link loop at 40
// moves with ELOOP, and drops every place's references.
func TestWalk(t *testing.T) {
	SetParent(1, 7)
	for _, c := range []struct {
		path  string
		want  []string
		err   abi.Errno
		moves int
	}{
		{"/tmp/a", []string{"mem:cwd:/tmp/a"}, 0, 1},
		{"/mnt/a/b", []string{"share:a/b"}, 0, 2},
		{"/mnt", []string{"share:"}, 0, 2},
		{"/mnt/a/../../tmp", []string{"mem:ino7:tmp"}, 0, 3},
		{"/mnt/..", []string{"mem:ino7:."}, 0, 3},
		{"/mnt/abs", []string{"share:abs", "mem:cwd:/tmp/x"}, 0, 3},
		{"/mnt/loop", nil, abi.Errno(unix.ELOOP), 0},
	} {
		visits, dones = nil, 0
		var a Args
		_, err := Walk[fakeEnv](unix.AT_FDCWD, []byte(c.path), OpStat, &a)
		if err != c.err {
			t.Errorf("%s: %v, want %v", c.path, err, c.err)
			continue
		}
		if c.err != 0 {
			if dones < fs.MaxSymlinks {
				t.Errorf("%s: %d places dropped, want all of the loop's", c.path, dones)
			}
			continue
		}
		if strings.Join(visits, ",") != strings.Join(c.want, ",") || dones != c.moves {
			t.Errorf("%s: visited %q, %d places dropped; want %q, %d", c.path, visits, dones, c.want, c.moves)
		}
	}
}

func TestClimb(t *testing.T) {
	for _, c := range []struct {
		path  string
		depth int
		rest  string
		up    bool
	}{
		{"a/b", 0, "", false},
		{"..", 0, "", true},
		{"../x/y", 0, "x/y", true},
		{"a/../../x", 0, "x", true},
		{"a/../x", 0, "", false},
		{"../x", 1, "", false},
		{"../../x", 1, "x", true},
		{"./..//x", 0, "x", true},
		{"..", -1, "", false},
	} {
		rest, up := Climb([]byte(c.path), c.depth)
		if string(rest) != c.rest || up != c.up {
			t.Errorf("Climb(%q, %d) = %q, %v; want %q, %v", c.path, c.depth, rest, up, c.rest, c.up)
		}
	}
}

func TestFollows(t *testing.T) {
	for _, c := range []struct {
		op, flags int
		want      bool
	}{
		{OpOpen, 0, true}, {OpOpen, unix.O_NOFOLLOW, false}, {OpOpen, unix.O_CREAT, true},
		{OpOpen, unix.O_CREAT | unix.O_EXCL, false}, {OpStat, 0, true}, {OpStat, unix.AT_SYMLINK_NOFOLLOW, false},
		{OpStatfs, 0, true}, {OpChdir, 0, true}, {OpMkdir, 0, false}, {OpUnlink, 0, false}, {OpReadlink, 0, false},
	} {
		if got := Follows(c.op, c.flags); got != c.want {
			t.Errorf("Follows(%d, %#x) = %v", c.op, c.flags, got)
		}
	}
}
