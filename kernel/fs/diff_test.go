package fs

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The differential test: the same random sequence of operations on this
// file system and on the host's (Linux) in t.TempDir(), through *at
// calls relative to a directory, comparing results and errnos.

type statInfo struct {
	mode  uint32
	nlink uint64
	size  int64
}

type sysOps interface {
	open(path string, flags int, mode uint32) (int, Errno)
	close(fd int) Errno
	read(fd, n int) (string, Errno)
	write(fd int, s string) (int, Errno)
	pread(fd, n int, off int64) (string, Errno)
	pwrite(fd int, s string, off int64) (int, Errno)
	seek(fd int, off int64, whence int) (int64, Errno)
	ftruncate(fd int, n int64) Errno
	truncate(path string, n int64) Errno
	mkdir(path string, mode uint32) Errno
	unlink(path string, flags int) Errno
	rename(a, b string, flags int) Errno
	symlink(target, path string) Errno
	readlink(path string, n int) (string, Errno)
	stat(path string, flags int) (statInfo, Errno)
	fstat(fd int) (statInfo, Errno)
	chmod(path string, mode uint32) Errno
	readdir(fd int) ([]string, Errno)
	link(a, b string, flags int) Errno
	mknod(path string, mode uint32) Errno
	fallocate(fd, mode int, off, n int64) Errno
}

func errno(err error) Errno {
	if err == nil {
		return 0
	}
	return err.(unix.Errno)
}

func info(st *unix.Stat_t) statInfo {
	i := statInfo{mode: st.Mode, nlink: uint64(st.Nlink), size: st.Size}
	if isDir(st.Mode) {
		i.size = 0 // differs between file systems
	}
	return i
}

func parseNames(buf []byte) []string {
	var names []string
	for len(buf) > 0 {
		reclen := int(buf[16]) | int(buf[17])<<8
		name := buf[19:reclen]
		if i := strings.IndexByte(string(name), 0); i >= 0 {
			name = name[:i]
		}
		names = append(names, string(name))
		buf = buf[reclen:]
	}
	return names
}

type hostOps struct{ dir int }

func (h hostOps) open(p string, fl int, m uint32) (int, Errno) {
	fd, err := unix.Openat(h.dir, p, fl|unix.O_CLOEXEC, m)
	return fd, errno(err)
}
func (h hostOps) close(fd int) Errno { return errno(unix.Close(fd)) }
func (h hostOps) read(fd, n int) (string, Errno) {
	b := make([]byte, n)
	n, err := unix.Read(fd, b)
	return string(b[:max(n, 0)]), errno(err)
}
func (h hostOps) write(fd int, s string) (int, Errno) {
	n, err := unix.Write(fd, []byte(s))
	return n, errno(err)
}
func (h hostOps) pread(fd, n int, off int64) (string, Errno) {
	b := make([]byte, n)
	n, err := unix.Pread(fd, b, off)
	return string(b[:max(n, 0)]), errno(err)
}
func (h hostOps) pwrite(fd int, s string, off int64) (int, Errno) {
	n, err := unix.Pwrite(fd, []byte(s), off)
	return n, errno(err)
}
func (h hostOps) seek(fd int, off int64, wh int) (int64, Errno) {
	o, err := unix.Seek(fd, off, wh)
	return o, errno(err)
}
func (h hostOps) ftruncate(fd int, n int64) Errno { return errno(unix.Ftruncate(fd, n)) }
func (h hostOps) truncate(p string, n int64) Errno {
	// No truncateat: go through /proc/self/fd.
	return errno(unix.Truncate(fmt.Sprintf("/proc/self/fd/%d/%s", h.dir, p), n))
}
func (h hostOps) mkdir(p string, m uint32) Errno { return errno(unix.Mkdirat(h.dir, p, m)) }
func (h hostOps) unlink(p string, fl int) Errno  { return errno(unix.Unlinkat(h.dir, p, fl)) }
func (h hostOps) symlink(target, p string) Errno { return errno(unix.Symlinkat(target, h.dir, p)) }
func (h hostOps) chmod(p string, m uint32) Errno { return errno(unix.Fchmodat(h.dir, p, m, 0)) }
func (h hostOps) rename(a, b string, fl int) Errno {
	return errno(unix.Renameat2(h.dir, a, h.dir, b, uint(fl)))
}
func (h hostOps) link(a, c string, fl int) Errno {
	return errno(unix.Linkat(h.dir, a, h.dir, c, fl))
}
func (h hostOps) mknod(p string, m uint32) Errno { return errno(unix.Mknodat(h.dir, p, m, 0)) }
func (h hostOps) fallocate(fd, m int, off, n int64) Errno {
	return errno(unix.Fallocate(fd, uint32(m), off, n))
}
func (h hostOps) readlink(p string, n int) (string, Errno) {
	b := make([]byte, n)
	n, err := unix.Readlinkat(h.dir, p, b)
	return string(b[:max(n, 0)]), errno(err)
}
func (h hostOps) stat(p string, fl int) (statInfo, Errno) {
	var st unix.Stat_t
	if err := unix.Fstatat(h.dir, p, &st, fl); err != nil {
		return statInfo{}, errno(err)
	}
	return info(&st), 0
}
func (h hostOps) fstat(fd int) (statInfo, Errno) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return statInfo{}, errno(err)
	}
	return info(&st), 0
}
func (h hostOps) readdir(fd int) ([]string, Errno) {
	var names []string
	buf := make([]byte, 100)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n == 0 {
			slices.Sort(names)
			return names, errno(err)
		}
		names = append(names, parseNames(buf[:n])...)
	}
}

type fsOps struct {
	f   *testFS
	dir int
}

func (o fsOps) open(p string, fl int, m uint32) (int, Errno) { return o.f.Open(o.dir, b(p), fl, m) }
func (o fsOps) close(fd int) Errno                           { return o.f.Close(fd) }
func (o fsOps) read(fd, n int) (string, Errno) {
	buf := make([]byte, n)
	n, e := o.f.Read(fd, buf)
	return string(buf[:n]), e
}
func (o fsOps) write(fd int, s string) (int, Errno) { return o.f.Write(fd, b(s)) }
func (o fsOps) pread(fd, n int, off int64) (string, Errno) {
	buf := make([]byte, n)
	n, e := o.f.Pread(fd, buf, off)
	return string(buf[:n]), e
}
func (o fsOps) pwrite(fd int, s string, off int64) (int, Errno) { return o.f.Pwrite(fd, b(s), off) }
func (o fsOps) seek(fd int, off int64, wh int) (int64, Errno)   { return o.f.Seek(fd, off, wh) }
func (o fsOps) ftruncate(fd int, n int64) Errno                 { return o.f.Ftruncate(fd, n) }
func (o fsOps) truncate(p string, n int64) Errno                { return o.f.Truncate(o.dir, b(p), n) }
func (o fsOps) mkdir(p string, m uint32) Errno                  { return o.f.Mkdir(o.dir, b(p), m) }
func (o fsOps) unlink(p string, fl int) Errno                   { return o.f.Unlink(o.dir, b(p), fl) }
func (o fsOps) symlink(target, p string) Errno                  { return o.f.Symlink(b(target), o.dir, b(p)) }
func (o fsOps) chmod(p string, m uint32) Errno                  { return o.f.Chmod(o.dir, b(p), m, 0) }
func (o fsOps) rename(a, c string, fl int) Errno                { return o.f.Rename(o.dir, b(a), o.dir, b(c), fl) }
func (o fsOps) link(a, c string, fl int) Errno {
	return o.f.Link(o.dir, b(a), o.dir, b(c), fl)
}
func (o fsOps) mknod(p string, m uint32) Errno { return o.f.Mknod(o.dir, b(p), m, 0) }
func (o fsOps) fallocate(fd, m int, off, n int64) Errno {
	return o.f.Fallocate(fd, m, off, n)
}
func (o fsOps) readlink(p string, n int) (string, Errno) {
	buf := make([]byte, n)
	n, e := o.f.Readlink(o.dir, b(p), buf)
	return string(buf[:n]), e
}
func (o fsOps) stat(p string, fl int) (statInfo, Errno) {
	var st unix.Stat_t
	if e := o.f.Stat(o.dir, b(p), fl, &st); e != 0 {
		return statInfo{}, e
	}
	return info(&st), 0
}
func (o fsOps) fstat(fd int) (statInfo, Errno) {
	var st unix.Stat_t
	if e := o.f.Fstat(fd, &st); e != 0 {
		return statInfo{}, e
	}
	return info(&st), 0
}
func (o fsOps) readdir(fd int) ([]string, Errno) {
	var names []string
	buf := make([]byte, 100)
	for {
		n, e := o.f.Getdents(fd, buf)
		if e != 0 || n == 0 {
			slices.Sort(names)
			return names, e
		}
		names = append(names, parseNames(buf[:n])...)
	}
}

var (
	diffPaths = []string{"a", "b", "c", "d", "d/a", "d/e", "d/e/f", "d/e/..", "la", "ld", "ld/a", "d/l",
		"a/", "d/", "d/.", ".", "x/y", "lloop", "lloop/a", "ldang", "a/b", "ld/e/f", "d/e/f/", "e"}
	diffTargets = []string{"a", "d", "d/e", "nonexistent", "lloop", "e", "../a", "f"}
	openFlags   = []int{unix.O_CREAT, unix.O_EXCL, unix.O_TRUNC, unix.O_APPEND, unix.O_DIRECTORY, unix.O_NOFOLLOW}
	whences     = []int{unix.SEEK_SET, unix.SEEK_CUR, unix.SEEK_END, unix.SEEK_DATA, unix.SEEK_HOLE, 7}
)

// step runs operation op (drawn from rng) on one side; the result is a
// string both sides must agree on.
func step(o sysOps, fds *[]int, op int, rng *rand.Rand) string {
	path := func() string { return diffPaths[rng.IntN(len(diffPaths))] }
	fd := func() int {
		if len(*fds) == 0 || rng.IntN(20) == 0 {
			return -1
		}
		return (*fds)[rng.IntN(len(*fds))]
	}
	data := func() string { return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(9000)) }
	switch op {
	case 0, 1, 2:
		fl := []int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR}[rng.IntN(3)]
		for _, f := range openFlags {
			if rng.IntN(3) == 0 {
				fl |= f
			}
		}
		p := path()
		if st, e := o.stat(p, 0); e == 0 && st.mode&unix.S_IFMT == unix.S_IFIFO {
			fl |= unix.O_NONBLOCK // a blocking open would wait for the other end
		}
		h, e := o.open(p, fl, uint32(rng.IntN(0o1000)))
		if e == 0 {
			*fds = append(*fds, h)
		}
		return fmt.Sprintf("open %s %#x: %v", p, fl, e)
	case 3:
		i := rng.IntN(len(*fds) + 1)
		if i == len(*fds) {
			return fmt.Sprintf("close -1: %v", o.close(-1))
		}
		h := (*fds)[i]
		*fds = append((*fds)[:i], (*fds)[i+1:]...)
		return fmt.Sprintf("close %d: %v", i, o.close(h))
	case 4:
		n, h := rng.IntN(10000), fd()
		if st, e := o.fstat(h); e == 0 && isDir(st.mode) {
			// ext4 fails with EINVAL once getdents has moved the
			// offset to its end-of-directory hash, tmpfs with EISDIR.
			return "read on a directory: not compared"
		}
		s, e := o.read(h, n)
		return fmt.Sprintf("read %d: %q %v", n, s, e)
	case 5, 6:
		s := data()
		n, e := o.write(fd(), s)
		return fmt.Sprintf("write %d: %s", len(s), res(n, e))
	case 7:
		n, off := rng.IntN(10000), int64(rng.IntN(20000)-100)
		s, e := o.pread(fd(), n, off)
		return fmt.Sprintf("pread %d %d: %q %v", n, off, s, e)
	case 8:
		s, off := data(), int64(rng.IntN(20000)-100)
		n, e := o.pwrite(fd(), s, off)
		return fmt.Sprintf("pwrite %d %d: %s", len(s), off, res(n, e))
	case 9:
		h := fd()
		if st, e := o.fstat(h); e == 0 && isDir(st.mode) {
			return "seek on a directory: not compared (ext4's offsets are hashes)"
		}
		off, wh := int64(rng.IntN(20000)-5000), whences[rng.IntN(len(whences))]
		if fallocated && (wh == unix.SEEK_DATA || wh == unix.SEEK_HOLE) {
			// ext4 counts allocated, unwritten blocks as a hole; tmpfs,
			// like this file system, as data (and the offset moves).
			return "seek for data or a hole after fallocate: not made"
		}
		r, e := o.seek(h, off, wh)
		return fmt.Sprintf("seek %d %d: %s", off, wh, res(r, e))
	case 10:
		n := int64(rng.IntN(20000) - 100)
		return fmt.Sprintf("ftruncate %d: %v", n, o.ftruncate(fd(), n))
	case 11:
		p, n := path(), int64(rng.IntN(20000)-100)
		return fmt.Sprintf("truncate %s %d: %v", p, n, o.truncate(p, n))
	case 12, 13:
		p := path()
		return fmt.Sprintf("mkdir %s: %v", p, o.mkdir(p, 0o755))
	case 14:
		p, fl := path(), rng.IntN(2)*unix.AT_REMOVEDIR
		return fmt.Sprintf("unlink %s %d: %v", p, fl, o.unlink(p, fl))
	case 15:
		a, c, fl := path(), path(), rng.IntN(2)*unix.RENAME_NOREPLACE
		return fmt.Sprintf("rename %s %s %d: %v", a, c, fl, o.rename(a, c, fl))
	case 16:
		t, p := diffTargets[rng.IntN(len(diffTargets))], path()
		return fmt.Sprintf("symlink %s %s: %v", t, p, o.symlink(t, p))
	case 17:
		p, n := path(), rng.IntN(6)
		s, e := o.readlink(p, n)
		return fmt.Sprintf("readlink %s %d: %q %v", p, n, s, e)
	case 18, 19:
		p, fl := path(), rng.IntN(2)*unix.AT_SYMLINK_NOFOLLOW
		st, e := o.stat(p, fl)
		return fmt.Sprintf("stat %s %d: %+v %v", p, fl, st, e)
	case 20:
		st, e := o.fstat(fd())
		return fmt.Sprintf("fstat: %+v %v", st, e)
	case 21:
		p, m := path(), uint32(rng.IntN(0o10000))
		return fmt.Sprintf("chmod %s %o: %v", p, m, o.chmod(p, m))
	case 22:
		names, e := o.readdir(fd())
		return fmt.Sprintf("readdir: %v %v", names, e)
	case 23, 24:
		a, c, fl := path(), path(), rng.IntN(2)*unix.AT_SYMLINK_FOLLOW
		return fmt.Sprintf("link %s %s %d: %v", a, c, fl, o.link(a, c, fl))
	case 25:
		p, m := path(), []uint32{unix.S_IFIFO | 0o644, unix.S_IFREG | 0o600, 0o640, unix.S_IFDIR | 0o755}[rng.IntN(4)]
		return fmt.Sprintf("mknod %s %o: %v", p, m, o.mknod(p, m))
	case 26:
		// Modes both sides have (the host's may punch holes, ours not)
		// and an unknown one.
		m := []int{0, unix.FALLOC_FL_KEEP_SIZE, 0x100}[rng.IntN(3)]
		off, n := int64(rng.IntN(20000)-100), int64(rng.IntN(20000)-10)
		h := fd()
		e := o.fallocate(h, m, off, n)
		fallocated = true
		st, se := o.fstat(h)
		return fmt.Sprintf("fallocate %d %d %d: %v; size %d %v", m, off, n, e, st.size, se)
	}
	panic(op)
}

const diffOps = 27

// fallocated is set once a sequence has called fallocate (both sides make
// the same calls).
var fallocated bool

var diffSeeds = flag.Int("diffseeds", 40, "differential test: number of random sequences")

func res(v any, e Errno) string {
	if e != 0 {
		return e.Error()
	}
	return fmt.Sprint(v)
}

func TestDifferential(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	seeds := *diffSeeds
	if testing.Short() {
		seeds = 8
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dir)
			unix.Fchmod(dir, 0o755) // no set-group-ID inherited from the host's /tmp
			f, _ := newFS(t, 4096, 4096)
			must(t, "mkdir", f.Mkdir(AtCWD, b("/t"), 0o755))
			fdir := open(t, f, "/t", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			host, mine := hostOps{dir}, fsOps{f, fdir}
			var hostFDs, myFDs []int
			defer func() {
				for _, h := range hostFDs {
					unix.Close(h)
				}
			}()
			var log []string
			fallocated = false
			r1 := rand.New(rand.NewPCG(uint64(seed), 1))
			r2 := rand.New(rand.NewPCG(uint64(seed), 1))
			for i := 0; i < 400; i++ {
				op := r1.IntN(diffOps)
				r2.IntN(diffOps)
				want := step(host, &hostFDs, op, r1)
				got := step(mine, &myFDs, op, r2)
				log = append(log, want)
				if got != want {
					if len(log) > 30 {
						log = log[len(log)-30:]
					}
					t.Fatalf("op %d differs:\nlinux: %s\nyolk:  %s\nlast operations:\n%s", i, want, got, strings.Join(log, "\n"))
				}
			}
		})
	}
}
