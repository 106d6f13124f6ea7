package virtio9p

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"
)

// The model: a 9P2000.L server in the test process over a host directory
// (the calls QEMU's "local" backend makes, so errno is the host's), and
// a model device that gathers a slot's request from its pages and
// scatters the reply into them as virtio would.

type model struct {
	mu     sync.Mutex
	c      *Client[*model]
	srv    *server
	mem    [][]byte // keeps the pages alive
	tamper func(s int, reply []byte) []byte
	calls  atomic.Int64
	posts  sync.WaitGroup
}

// Post runs the request on a goroutine of its own, as a device answers
// while the task goes on.
func (m *model) Post(s, out int) bool {
	m.posts.Add(1)
	go func() {
		defer m.posts.Done()
		m.Exchange(s, out, 0, 0)
		if !m.c.Complete(s) {
			panic("Complete of a posted slot said it was not posted")
		}
	}()
	return true
}

// fidsInUse counts the fids once every posted clunk is answered.
func (m *model) fidsInUse() int {
	m.posts.Wait()
	return m.c.FidsInUse()
}

func (m *model) Lock()   { m.mu.Lock() }
func (m *model) Unlock() { m.mu.Unlock() }
func (m *model) Copy(dst, src uintptr, n int) bool {
	copy(bytesAt(dst, n), bytesAt(src, n))
	return true
}

func (m *model) Wait(addr *uint32, val uint32) {
	for atomic.LoadUint32(addr) == val {
		runtime.Gosched()
	}
}
func (m *model) Wake(addr *uint32) {}

func (m *model) Page() (uintptr, uint64) {
	p := make([]byte, pageSize)
	m.mem = append(m.mem, p)
	a := uintptr(unsafe.Pointer(&p[0]))
	return a, uint64(a)
}

func (m *model) Exchange(s, out, outData, inData int) (int, bool) {
	m.calls.Add(1)
	req, rep, data := m.c.SlotMem(s)
	msg := append([]byte(nil), bytesAt(req, out)...)
	for i := 0; outData > 0; i++ {
		k := min(outData, pageSize)
		msg = append(msg, bytesAt(data[i], k)...)
		outData -= k
	}
	if int(binary.LittleEndian.Uint32(msg)) != len(msg) {
		return 0, false
	}
	r := m.srv.handle(msg)
	if m.tamper != nil {
		r = m.tamper(s, r)
	}
	// Scatter as the device does: the reply page, then the data pages.
	hl := pageSize
	if inData > 0 {
		hl = ReplyHdr
	}
	if len(r) > hl+inData {
		return 0, false // the device would fail the request
	}
	rest := r[copy(bytesAt(rep, hl), r):]
	for i := 0; len(rest) > 0; i++ {
		rest = rest[copy(bytesAt(data[i], pageSize), rest):]
	}
	return len(r), true
}

func newModel(t *testing.T, dir string) *model {
	m := &model{srv: &server{root: dir, fids: map[uint32]*sfid{}}}
	m.c = new(Client[*model])
	if e := Init(m.c, m, m); e != 0 {
		t.Fatalf("Init: errno %d", e)
	}
	return m
}

type sfid struct {
	path string
	f    *os.File
	ents []string // a directory's names, "." and ".." first
}

type server struct {
	root  string
	mu    sync.Mutex
	fids  map[uint32]*sfid
	msize uint32
}

func errnoOf(err error) uint32 {
	if err == nil {
		return 0
	}
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	if le, ok := err.(*os.LinkError); ok {
		err = le.Err
	}
	if se, ok := err.(*os.SyscallError); ok {
		err = se.Err
	}
	if en, ok := err.(syscall.Errno); ok {
		return uint32(en)
	}
	return uint32(syscall.EIO)
}

type wbuf struct{ b []byte }

func (w *wbuf) u8(v uint8)   { w.b = append(w.b, v) }
func (w *wbuf) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *wbuf) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *wbuf) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *wbuf) str(s string) { w.u16(uint16(len(s))); w.b = append(w.b, s...) }
func (w *wbuf) qid(st *syscall.Stat_t) {
	t := uint8(0)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		t = QTDir
	case syscall.S_IFLNK:
		t = QTSymlink
	}
	w.u8(t)
	w.u32(0)
	w.u64(st.Ino)
}

func (s *server) handle(msg []byte) []byte {
	d := dec{b: msg}
	d.u32()
	typ, tag := d.u8(), d.u16()
	w := &wbuf{b: make([]byte, 7)}
	e := s.op(typ, &d, w)
	if d.bad && e == 0 {
		e = uint32(syscall.EPROTO)
	}
	if e != 0 {
		w.b = w.b[:7]
		w.u32(e)
		typ = Rlerror - 1
	}
	binary.LittleEndian.PutUint32(w.b, uint32(len(w.b)))
	w.b[4] = typ + 1
	binary.LittleEndian.PutUint16(w.b[5:], tag)
	return w.b
}

func (s *server) fid(n uint32) (*sfid, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fids[n]
	if f == nil {
		return nil, uint32(syscall.EBADF)
	}
	return f, 0
}

func (s *server) setFid(n uint32, f *sfid) {
	s.mu.Lock()
	s.fids[n] = f
	s.mu.Unlock()
}

func (s *server) child(dir *sfid, name []byte) string { return filepath.Join(dir.path, string(name)) }

func (s *server) op(typ uint8, d *dec, w *wbuf) uint32 {
	switch typ {
	case Tversion:
		ms := d.u32()
		v := d.str()
		s.msize = min(ms, 1<<20)
		w.u32(s.msize)
		w.str(string(v))
	case Tattach:
		fid := d.u32()
		d.u32()
		d.str()
		d.str()
		d.u32()
		var st syscall.Stat_t
		if err := syscall.Lstat(s.root, &st); err != nil {
			return errnoOf(err)
		}
		s.setFid(fid, &sfid{path: s.root})
		w.qid(&st)
	case Twalk:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		nf := d.u32()
		n := int(d.u16())
		p := f.path
		w.u16(0)
		for i := 0; i < n; i++ {
			name := string(d.str())
			if name == ".." {
				if p != s.root {
					p = filepath.Dir(p)
				}
			} else {
				p = filepath.Join(p, name)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				if i == 0 {
					return errnoOf(err)
				}
				binary.LittleEndian.PutUint16(w.b[7:], uint16(i))
				return 0
			}
			w.qid(&st)
		}
		binary.LittleEndian.PutUint16(w.b[7:], uint16(n))
		s.setFid(nf, &sfid{path: p})
	case Tclunk:
		n := d.u32()
		f, e := s.fid(n)
		if e != 0 {
			return e
		}
		if f.f != nil {
			f.f.Close()
		}
		s.mu.Lock()
		delete(s.fids, n)
		s.mu.Unlock()
	case Tgetattr:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		d.u64()
		var st syscall.Stat_t
		if err := syscall.Lstat(f.path, &st); err != nil {
			return errnoOf(err)
		}
		w.u64(GetattrBasic)
		w.qid(&st)
		w.u32(st.Mode)
		w.u32(st.Uid)
		w.u32(st.Gid)
		w.u64(uint64(st.Nlink))
		w.u64(st.Rdev)
		w.u64(uint64(st.Size))
		w.u64(uint64(st.Blksize))
		w.u64(uint64(st.Blocks))
		for _, t := range []syscall.Timespec{st.Atim, st.Mtim, st.Ctim, {}} {
			w.u64(uint64(t.Sec))
			w.u64(uint64(t.Nsec))
		}
		w.u64(0)
		w.u64(0)
	case Tsetattr:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		valid, mode, _, _, size := d.u32(), d.u32(), d.u32(), d.u32(), d.u64()
		as, an, ms, mn := d.u64(), d.u64(), d.u64(), d.u64()
		if valid&SetMode != 0 {
			if err := syscall.Chmod(f.path, mode); err != nil {
				return errnoOf(err)
			}
		}
		if valid&SetSize != 0 {
			if err := syscall.Truncate(f.path, int64(size)); err != nil {
				return errnoOf(err)
			}
		}
		if valid&(SetAtime|SetMtime) != 0 {
			ts := []syscall.Timespec{{Nsec: 1<<30 - 2}, {Nsec: 1<<30 - 2}} // UTIME_OMIT
			if valid&SetAtime != 0 {
				ts[0] = syscall.Timespec{Nsec: 1<<30 - 1} // UTIME_NOW
				if valid&SetAtimeSet != 0 {
					ts[0] = syscall.Timespec{Sec: int64(as), Nsec: int64(an)}
				}
			}
			if valid&SetMtime != 0 {
				ts[1] = syscall.Timespec{Nsec: 1<<30 - 1}
				if valid&SetMtimeSet != 0 {
					ts[1] = syscall.Timespec{Sec: int64(ms), Nsec: int64(mn)}
				}
			}
			if err := syscall.UtimesNano(f.path, ts); err != nil {
				return errnoOf(err)
			}
		}
	case Tlopen, Tlcreate:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		p := f.path
		var mode uint32
		if typ == Tlcreate {
			p = s.child(f, d.str())
		}
		flags := int(d.u32())
		if typ == Tlcreate {
			mode = d.u32()
			d.u32()
			flags |= os.O_CREATE
		}
		of, err := os.OpenFile(p, flags&(syscall.O_ACCMODE|syscall.O_TRUNC|syscall.O_APPEND|syscall.O_CREAT|syscall.O_EXCL)|syscall.O_NOFOLLOW, os.FileMode(mode&0o777))
		if err != nil {
			return errnoOf(err)
		}
		var st syscall.Stat_t
		syscall.Fstat(int(of.Fd()), &st)
		nf := &sfid{path: p, f: of}
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			names, _ := of.Readdirnames(-1)
			sort.Strings(names)
			nf.ents = append([]string{".", ".."}, names...)
		}
		*f = *nf
		w.qid(&st)
		w.u32(0)
	case Tread, Twrite:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		off, n := d.u64(), d.u32()
		if f.f == nil {
			return uint32(syscall.EBADF)
		}
		if typ == Tread {
			b := make([]byte, min(n, s.msize-IOHdrSize))
			k, err := f.f.ReadAt(b, int64(off))
			if k == 0 && err != nil && err.Error() != "EOF" {
				return errnoOf(err)
			}
			w.u32(uint32(k))
			w.b = append(w.b, b[:k]...)
		} else {
			k, err := f.f.WriteAt(d.take(int(n)), int64(off))
			if err != nil {
				return errnoOf(err)
			}
			w.u32(uint32(k))
		}
	case Treaddir:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		off, n := d.u64(), d.u32()
		if f.ents == nil {
			return uint32(syscall.ENOTDIR)
		}
		w.u32(0)
		for i := int(off); i < len(f.ents); i++ {
			var st syscall.Stat_t
			syscall.Lstat(filepath.Join(f.path, f.ents[i]), &st)
			if len(w.b)-11+24+len(f.ents[i]) > int(n) {
				break
			}
			w.qid(&st)
			w.u64(uint64(i + 1))
			w.u8(uint8(st.Mode >> 12 & 15))
			w.str(f.ents[i])
		}
		binary.LittleEndian.PutUint32(w.b[7:], uint32(len(w.b)-11))
	case Tmkdir:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		p := s.child(f, d.str())
		if err := syscall.Mkdir(p, d.u32()); err != nil {
			return errnoOf(err)
		}
		var st syscall.Stat_t
		syscall.Lstat(p, &st)
		w.qid(&st)
	case Tunlinkat:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		p := s.child(f, d.str())
		var err error
		if d.u32()&0x200 != 0 {
			err = syscall.Rmdir(p)
		} else {
			err = syscall.Unlink(p)
		}
		return errnoOf(err)
	case Trenameat:
		of, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		on := d.str()
		nf, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		return errnoOf(syscall.Rename(s.child(of, on), s.child(nf, d.str())))
	case Tsymlink:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		p := s.child(f, d.str())
		if err := syscall.Symlink(string(d.str()), p); err != nil {
			return errnoOf(err)
		}
		var st syscall.Stat_t
		syscall.Lstat(p, &st)
		w.qid(&st)
	case Treadlink:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		t, err := os.Readlink(f.path)
		if err != nil {
			return errnoOf(err)
		}
		w.str(t)
	case Tlink:
		dir, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		return errnoOf(syscall.Link(f.path, s.child(dir, d.str())))
	case Tfsync:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		d.u32()
		if f.f == nil {
			return uint32(syscall.EBADF)
		}
		return errnoOf(f.f.Sync())
	case Tstatfs:
		f, e := s.fid(d.u32())
		if e != 0 {
			return e
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(f.path, &st); err != nil {
			return errnoOf(err)
		}
		w.u32(uint32(st.Type))
		w.u32(uint32(st.Bsize))
		w.u64(st.Blocks)
		w.u64(st.Bfree)
		w.u64(st.Bavail)
		w.u64(st.Files)
		w.u64(st.Ffree)
		w.u64(0)
		w.u32(uint32(st.Namelen))
	default:
		return uint32(syscall.EOPNOTSUPP)
	}
	return 0
}
