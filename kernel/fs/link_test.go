package fs

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestHardLinks(t *testing.T) {
	f, s := newFS(t, 1024, 1024)
	h := open(t, f, "a", unix.O_CREAT|unix.O_RDWR, 0o640)
	write(t, f, h, "data")
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	must(t, "link", f.Link(AtCWD, b("a"), AtCWD, b("d/b"), 0))
	sa, sb := stat(t, f, "a"), stat(t, f, "d/b")
	if sa.Ino != sb.Ino || sa.Nlink != 2 || sb.Nlink != 2 || sb.Mode != unix.S_IFREG|0o640 || sb.Size != 4 {
		t.Errorf("after link: a %+v\nb %+v", sa, sb)
	}
	// One inode: a change through one name shows through the other.
	must(t, "chmod", f.Chmod(AtCWD, b("d/b"), 0o600, 0))
	if st := stat(t, f, "a"); st.Mode != unix.S_IFREG|0o600 {
		t.Errorf("mode through the other name: %o", st.Mode)
	}
	if got := readAll(t, f, "d/b"); got != "data" {
		t.Errorf("read through the link: %q", got)
	}
	// Both names are listed, with the same inode number and type.
	dh := open(t, f, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	buf := make([]byte, 4096)
	n, e := f.Getdents(dh, buf)
	must(t, "getdents", e)
	ents := parseDirents(t, buf[:n])
	if len(ents) != 3 || ents[2].name != "b" || ents[2].ino != sa.Ino || ents[2].typ != unix.DT_REG {
		t.Errorf("listing: %+v", ents)
	}
	f.Close(dh)
	// Errors: an existing name, a missing source, a directory, a
	// trailing slash on either side, bad flags.
	wantErr(t, "exists", f.Link(AtCWD, b("a"), AtCWD, b("d/b"), 0), unix.EEXIST)
	wantErr(t, "onto a directory", f.Link(AtCWD, b("a"), AtCWD, b("d"), 0), unix.EEXIST)
	wantErr(t, "missing", f.Link(AtCWD, b("nope"), AtCWD, b("c"), 0), unix.ENOENT)
	wantErr(t, "directory", f.Link(AtCWD, b("d"), AtCWD, b("c"), 0), unix.EPERM)
	wantErr(t, "old slash", f.Link(AtCWD, b("a/"), AtCWD, b("c"), 0), unix.ENOTDIR)
	wantErr(t, "new slash", f.Link(AtCWD, b("a"), AtCWD, b("c/"), 0), unix.ENOENT)
	wantErr(t, "flags", f.Link(AtCWD, b("a"), AtCWD, b("c"), 0x1), unix.EINVAL)
	// rename between two names of one inode does nothing.
	must(t, "rename", f.Rename(AtCWD, b("a"), AtCWD, b("d/b"), 0))
	if stat(t, f, "a").Nlink != 2 {
		t.Errorf("rename over a link to the same inode changed it")
	}
	// Unlinking the first name keeps the inode for the other (and the
	// open file); the count follows.
	must(t, "unlink a", f.Unlink(AtCWD, b("a"), 0))
	if st := stat(t, f, "d/b"); st.Nlink != 1 || st.Ino != sa.Ino {
		t.Errorf("after unlinking a: %+v", st)
	}
	if got := readAll(t, f, "d/b"); got != "data" {
		t.Errorf("after unlinking a: %q", got)
	}
	// A link made from the remaining name, then moved, then removed.
	must(t, "link again", f.Link(AtCWD, b("d/b"), AtCWD, b("c"), 0))
	must(t, "rename link", f.Rename(AtCWD, b("c"), AtCWD, b("d/c"), 0))
	if st := stat(t, f, "d/c"); st.Nlink != 2 || st.Ino != sa.Ino {
		t.Errorf("renamed link: %+v", st)
	}
	// Renaming another file over a link drops one name.
	f.Close(open(t, f, "other", unix.O_CREAT|unix.O_WRONLY, 0o644))
	must(t, "rename over", f.Rename(AtCWD, b("other"), AtCWD, b("d/b"), 0))
	if st := stat(t, f, "d/c"); st.Nlink != 1 {
		t.Errorf("after a rename over a name: nlink %d", st.Nlink)
	}
	// The open file through AT_EMPTY_PATH, then without any name left:
	// ENOENT, as Linux for a file that is not O_TMPFILE.
	must(t, "link open file", f.Link(h, nil, AtCWD, b("e"), unix.AT_EMPTY_PATH))
	must(t, "unlink d/c", f.Unlink(AtCWD, b("d/c"), 0))
	must(t, "unlink e", f.Unlink(AtCWD, b("e"), 0))
	wantErr(t, "link without names", f.Link(h, nil, AtCWD, b("e"), unix.AT_EMPTY_PATH), unix.ENOENT)
	var st unix.Stat_t
	must(t, "fstat", f.Fstat(h, &st))
	if st.Nlink != 0 {
		t.Errorf("open file without names: nlink %d", st.Nlink)
	}
	f.Close(h)
	must(t, "unlink d/b", f.Unlink(AtCWD, b("d/b"), 0))
	must(t, "rmdir", f.Unlink(AtCWD, b("d"), unix.AT_REMOVEDIR))
	if f.PagesUsed() != 0 || s.pages.InUse() != 0 {
		t.Errorf("pages left: %d %d", f.PagesUsed(), s.pages.InUse())
	}
	// Every inode slot is free again: as many files fit as at first.
	for i := 0; i < NumInodes-1; i++ {
		if f.inodes[i+1].mode != 0 {
			t.Fatalf("inode %d still used: %o", i+1, f.inodes[i+1].mode)
		}
	}
}

func TestHardLinkSymlinks(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	f.Close(open(t, f, "t", unix.O_CREAT|unix.O_WRONLY, 0o644))
	must(t, "symlink", f.Symlink(b("t"), AtCWD, b("l")))
	// Without AT_SYMLINK_FOLLOW the link itself gets a second name
	// (Linux's link(2)); with it, its target.
	must(t, "link", f.Link(AtCWD, b("l"), AtCWD, b("l2"), 0))
	must(t, "link follow", f.Link(AtCWD, b("l"), AtCWD, b("t2"), unix.AT_SYMLINK_FOLLOW))
	if st := stat(t, f, "l2"); st.Mode&unix.S_IFMT != unix.S_IFLNK || st.Nlink != 2 {
		t.Errorf("l2: %o %d", st.Mode, st.Nlink)
	}
	if st := stat(t, f, "t2"); st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 2 || st.Ino != stat(t, f, "t").Ino {
		t.Errorf("t2: %+v", st)
	}
	buf := make([]byte, 10)
	if n, e := f.Readlink(AtCWD, b("l2"), buf); e != 0 || string(buf[:n]) != "t" {
		t.Errorf("readlink l2: %q %v", buf[:n], e)
	}
	// A hard-linked symbolic link is followed in the middle of a path.
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	must(t, "symlink d", f.Symlink(b("d"), AtCWD, b("ld")))
	must(t, "link ld", f.Link(AtCWD, b("ld"), AtCWD, b("ld2"), 0))
	f.Close(open(t, f, "ld2/x", unix.O_CREAT|unix.O_WRONLY, 0o644))
	stat(t, f, "d/x")
}

func TestHardLinkReadOnly(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("ro"), 0o755))
	f.Close(open(t, f, "ro/f", unix.O_CREAT|unix.O_WRONLY, 0o644))
	f.Close(open(t, f, "w", unix.O_CREAT|unix.O_WRONLY, 0o644))
	must(t, "ro", f.SetReadOnly(AtCWD, b("ro")))
	wantErr(t, "into the read-only tree", f.Link(AtCWD, b("w"), AtCWD, b("ro/g"), 0), unix.EROFS)
	wantErr(t, "out of it", f.Link(AtCWD, b("ro/f"), AtCWD, b("g"), 0), unix.EXDEV)
}

func TestFIFO(t *testing.T) {
	f, s := newFS(t, 1024, 1024)
	must(t, "mknod", f.Mknod(AtCWD, b("p"), unix.S_IFIFO|0o666, 0))
	st := stat(t, f, "p")
	if st.Mode != unix.S_IFIFO|0o644 || st.Nlink != 1 || st.Size != 0 {
		t.Errorf("stat: %+v", st)
	}
	wantErr(t, "exists", f.Mknod(AtCWD, b("p"), unix.S_IFIFO|0o666, 0), unix.EEXIST)
	wantErr(t, "directory", f.Mknod(AtCWD, b("x"), unix.S_IFDIR|0o666, 0), unix.EPERM)
	wantErr(t, "bad type", f.Mknod(AtCWD, b("x"), 0o170000|0o666, 0), unix.EINVAL)
	// No reader: a nonblocking writer is refused.
	_, e := f.Open(AtCWD, b("p"), unix.O_WRONLY|unix.O_NONBLOCK, 0)
	wantErr(t, "writer without reader", e, unix.ENXIO)
	// A nonblocking reader opens at once and reads end of file; it sees no
	// hang-up until a writer has come and gone.
	r := open(t, f, "p", unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if _, _, _, wait := f.OpenWait(r); wait {
		t.Errorf("nonblocking reader waits")
	}
	buf := make([]byte, 100)
	if n, e := f.Read(r, buf); n != 0 || e != 0 {
		t.Errorf("read without writer: %d %v", n, e)
	}
	id, _, e := f.Pollable(r)
	must(t, "pollable", e)
	if ev, _, _ := f.Poll(r, id); ev != 0 {
		t.Errorf("reader without writer ever: %#x", ev)
	}
	// A blocking writer now opens without waiting.
	w := open(t, f, "p", unix.O_WRONLY, 0)
	if _, _, _, wait := f.OpenWait(w); wait {
		t.Errorf("writer waits with a reader there")
	}
	write(t, f, w, "hello")
	if n, _ := f.Read(r, buf); string(buf[:n]) != "hello" {
		t.Errorf("read %q", buf[:n])
	}
	if _, e := f.Read(r, buf); e != unix.EAGAIN {
		t.Errorf("empty with a writer: %v", e)
	}
	must(t, "fstat", f.Fstat(w, &st))
	if st.Mode&unix.S_IFMT != unix.S_IFIFO || st.Ino != stat(t, f, "p").Ino {
		t.Errorf("fstat of an end: %+v", st)
	}
	if _, e := f.Seek(r, 0, unix.SEEK_SET); e != unix.ESPIPE {
		t.Errorf("seek: %v", e)
	}
	// fchmod and fchown through an end change the FIFO.
	must(t, "fchmod", f.Fchmod(w, 0o600))
	must(t, "fchown", f.Fchown(r, 3, 4))
	if st := stat(t, f, "p"); st.Mode != unix.S_IFIFO|0o600 || st.Uid != 3 || st.Gid != 4 {
		t.Errorf("after fchmod, fchown: %+v", st)
	}
	f.Close(w)
	if ev, _, _ := f.Poll(r, id); ev != unix.EPOLLHUP {
		t.Errorf("reader after the writer left: %#x", ev)
	}
	f.Close(r)
	// The pipe went with the last end: its pages are back.
	if s.pages.InUse() != 0 {
		t.Errorf("pages held: %d", s.pages.InUse())
	}
	// O_RDWR opens both ends at once; data stays while an end is open.
	rw := open(t, f, "p", unix.O_RDWR, 0)
	write(t, f, rw, "x")
	// Blocking reader with a writer there: no wait.
	r = open(t, f, "p", unix.O_RDONLY, 0)
	if _, _, _, wait := f.OpenWait(r); wait {
		t.Errorf("reader waits with a writer there")
	}
	f.Close(rw)
	if n, e := f.Read(r, buf); n != 1 || e != 0 {
		t.Errorf("data kept for the reader: %d %v", n, e)
	}
	f.Close(r)
	// The FIFO outlives its name while open; unlinking frees the inode.
	rw = open(t, f, "p", unix.O_RDWR, 0)
	must(t, "unlink", f.Unlink(AtCWD, b("p"), 0))
	write(t, f, rw, "y")
	f.Close(rw)
	if s.pages.InUse() != 0 {
		t.Errorf("pages held: %d", s.pages.InUse())
	}
	// A socket's name: cannot be opened. S_IFREG or no type: a file.
	must(t, "mknod sock", f.Mknod(AtCWD, b("s"), unix.S_IFSOCK|0o600, 0))
	_, e = f.Open(AtCWD, b("s"), unix.O_RDONLY, 0)
	wantErr(t, "open socket", e, unix.ENXIO)
	must(t, "mknod reg", f.Mknod(AtCWD, b("r"), 0o600, 0))
	if st := stat(t, f, "r"); st.Mode != unix.S_IFREG|0o600 {
		t.Errorf("mknod 0: %o", st.Mode)
	}
}

// TestFIFOBlockingOpen: a blocking reader waits until a writer opens, and
// the other way round; a writer that came and went also ends the wait
// (Linux's w_counter), and the reader then reads end of file.
func TestFIFOBlockingOpen(t *testing.T) {
	f, s := newFS(t, 1024, 1024)
	must(t, "mknod", f.Mknod(AtCWD, b("p"), unix.S_IFIFO|0o600, 0))
	openWait := func(flags int) int {
		h := open(t, f, "p", flags, 0)
		for {
			_, addr, val, wait := f.OpenWait(h)
			if !wait {
				return h
			}
			s.block(addr, val)
		}
	}
	for _, first := range []int{unix.O_RDONLY, unix.O_WRONLY} {
		other := unix.O_RDONLY + unix.O_WRONLY - first
		done := make(chan int)
		go func() { done <- openWait(first) }()
		// Wait until the first end is there, then open the other.
		for {
			f.env.Lock()
			ip := &f.inodes[f.lookup(f.root, b("p"))]
			there := ip.fifo != 0 && f.pipes[ip.fifo-1].rOpens+f.pipes[ip.fifo-1].wOpens > 0
			f.env.Unlock()
			if there {
				break
			}
		}
		h2 := openWait(other)
		h1 := <-done
		f.Close(h1)
		f.Close(h2)
	}
	// A writer that opened (O_RDWR counts) and closed releases a waiting
	// reader, which then reads end of file.
	r := open(t, f, "p", unix.O_RDONLY, 0)
	_, _, _, wait := f.OpenWait(r)
	if !wait {
		t.Fatalf("a reader alone does not wait")
	}
	f.Close(open(t, f, "p", unix.O_RDWR, 0))
	if _, _, _, wait := f.OpenWait(r); wait {
		t.Errorf("still waiting after a writer came and went")
	}
	buf := make([]byte, 10)
	if n, e := f.Read(r, buf); n != 0 || e != 0 {
		t.Errorf("read: %d %v", n, e)
	}
	f.Close(r)
}

func TestDevices(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("dev"), 0o755))
	for _, d := range []struct {
		name string
		dev  uint64
	}{{"null", DevNull}, {"zero", DevZero}, {"full", DevFull}, {"tty9", unix.Mkdev(4, 9)}} {
		must(t, "mknod "+d.name, f.Mknod(AtCWD, b("dev/"+d.name), unix.S_IFCHR|0o666, d.dev))
		if d.dev != unix.Mkdev(unix.Major(d.dev), unix.Minor(d.dev)) {
			t.Errorf("%s: %#x is not unix.Mkdev's encoding", d.name, d.dev)
		}
	}
	must(t, "mknod block", f.Mknod(AtCWD, b("dev/sda"), unix.S_IFBLK|0o660, unix.Mkdev(8, 0)))
	st := stat(t, f, "dev/null")
	if st.Mode != unix.S_IFCHR|0o644 || st.Rdev != unix.Mkdev(1, 3) || st.Size != 0 {
		t.Errorf("stat /dev/null: %+v", st)
	}
	buf := []byte("xxxx")
	// null: end of file, takes every write; O_TRUNC and O_CREAT are harmless.
	h := open(t, f, "dev/null", unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o666)
	if n, e := f.Read(h, buf); n != 0 || e != 0 {
		t.Errorf("read null: %d %v", n, e)
	}
	if n, e := f.Write(h, buf); n != 4 || e != 0 {
		t.Errorf("write null: %d %v", n, e)
	}
	if n, e := f.Pwrite(h, buf, 100); n != 4 || e != 0 {
		t.Errorf("pwrite null: %d %v", n, e)
	}
	if off, e := f.Seek(h, 100, unix.SEEK_SET); off != 0 || e != 0 {
		t.Errorf("seek null: %d %v", off, e)
	}
	wantErr(t, "ftruncate null", f.Ftruncate(h, 0), unix.EINVAL)
	if _, _, e := f.Pollable(h); e != unix.EPERM {
		t.Errorf("pollable null: %v", e)
	}
	f.Close(h)
	// zero: zeroes; full: zeroes, and no space.
	for _, name := range []string{"zero", "full"} {
		h := open(t, f, "dev/"+name, unix.O_RDWR, 0)
		copy(buf, "xxxx")
		if n, e := f.Read(h, buf); n != 4 || e != 0 || string(buf) != "\x00\x00\x00\x00" {
			t.Errorf("read %s: %d %v %q", name, n, e, buf)
		}
		n, e := f.Write(h, buf)
		if name == "zero" && (n != 4 || e != 0) || name == "full" && e != unix.ENOSPC {
			t.Errorf("write %s: %d %v", name, n, e)
		}
		f.Close(h)
	}
	// Other devices have no driver here.
	for _, name := range []string{"dev/tty9", "dev/sda"} {
		_, e := f.Open(AtCWD, b(name), unix.O_RDONLY, 0)
		wantErr(t, "open "+name, e, unix.ENXIO)
	}
	// A device node is writable on a read-only tree, as on Linux.
	must(t, "ro", f.SetReadOnly(AtCWD, b("dev")))
	f.Close(open(t, f, "dev/null", unix.O_WRONLY, 0))
}

func TestBlockNode(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("dev"), 0o755))
	must(t, "mknod block", f.Mknod(AtCWD, b("dev/vda"), unix.S_IFBLK|0o660, unix.Mkdev(254, 16)))
	must(t, "mknod chr", f.Mknod(AtCWD, b("dev/tty9"), unix.S_IFCHR|0o660, unix.Mkdev(4, 9)))
	must(t, "symlink", f.Symlink(b("vda"), AtCWD, b("dev/disk")))
	if d, ok := f.BlockNode(AtCWD, b("/dev/vda"), false); !ok || d != unix.Mkdev(254, 16) {
		t.Errorf("vda: %#x %v", d, ok)
	}
	if d, ok := f.BlockNode(AtCWD, b("/dev/disk"), false); !ok || d != unix.Mkdev(254, 16) {
		t.Errorf("a link to vda: %#x %v", d, ok)
	}
	for _, c := range []struct {
		p        string
		nofollow bool
	}{{"/dev/disk", true}, {"/dev/tty9", false}, {"/dev/none", false}, {"/dev", false}} {
		if _, ok := f.BlockNode(AtCWD, b(c.p), c.nofollow); ok {
			t.Errorf("%s (nofollow %v) is a block node", c.p, c.nofollow)
		}
	}
}
