package virtio9p

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestMessageBytes checks requests byte for byte against the protocol's
// layout (the Linux client's bytes for the same calls).
func TestMessageBytes(t *testing.T) {
	b := make([]byte, 64)
	e := enc{b: b}
	e.start(Tversion, NoTag)
	e.u32(8192)
	e.str([]byte("9P2000.L"))
	n := e.finish(0)
	want := []byte{21, 0, 0, 0, 100, 0xff, 0xff, 0, 0x20, 0, 0, 8, 0, '9', 'P', '2', '0', '0', '0', '.', 'L'}
	if !bytes.Equal(b[:n], want) {
		t.Errorf("Tversion = % x\nwant       % x", b[:n], want)
	}
	e.start(Twrite, 3)
	e.u32(7)
	e.u64(0x1122334455667788)
	e.u32(5)
	n = e.finish(5)
	want = []byte{28, 0, 0, 0, 118, 3, 0, 7, 0, 0, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 5, 0, 0, 0}
	if !bytes.Equal(b[:n], want) || n != wrHdr {
		t.Errorf("Twrite = % x\nwant     % x", b[:n], want)
	}
	e = enc{b: make([]byte, 10)}
	e.start(Twalk, 1)
	e.str([]byte("toolong"))
	if e.finish(0); !e.bad {
		t.Error("an overlong message was not refused")
	}
	ent := []byte{QTDir, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, 4, 3, 0, 'a', 'b', 'c', 0xEE}
	de, used := NextDirEntry(ent)
	if used != 27 || de.Qid.Path != 9 || de.Offset != 42 || de.Type != 4 || string(de.Name) != "abc" {
		t.Errorf("NextDirEntry = %+v, %d", de, used)
	}
	if _, used := NextDirEntry(ent[:26]); used != 0 {
		t.Errorf("a truncated entry parsed: %d", used)
	}
}

func errno(e Errno) error {
	if e == 0 {
		return nil
	}
	return syscall.Errno(e)
}

// TestSession runs every call against the model server on a host
// directory: data across request boundaries, attributes, directory
// listings and the host's errno for the usual failures.
func TestSession(t *testing.T) {
	dir := t.TempDir()
	m := newModel(t, dir)
	c := m.c
	if c.Msize() != Msize {
		t.Errorf("msize %d, want %d", c.Msize(), Msize)
	}
	// Create and write 3.5 chunks; the host sees every byte.
	f, _, e := c.Walk(Root, nil)
	if e != 0 {
		t.Fatal(errno(e))
	}
	if _, e := c.Lcreate(f, []byte("a.bin"), syscall.O_RDWR, 0o644); e != 0 {
		t.Fatal(errno(e))
	}
	data := make([]byte, MaxData*7/2)
	rand.New(rand.NewSource(1)).Read(data)
	if n, e := c.Write(f, 0, data); n != len(data) || e != 0 {
		t.Fatalf("Write = %d, %v", n, errno(e))
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.bin")); !bytes.Equal(got, data) {
		t.Fatalf("the host file differs (%d bytes)", len(got))
	}
	back := make([]byte, len(data)+100)
	if n, e := c.Read(f, 0, back); n != len(data) || e != 0 || !bytes.Equal(back[:n], data) {
		t.Fatalf("Read = %d, %v", n, errno(e))
	}
	if n, e := c.Read(f, 1000, back[:10]); n != 10 || e != 0 || !bytes.Equal(back[:10], data[1000:1010]) {
		t.Fatalf("Read at 1000 = %d, %v", n, errno(e))
	}
	var a Attr
	if e := c.Getattr(f, &a); e != 0 || a.Size != uint64(len(data)) || a.Mode != syscall.S_IFREG|0o644 {
		t.Errorf("Getattr = %+v, %v", a, errno(e))
	}
	if e := c.Setattr(f, &SetAttr{Valid: SetSize | SetMode | SetMtime | SetMtimeSet, Size: 10, Mode: 0o600, Mtime: 1e9, MtimeNs: 5}); e != 0 {
		t.Error(errno(e))
	}
	if st, err := os.Stat(filepath.Join(dir, "a.bin")); err != nil || st.Size() != 10 || st.Mode() != 0o600 || st.ModTime().UnixNano() != 1e18+5 {
		t.Errorf("after Setattr the host has %v, %v", st, err)
	}
	if e := c.Fsync(f, true); e != 0 {
		t.Error(errno(e))
	}
	c.Clunk(f)

	// Directories, links and renames.
	if e := c.Mkdir(Root, []byte("d"), 0o755); e != 0 {
		t.Fatal(errno(e))
	}
	if e := c.Mkdir(Root, []byte("d"), 0o755); e != Errno(syscall.EEXIST) {
		t.Errorf("mkdir twice: %v, want EEXIST", errno(e))
	}
	d, q, e := c.Walk(Root, []byte("./d//"))
	if e != 0 || q.Type&QTDir == 0 {
		t.Fatalf("walk d: %v %+v", errno(e), q)
	}
	if e := c.Renameat(Root, []byte("a.bin"), d, []byte("b.bin")); e != 0 {
		t.Fatal(errno(e))
	}
	if e := c.Symlink(d, []byte("l"), []byte("b.bin")); e != 0 {
		t.Fatal(errno(e))
	}
	l, q, e := c.Walk(Root, []byte("d/l"))
	if e != 0 || q.Type&QTSymlink == 0 {
		t.Fatalf("walk d/l: %v %+v", errno(e), q)
	}
	buf := make([]byte, 100)
	if n, e := c.Readlink(l, buf); e != 0 || string(buf[:n]) != "b.bin" {
		t.Errorf("Readlink = %q, %v", buf[:n], errno(e))
	}
	c.Clunk(l)
	b, _, e := c.Walk(d, []byte("b.bin"))
	if e != 0 {
		t.Fatal(errno(e))
	}
	if e := c.Link(Root, b, []byte("hard")); e != 0 {
		t.Error(errno(e))
	}
	c.Clunk(b)
	if e := c.Unlinkat(Root, []byte("d"), 0x200); e != Errno(syscall.ENOTEMPTY) {
		t.Errorf("rmdir non-empty: %v, want ENOTEMPTY", errno(e))
	}
	if e := c.Unlinkat(Root, []byte("d"), 0); e != Errno(syscall.EISDIR) {
		t.Errorf("unlink a directory: %v, want EISDIR", errno(e))
	}
	if _, _, e := c.Walk(Root, []byte("nothere/x")); e != Errno(syscall.ENOENT) {
		t.Errorf("walk a missing name: %v, want ENOENT", errno(e))
	}
	if _, _, e := c.Walk(Root, []byte("hard/x")); e != ENOTDIR {
		t.Errorf("walk through a file: %v, want ENOTDIR", errno(e))
	}
	// A deep path takes several Twalks.
	deep := bytes.Repeat([]byte("../d/"), 20)
	if f, _, e := c.Walk(d, deep); e != 0 {
		t.Errorf("walk of 40 names: %v", errno(e))
	} else {
		c.Clunk(f)
	}
	if _, _, e := c.Walk(Root, append(bytes.Repeat([]byte("d/../"), 10), "missing"...)); e != Errno(syscall.ENOENT) {
		t.Errorf("a deep walk failing in its second request: %v", errno(e))
	}

	// The listing, across several Treaddir requests.
	for i := 0; i < 50; i++ {
		os.WriteFile(filepath.Join(dir, "d", fmt.Sprintf("f%02d", i)), nil, 0o644)
	}
	if _, e := c.Lopen(d, syscall.O_RDONLY); e != 0 {
		t.Fatal(errno(e))
	}
	var names []string
	off := uint64(0)
	small := make([]byte, 200)
	for {
		n, e := c.Readdir(d, off, small)
		if e != 0 {
			t.Fatal(errno(e))
		}
		if n == 0 {
			break
		}
		for p := small[:n]; len(p) > 0; {
			de, k := NextDirEntry(p)
			if k == 0 {
				t.Fatal("bad entry")
			}
			names = append(names, string(de.Name))
			off = de.Offset
			p = p[k:]
		}
	}
	if len(names) != 2+52 || names[0] != "." || names[2] != "b.bin" {
		t.Errorf("listing: %d names %q", len(names), names)
	}
	var sf Statfs
	if e := c.Statfs(Root, &sf); e != 0 || sf.Bsize == 0 || sf.Namelen == 0 {
		t.Errorf("Statfs = %+v, %v", sf, errno(e))
	}
	c.Clunk(d)
	if n := m.fidsInUse(); n != 1 {
		t.Errorf("%d fids in use after every clunk, want the root's 1", n)
	}
	// The host's refusal of a mode-000 file, whatever it is for this user.
	os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0)
	_, hostErr := os.Open(filepath.Join(dir, "secret"))
	s, _, _ := c.Walk(Root, []byte("secret"))
	_, e = c.Lopen(s, syscall.O_RDONLY)
	if errnoOf(hostErr) != uint32(e) {
		t.Errorf("open of a mode-000 file: %v, host %v", errno(e), hostErr)
	}
	c.Clunk(s)
}

// TestConcurrent runs more tasks than slots, each with its own files, on
// one client: tags keep their replies apart, and a task waits for a slot.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	m := newModel(t, dir)
	c := m.c
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 3*Slots; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 20; i++ {
				name := []byte(fmt.Sprintf("g%d-%d", g, i))
				f, _, e := c.Walk(Root, nil)
				if e == 0 {
					_, e = c.Lcreate(f, name, syscall.O_RDWR, 0o644)
				}
				data := make([]byte, rng.Intn(3*MaxData))
				rng.Read(data)
				if e == 0 {
					_, e = c.Write(f, 0, data)
				}
				got := make([]byte, len(data))
				if e == 0 {
					_, e = c.Read(f, 0, got)
				}
				c.Clunk(f)
				if e == 0 && !bytes.Equal(got, data) {
					errs <- fmt.Errorf("%s: data differs", name)
					return
				}
				if e == 0 {
					e = c.Unlinkat(Root, name, 0)
				}
				if e != 0 {
					errs <- fmt.Errorf("%s: %v", name, errno(e))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := m.fidsInUse(); n != 1 {
		t.Errorf("%d fids in use, want 1", n)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files left", len(ents))
	}
}

// TestBadReplies: a reply with the wrong tag, type or size, an Rlerror
// of 0, a read claiming more than asked and a failed transport are EIO;
// any other errno passes through.
func TestBadReplies(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644)
	m := newModel(t, dir)
	c := m.c
	f, _, e := c.Walk(Root, []byte("f"))
	if e != 0 {
		t.Fatal(errno(e))
	}
	c.Lopen(f, syscall.O_RDONLY)
	cases := []struct {
		name   string
		tamper func(r []byte) []byte
		want   Errno
	}{
		{"wrong tag", func(r []byte) []byte { r[5]++; return r }, EIO},
		{"wrong type", func(r []byte) []byte { r[4] = Rlerror + 2; return r }, EIO},
		{"size beyond the reply", func(r []byte) []byte { r[0]++; return r }, EIO},
		{"truncated", func(r []byte) []byte { return r[:5] }, EIO},
		{"Rlerror 0", func(r []byte) []byte { return lerror(r, 0) }, EIO},
		{"Rlerror EXDEV", func(r []byte) []byte { return lerror(r, uint32(syscall.EXDEV)) }, Errno(syscall.EXDEV)},
		{"count above asked", func(r []byte) []byte {
			if r[4] == Tread+1 {
				binary.LittleEndian.PutUint32(r[7:], 1000)
			}
			return r
		}, EIO},
		// The count within what was asked, but past the data the device
		// wrote (the message's size agreeing with the used length): the
		// data pages' other bytes are an earlier request's.
		{"count past the data written", func(r []byte) []byte {
			if r[4] == Tread+1 {
				r = r[:rdHdr+2]
				binary.LittleEndian.PutUint32(r, rdHdr+2)
			}
			return r
		}, EIO},
	}
	buf := make([]byte, 10)
	for _, tc := range cases {
		m.tamper = func(s int, r []byte) []byte { return tc.tamper(r) }
		_, e := c.Read(f, 0, buf)
		if e != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, errno(e), errno(tc.want))
		}
	}
	m.tamper = nil
	if n, e := c.Read(f, 0, buf); e != 0 || string(buf[:n]) != "hello" {
		t.Errorf("after the bad replies: %q, %v", buf[:n], errno(e))
	}
}

func lerror(r []byte, e uint32) []byte {
	r = r[:11]
	binary.LittleEndian.PutUint32(r, 11)
	r[4] = Rlerror
	binary.LittleEndian.PutUint32(r[7:], e)
	return r
}
