// Command diskdiff is TestDiskDifferential's guest (qemu/diskdiff_test.go),
// the same static Linux binary on yolk and on Linux: on the ext4 disk
// mounted at its first argument it runs a seeded sequence of file-system
// calls — create, write, pwrite past the end (holes), append, rename
// (files over files, directories across directories), link, symlink
// (fast and slow), truncate down and up, fallocate (mode 0 and
// KEEP_SIZE), chmod, mkdir, unlink, rmdir, fsync, fdatasync, sync and a
// read-back of a file's checksum — and prints one "dd: " line per call
// with its result (the errno's name, or ok and what it returned). Each
// call's arguments are drawn before it runs, and the choice of the next
// call depends only on the earlier results: where both systems answer
// alike, both run the same calls, so the first line that differs is the
// first difference. At the end it prints every file's checksum, syncs and
// unmounts the disk (Linux's /init must leave it clean; yolk unmounts
// at the program's end and may refuse umount2).
//
// Flags after the directory: -seed N, -ops N, and -mmap, which adds
// writes through a shared mapping of a disk file (msync, munmap) to the
// calls. It is off by default: yolk does not map disk files yet (ENODEV),
// so with -mmap the two systems differ at the first such call.
package main

import (
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

var (
	root  string
	rng   *rand.Rand
	files []string // regular files, relative to root, sorted
	dirs  []string // directories ("." the root), sorted
	links []string // symbolic links
	count int      // names made so far
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: diskdiff DIR [-seed N] [-ops N] [-mmap]")
		os.Exit(2)
	}
	root = os.Args[1]
	fl := flag.NewFlagSet("diskdiff", flag.ExitOnError)
	seed := fl.Int64("seed", 1, "the sequence's seed")
	ops := fl.Int("ops", 400, "calls to make")
	mmap := fl.Bool("mmap", false, "add writes through shared mappings of disk files (yolk: not yet)")
	fl.Parse(os.Args[2:])
	unix.Umask(0o022)
	rng = rand.New(rand.NewSource(*seed))
	if err := scan(); err != nil {
		fmt.Printf("dd: bad: scanning %s: %v\n", root, err)
		os.Exit(1)
	}
	fmt.Printf("dd: start seed=%d ops=%d mmap=%v files=%d dirs=%d links=%d\n", *seed, *ops, *mmap, len(files), len(dirs), len(links))
	for i := 0; i < *ops; i++ {
		step(i, *mmap)
	}
	final()
	unix.Sync()
	err := unix.Unmount(root, 0)
	fmt.Printf("dd-end: umount %v\n", errName(err))
	fmt.Println("dd: done")
}

// scan reads the seeded tree into the model.
func scan() error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "lost+found" {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, rel)
		case d.Type()&fs.ModeSymlink != 0:
			links = append(links, rel)
		case d.Type().IsRegular():
			files = append(files, rel)
		}
		return nil
	})
}

// errName is "ok" or the errno's name.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

func abs(rel string) string { return filepath.Join(root, rel) }

func pick(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return list[rng.Intn(len(list))]
}

func newName(dir, prefix string) string {
	count++
	return path.Join(dir, fmt.Sprintf("%s%03d", prefix, count))
}

func add(list *[]string, name string) {
	if i, found := slices.BinarySearch(*list, name); !found {
		*list = slices.Insert(*list, i, name)
	}
}

func remove(list *[]string, name string) {
	if i, found := slices.BinarySearch(*list, name); found {
		*list = slices.Delete(*list, i, i+1)
	}
}

// data is n bytes from the sequence.
func data(n int) []byte {
	b := make([]byte, n)
	fill := byte(rng.Intn(256))
	for i := range b {
		b[i] = fill + byte(i*7) + byte(i>>9)
	}
	return b
}

// size draws a file size or length: mostly small, some across blocks,
// a few large.
func size() int {
	switch r := rng.Intn(10); {
	case r < 5:
		return rng.Intn(5000)
	case r < 9:
		return rng.Intn(70000)
	default:
		return 100000 + rng.Intn(300000)
	}
}

var modes = []uint32{0o644, 0o600, 0o755, 0o640, 0o444, 0o700}

func step(i int, mmap bool) {
	out := func(f string, a ...any) { fmt.Printf("dd: %d "+f+"\n", append([]any{i}, a...)...) }
	op := rng.Intn(100)
	switch {
	case op < 14: // create and write
		name, mode, b, sync := newName(pick(dirs), "f"), modes[rng.Intn(len(modes))], data(size()), rng.Intn(3) == 0
		fd, err := unix.Open(abs(name), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, mode)
		if err != nil {
			out("create %s %o: %s", name, mode, errName(err))
			return
		}
		n, err := unix.Write(fd, b)
		r := "-"
		if sync {
			r = errName(unix.Fsync(fd))
		}
		unix.Close(fd)
		add(&files, name)
		out("create %s %o: wrote %d %s fsync %s", name, mode, n, errName(err), r)
	case op < 26: // pwrite, sometimes past the end
		name, off, b := pick(files), int64(rng.Intn(200000)), data(size()/4)
		fd, err := unix.Open(abs(name), unix.O_WRONLY, 0)
		if err != nil {
			out("pwrite %s: open %s", name, errName(err))
			return
		}
		n, err := unix.Pwrite(fd, b, off)
		unix.Close(fd)
		out("pwrite %s %d+%d: %d %s", name, off, len(b), n, errName(err))
	case op < 32: // append
		name, b := pick(files), data(rng.Intn(3000))
		fd, err := unix.Open(abs(name), unix.O_WRONLY|unix.O_APPEND, 0)
		if err != nil {
			out("append %s: open %s", name, errName(err))
			return
		}
		n, err := unix.Write(fd, b)
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		unix.Close(fd)
		out("append %s %d: %d %s size %d", name, len(b), n, errName(err), st.Size)
	case op < 40: // rename a file to a new name or over another
		from := pick(files)
		to := newName(pick(dirs), "r")
		if rng.Intn(2) == 0 {
			to = pick(files)
		}
		err := unix.Rename(abs(from), abs(to))
		if err == nil && from != to {
			remove(&files, from)
			add(&files, to)
		}
		out("rename %s %s: %s", from, to, errName(err))
	case op < 44: // rename a directory
		from, parent := pick(dirs), pick(dirs)
		to := newName(parent, "m")
		err := unix.Rename(abs(from), abs(to))
		if err == nil {
			move(from, to)
		}
		out("renamedir %s %s: %s", from, to, errName(err))
	case op < 50: // hard link
		from, to := pick(files), newName(pick(dirs), "h")
		err := unix.Link(abs(from), abs(to))
		if err == nil {
			add(&files, to)
		}
		var st unix.Stat_t
		unix.Lstat(abs(from), &st)
		out("link %s %s: %s nlink %d", from, to, errName(err), st.Nlink)
	case op < 54: // symbolic link, fast or slow, to a name that may not exist
		to, target := newName(pick(dirs), "s"), pick(files)
		if rng.Intn(3) == 0 {
			target = strings.Repeat("../", 1+rng.Intn(30)) + target
		}
		err := unix.Symlink(target, abs(to))
		if err == nil {
			add(&links, to)
		}
		buf := make([]byte, 256)
		n, rerr := unix.Readlink(abs(to), buf)
		out("symlink %s -> %d bytes: %s readlink %d %s", to, len(target), errName(err), n, errName(rerr))
	case op < 62: // truncate down or up
		name, sz := pick(files), int64(size())
		err := unix.Truncate(abs(name), sz)
		out("truncate %s %d: %s", name, sz, errName(err))
	case op < 68: // fallocate
		name, mode, off, n := pick(files), uint32(0), int64(rng.Intn(150000)), int64(1+size())
		if rng.Intn(2) == 0 {
			mode = unix.FALLOC_FL_KEEP_SIZE
		}
		fd, err := unix.Open(abs(name), unix.O_WRONLY, 0)
		if err != nil {
			out("fallocate %s: open %s", name, errName(err))
			return
		}
		err = unix.Fallocate(fd, mode, off, n)
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		unix.Close(fd)
		out("fallocate %s mode %d %d+%d: %s size %d", name, mode, off, n, errName(err), st.Size)
	case op < 72: // chmod
		name, mode := pick(files), modes[rng.Intn(len(modes))]
		out("chmod %s %o: %s", name, mode, errName(unix.Chmod(abs(name), mode)))
	case op < 78: // mkdir
		name := newName(pick(dirs), "d")
		err := unix.Mkdir(abs(name), 0o755)
		if err == nil {
			add(&dirs, name)
		}
		out("mkdir %s: %s", name, errName(err))
	case op < 86: // unlink a file or a link
		list := &files
		if rng.Intn(4) == 0 {
			list = &links
		}
		name := pick(*list)
		err := unix.Unlink(abs(name))
		if err == nil {
			remove(list, name)
		}
		out("unlink %s: %s", name, errName(err))
	case op < 89: // rmdir: empty or not
		name := pick(dirs)
		err := unix.Rmdir(abs(name))
		if err == nil {
			remove(&dirs, name)
		}
		out("rmdir %s: %s", name, errName(err))
	case op < 94: // fsync, fdatasync a file, fsync a directory, sync
		kind := rng.Intn(4)
		name := pick(files)
		if kind == 2 {
			name = pick(dirs)
		}
		if kind == 3 {
			unix.Sync()
			out("sync: ok")
			return
		}
		fd, err := unix.Open(abs(name), unix.O_RDONLY, 0)
		if err != nil {
			out("fsync %s: open %s", name, errName(err))
			return
		}
		if kind == 1 {
			err = unix.Fdatasync(fd)
		} else {
			err = unix.Fsync(fd)
		}
		unix.Close(fd)
		out("fsync%d %s: %s", kind, name, errName(err))
	case op < 97 && mmap: // write through a shared mapping
		name, off, b := pick(files), rng.Intn(8192), data(1+rng.Intn(3000))
		fd, err := unix.Open(abs(name), unix.O_RDWR, 0)
		if err != nil {
			out("mmap %s: open %s", name, errName(err))
			return
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		if st.Size < int64(off+len(b)) {
			out("mmap %s: size %d, short", name, st.Size)
			return
		}
		m, err := unix.Mmap(fd, 0, off+len(b), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			out("mmap %s %d+%d: %s", name, off, len(b), errName(err))
			return
		}
		copy(m[off:], b)
		serr := unix.Msync(m, unix.MS_SYNC)
		out("mmap %s %d+%d: ok msync %s munmap %s", name, off, len(b), errName(serr), errName(unix.Munmap(m)))
	default: // read a file back
		name := pick(files)
		b, err := os.ReadFile(abs(name))
		out("read %s: %s %d %08x", name, errName(err), len(b), crc32.ChecksumIEEE(b))
	}
}

// move renames directory from to to in the model, with everything below.
func move(from, to string) {
	ren := func(list []string) []string {
		var out []string
		for _, n := range list {
			if n == from || strings.HasPrefix(n, from+"/") {
				n = to + n[len(from):]
			}
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	files, dirs, links = ren(files), ren(dirs), ren(links)
}

// final prints every name under the root with its type, mode, size, link
// count and checksum (or target), in the walk's order.
func final() {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		if err != nil {
			fmt.Printf("dd: final %s: %s\n", rel, errName(err))
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			fmt.Printf("dd: final %s: lstat %s\n", rel, errName(err))
			return nil
		}
		extra := ""
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			extra = fmt.Sprintf("%s %08x", errName(err), crc32.ChecksumIEEE(b))
		case unix.S_IFLNK:
			t, err := os.Readlink(p)
			extra = fmt.Sprintf("%s %q", errName(err), t)
		case unix.S_IFDIR:
			st.Size = 0 // a directory's size is its blocks': the systems may grow them differently
		}
		fmt.Printf("dd: final %s %o size %d nlink %d %s\n", rel, st.Mode, st.Size, st.Nlink, extra)
		return nil
	})
}
