// Package virtio9p is the kernel's 9P2000.L client over a virtio-9p device
// (virtio 1.1 §5.11): the host share. Client speaks the protocol — version,
// attach, walk, getattr, setattr, lopen, lcreate, read, write, clunk,
// readdir, mkdir, unlinkat, renameat, symlink, readlink, fsync, statfs,
// link — with a fixed fid table and fixed request slots (a slot is a tag:
// several tasks may have requests in flight); Transport is the virtio half
// (one request queue, each request a chain of the slot's pages, the mount
// tag from the device configuration). Errors are the server's Rlerror
// errno (Linux's), passed through; transport or protocol failures are EIO.
//
// What it does not do: find devices or route interrupts, block or wake
// (the Env type parameter does both), cache anything (every call is a
// round trip: what the guest writes is on the host when the call
// returns), or allocate: memory comes from the caller's Mem at Init, once.
//
// Kernel-context: no heap allocation, no Go pointers stored (addresses are
// uintptr, device addresses uint64), no runtime scheduler calls.
package virtio9p

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

const (
	// Slots is how many requests may be in flight at once (tags 0 to
	// Slots-1); a task finding none free waits for one.
	Slots = 6
	// DataPages is each slot's data buffer, in pages: read and write
	// data go there, so a request moves at most this much.
	DataPages = 16
	// NumFids is the size of the fid table: open files and walks in
	// progress. Fid 0 is the root.
	NumFids = 1024

	pageSize = 4096
	// MaxData is the most data one Tread or Twrite moves.
	MaxData = DataPages * pageSize
	// Msize is the message size proposed to the server.
	Msize = MaxData + IOHdrSize
)

// Errno is a Linux error number; 0 is success.
type Errno uint32

const (
	ENOENT       Errno = 2
	EIO          Errno = 5
	EFAULT       Errno = 14
	ENOTDIR      Errno = 20
	ENFILE       Errno = 23
	ENAMETOOLONG Errno = 36
)

// Mem gives the client memory: whole zeroed pages. A type-parameter
// constraint, never an interface value.
type Mem interface {
	// Page returns a zeroed 4 KiB page: the CPU's address and the
	// device's; virt 0 when memory is exhausted.
	Page() (virt uintptr, phys uint64)
}

// Env is the client's environment. A type-parameter constraint.
type Env interface {
	// Lock and Unlock guard the client's fid table and free slots.
	Lock()
	Unlock()
	// Exchange sends slot s's request — out bytes of its request page,
	// then outData bytes of its data pages — and waits for the reply:
	// into the reply page (only its first ReplyHdr bytes when inData >
	// 0), then inData bytes of the data pages. It returns the reply's
	// length, false if the transport failed.
	Exchange(s, out, outData, inData int) (int, bool)
	// Post sends slot s's request (out bytes of its request page, a
	// reply without data) and returns at once: when the reply is in,
	// the environment calls the client's Complete(s). False if the
	// transport failed.
	Post(s, out int) bool
	// Wait blocks while *addr == val; Wake wakes the waiters on addr.
	Wait(addr *uint32, val uint32)
	Wake(addr *uint32)
	// Copy copies n bytes from src to dst, one of them a caller's
	// buffer of Read, Readdir or Write — the program's memory, which
	// another thread may unmap while a request waits — and reports
	// false if that faulted (the call then gives EFAULT).
	Copy(dst, src uintptr, n int) bool
}

// ReplyHdr is the part of the reply page a request with reply data
// (Tread, Treaddir) uses: the header before the data.
const ReplyHdr = rdHdr

// Fid names a file on the server.
type Fid uint32

// Root is the attached root of the share.
const Root Fid = 0

// Client is one 9P2000.L session. Pointer-free; its zero value is no
// session (Init).
type Client[E Env] struct {
	env     E
	msize   uint32
	chunk   int    // data per Tread/Twrite
	free    uint32 // free slots, a bit each
	freeSeq uint32 // bumped when a slot is freed (atomic)
	fids    [NumFids / 64]uint64
	posted  uint32     // slots holding a posted clunk, a bit each
	postFid [Slots]Fid // the fid each posted clunk frees

	req, rep         [Slots]uintptr
	reqPhys, repPhys [Slots]uint64
	data             [Slots][DataPages]uintptr
	dataPhys         [Slots][DataPages]uint64
}

func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func bytesAt(a uintptr, n int) []byte { return unsafe.Slice(at[byte](a), n) }

// Init takes the slots' pages from m, negotiates the version and message
// size and attaches fid 0 to the share's root.
func Init[E Env, M Mem](c *Client[E], env E, m M) Errno {
	*c = Client[E]{env: env}
	for s := 0; s < Slots; s++ {
		c.req[s], c.reqPhys[s] = m.Page()
		c.rep[s], c.repPhys[s] = m.Page()
		if c.req[s] == 0 || c.rep[s] == 0 {
			return EIO
		}
		for i := range c.data[s] {
			c.data[s][i], c.dataPhys[s][i] = m.Page()
			if c.data[s][i] == 0 {
				return EIO
			}
		}
	}
	c.free = 1<<Slots - 1
	c.fids[0] = 1 // Root
	c.msize, c.chunk = Msize, MaxData

	s := c.get()
	e := c.enc(s, Tversion, NoTag)
	e.u32(Msize)
	e.str(version[:])
	d, err := c.rpc(s, &e, 0, 0, Tversion+1)
	if err == 0 {
		ms, v := d.u32(), d.str()
		if d.bad || string(v) != string(version[:]) || ms < pageSize {
			err = EIO
		} else if ms < Msize {
			c.msize, c.chunk = ms, int(ms)-IOHdrSize
		}
	}
	if err == 0 {
		e = c.enc(s, Tattach, uint16(s))
		e.u32(uint32(Root))
		e.u32(NoFid)
		e.str(nil) // uname: n_uname says who
		e.str(nil) // aname: the export
		e.u32(0)   // n_uname: root
		_, err = c.rpc(s, &e, 0, 0, Tattach+1)
	}
	c.put(s)
	return err
}

var version = [...]byte{'9', 'P', '2', '0', '0', '0', '.', 'L'}

// Msize is the negotiated message size.
func (c *Client[E]) Msize() uint32 { return c.msize }

// SlotPages gives the device addresses of slot s's pages (Transport).
func (c *Client[E]) SlotPages(s int) (req, rep uint64, data *[DataPages]uint64) {
	return c.reqPhys[s], c.repPhys[s], &c.dataPhys[s]
}

// SlotMem gives the CPU addresses of slot s's pages (a model device).
func (c *Client[E]) SlotMem(s int) (req, rep uintptr, data *[DataPages]uintptr) {
	return c.req[s], c.rep[s], &c.data[s]
}

// get takes a free slot, waiting for one if all are in flight.
func (c *Client[E]) get() int {
	for {
		c.env.Lock()
		if c.free != 0 {
			s := bits.TrailingZeros32(c.free)
			c.free &^= 1 << s
			c.env.Unlock()
			return s
		}
		seq := atomic.LoadUint32(&c.freeSeq)
		c.env.Unlock()
		c.env.Wait(&c.freeSeq, seq)
	}
}

func (c *Client[E]) put(s int) {
	c.env.Lock()
	c.free |= 1 << s
	atomic.AddUint32(&c.freeSeq, 1)
	c.env.Unlock()
	c.env.Wake(&c.freeSeq)
}

// newFid takes a free fid; NoFid when the table is full.
func (c *Client[E]) newFid() Fid {
	f := Fid(NoFid)
	c.env.Lock()
	for i, w := range c.fids {
		if w != ^uint64(0) {
			b := bits.TrailingZeros64(^w)
			c.fids[i] |= 1 << b
			f = Fid(i*64 + b)
			break
		}
	}
	c.env.Unlock()
	return f
}

func (c *Client[E]) freeFid(f Fid) {
	if f == Root || f >= NumFids {
		return
	}
	c.env.Lock()
	c.fids[f/64] &^= 1 << (f % 64)
	c.env.Unlock()
}

// FidsInUse counts the fids taken, the root included (tests).
func (c *Client[E]) FidsInUse() int {
	n := 0
	c.env.Lock()
	for _, w := range c.fids {
		n += bits.OnesCount64(w)
	}
	c.env.Unlock()
	return n
}

func (c *Client[E]) enc(s int, t uint8, tag uint16) enc {
	e := enc{b: bytesAt(c.req[s], pageSize)}
	e.start(t, tag)
	return e
}

// rpc sends the request e encoded in slot s (then outData bytes of data)
// and checks the reply: the decoder after its header, or the errno. For a
// reply with data (inData > 0) the decoder's data is how many of the
// message's bytes lie in the data pages: no more than the device wrote.
func (c *Client[E]) rpc(s int, e *enc, outData, inData int, want uint8) (dec, Errno) {
	n := e.finish(outData)
	if e.bad {
		return dec{}, ENAMETOOLONG // only names make a request outgrow its page
	}
	rl, ok := c.env.Exchange(s, n, outData, inData)
	if !ok {
		return dec{}, EIO
	}
	hl := pageSize
	if inData > 0 {
		hl = rdHdr
	}
	d := dec{b: bytesAt(c.rep[s], min(rl, hl))}
	size, typ, tag := d.u32(), d.u8(), d.u16()
	if d.bad || int(size) > rl || tag != uint16(e.b[5])|uint16(e.b[6])<<8 {
		return dec{}, EIO
	}
	if typ == Rlerror {
		if ec := Errno(d.u32()); !d.bad && ec != 0 {
			return dec{}, ec
		}
		return dec{}, EIO
	}
	if typ != want {
		return dec{}, EIO
	}
	if int(size) < len(d.b) {
		d.b = d.b[:size]
	}
	if inData > 0 {
		d.data = int(size) - hl // size <= rl: written by the device
	}
	return d, 0
}

// simple runs a request whose reply carries nothing the caller needs.
func (c *Client[E]) simple(s int, e *enc, want uint8) Errno {
	_, err := c.rpc(s, e, 0, 0, want)
	c.put(s)
	return err
}

// Walk walks path from fid from to a new fid: path's names are separated
// by '/' (runs of them, and "." names, are skipped; ".." goes to the
// parent, as the server has it). An empty path clones from. It returns
// the new fid and the last name's qid (from's for an empty path: zero).
func (c *Client[E]) Walk(from Fid, path []byte) (Fid, Qid, Errno) {
	nf := c.newFid()
	if nf == NoFid {
		return NoFid, Qid{}, ENFILE
	}
	s := c.get()
	cur := from
	var last Qid
	i := 0
	for first := true; first || i < len(path); first = false {
		e := c.enc(s, Twalk, uint16(s))
		e.u32(uint32(cur))
		e.u32(uint32(nf))
		countAt := e.n
		e.u16(0)
		n := 0
		for n < MaxWalk && i < len(path) {
			j := i
			for j < len(path) && path[j] != '/' {
				j++
			}
			name := path[i:j]
			i = j
			for i < len(path) && path[i] == '/' {
				i++
			}
			if len(name) == 0 || len(name) == 1 && name[0] == '.' {
				continue
			}
			if len(name) > 255 {
				c.put(s)
				c.walkFail(nf, cur)
				return NoFid, Qid{}, ENAMETOOLONG
			}
			e.str(name)
			n++
		}
		if n == 0 && !first {
			break
		}
		if !e.bad {
			e.b[countAt], e.b[countAt+1] = byte(n), byte(n>>8)
		}
		d, err := c.rpc(s, &e, 0, 0, Twalk+1)
		nq := int(d.u16())
		if err == 0 && (d.bad || nq > n) {
			err = EIO
		}
		for k := 0; err == 0 && k < nq; k++ {
			last = d.qid()
		}
		if err == 0 && d.bad {
			err = EIO
		}
		if err == 0 && nq < n {
			err = ENOENT
			if nq > 0 && last.Type&QTDir == 0 {
				err = ENOTDIR
			}
		}
		if err != 0 {
			c.put(s)
			c.walkFail(nf, cur)
			return NoFid, Qid{}, err
		}
		cur = nf
	}
	c.put(s)
	return nf, last, 0
}

// walkFail releases the new fid of a failed walk: clunked if an earlier
// batch of names made it (cur is it), else only freed.
func (c *Client[E]) walkFail(nf, cur Fid) {
	if cur == nf {
		c.Clunk(nf)
		return
	}
	c.freeFid(nf)
}

// Clunk forgets fid f (the root stays). It does not wait for the answer
// (the server forgets the fid even on an error, the protocol says): the
// request is posted, and the fid and slot are free again when the reply
// is in (Complete). Only a transport failure is an error.
func (c *Client[E]) Clunk(f Fid) Errno {
	if f == Root || f == NoFid {
		return 0
	}
	s := c.get()
	e := c.enc(s, Tclunk, uint16(s))
	e.u32(uint32(f))
	n := e.finish(0)
	c.env.Lock()
	c.posted |= 1 << s
	c.postFid[s] = f
	c.env.Unlock()
	if !c.env.Post(s, n) {
		c.Complete(s)
		return EIO
	}
	return 0
}

// Complete is the environment's word that slot s's reply is in. For a
// posted request it frees the request's fid and the slot and returns
// true; false if the reply is a waiter's (Exchange's).
func (c *Client[E]) Complete(s int) bool {
	c.env.Lock()
	if c.posted&(1<<s) == 0 {
		c.env.Unlock()
		return false
	}
	c.posted &^= 1 << s
	f := c.postFid[s]
	c.fids[f/64] &^= 1 << (f % 64)
	c.free |= 1 << s
	atomic.AddUint32(&c.freeSeq, 1)
	c.env.Unlock()
	c.env.Wake(&c.freeSeq)
	return true
}

// Getattr reads f's attributes.
func (c *Client[E]) Getattr(f Fid, a *Attr) Errno {
	s := c.get()
	e := c.enc(s, Tgetattr, uint16(s))
	e.u32(uint32(f))
	e.u64(GetattrBasic)
	d, err := c.rpc(s, &e, 0, 0, Tgetattr+1)
	if err == 0 {
		*a = Attr{Valid: d.u64(), Qid: d.qid(), Mode: d.u32(), UID: d.u32(), GID: d.u32(),
			Nlink: d.u64(), Rdev: d.u64(), Size: d.u64(), Blksize: d.u64(), Blocks: d.u64(),
			Atime: d.u64(), AtimeNs: d.u64(), Mtime: d.u64(), MtimeNs: d.u64(), Ctime: d.u64(), CtimeNs: d.u64()}
		if d.bad {
			err = EIO
		}
	}
	c.put(s)
	return err
}

// Setattr changes f's attributes (a.Valid says which).
func (c *Client[E]) Setattr(f Fid, a *SetAttr) Errno {
	s := c.get()
	e := c.enc(s, Tsetattr, uint16(s))
	e.u32(uint32(f))
	e.u32(a.Valid)
	e.u32(a.Mode)
	e.u32(a.UID)
	e.u32(a.GID)
	e.u64(a.Size)
	e.u64(a.Atime)
	e.u64(a.AtimeNs)
	e.u64(a.Mtime)
	e.u64(a.MtimeNs)
	return c.simple(s, &e, Tsetattr+1)
}

// Lopen opens f (flags: Linux's O_ACCMODE, O_TRUNC, O_APPEND...).
func (c *Client[E]) Lopen(f Fid, flags uint32) (Qid, Errno) {
	s := c.get()
	e := c.enc(s, Tlopen, uint16(s))
	e.u32(uint32(f))
	e.u32(flags)
	d, err := c.rpc(s, &e, 0, 0, Tlopen+1)
	q := d.qid()
	if err == 0 && d.bad {
		err = EIO
	}
	c.put(s)
	return q, err
}

// Lcreate creates and opens name in directory dir, which becomes the new
// open file.
func (c *Client[E]) Lcreate(dir Fid, name []byte, flags, mode uint32) (Qid, Errno) {
	s := c.get()
	e := c.enc(s, Tlcreate, uint16(s))
	e.u32(uint32(dir))
	e.str(name)
	e.u32(flags)
	e.u32(mode)
	e.u32(0) // gid
	d, err := c.rpc(s, &e, 0, 0, Tlcreate+1)
	q := d.qid()
	if err == 0 && d.bad {
		err = EIO
	}
	c.put(s)
	return q, err
}

// Read reads from f at off into p, as many requests as p needs; it stops
// at the first short one (end of file).
func (c *Client[E]) Read(f Fid, off uint64, p []byte) (int, Errno) {
	done := 0
	for done < len(p) {
		want := min(len(p)-done, c.chunk)
		n, err := c.read1(Tread, f, off+uint64(done), p[done:done+want])
		if err != 0 {
			if done > 0 {
				return done, 0
			}
			return 0, err
		}
		done += n
		if n < want {
			break
		}
	}
	return done, 0
}

// Readdir reads directory entries of f from offset off (0, or an entry's
// Offset) into p: Rreaddir's data (NextDirEntry parses it), at most one
// request's worth.
func (c *Client[E]) Readdir(f Fid, off uint64, p []byte) (int, Errno) {
	return c.read1(Treaddir, f, off, p)
}

// read1 is one Tread or Treaddir of at most a chunk into p.
func (c *Client[E]) read1(t uint8, f Fid, off uint64, p []byte) (int, Errno) {
	want := min(len(p), c.chunk)
	s := c.get()
	e := c.enc(s, t, uint16(s))
	e.u32(uint32(f))
	e.u64(off)
	e.u32(uint32(want))
	d, err := c.rpc(s, &e, 0, want, t+1)
	n := int(d.u32())
	// The count is the server's word: more than asked, or than the
	// device wrote into the data pages, would hand the caller what they
	// held before (another request's data).
	if err == 0 && (d.bad || n > want || n > d.data) {
		err = EIO
	}
	if err == 0 && !c.fromPages(s, p[:n]) {
		err = EFAULT
	}
	c.put(s)
	if err != 0 {
		return 0, err
	}
	return n, 0
}

// Write writes p to f at off, as many requests as p needs; it stops at
// the first short one.
func (c *Client[E]) Write(f Fid, off uint64, p []byte) (int, Errno) {
	done := 0
	for done < len(p) {
		k := min(len(p)-done, c.chunk)
		s := c.get()
		if !c.toPages(s, p[done:done+k]) {
			c.put(s)
			if done > 0 {
				return done, 0
			}
			return 0, EFAULT
		}
		e := c.enc(s, Twrite, uint16(s))
		e.u32(uint32(f))
		e.u64(off + uint64(done))
		e.u32(uint32(k))
		d, err := c.rpc(s, &e, k, 0, Twrite+1)
		n := int(d.u32())
		if err == 0 && (d.bad || n > k) {
			err = EIO
		}
		c.put(s)
		if err != 0 {
			if done > 0 {
				return done, 0
			}
			return 0, err
		}
		done += n
		if n < k {
			break
		}
	}
	return done, 0
}

// toPages copies p into slot s's data pages, fromPages the pages into p,
// through the environment's Copy: false if p faulted.
func (c *Client[E]) toPages(s int, p []byte) bool {
	for i := 0; len(p) > 0; i++ {
		k := min(len(p), pageSize)
		if !c.env.Copy(c.data[s][i], addrOf(p), k) {
			return false
		}
		p = p[k:]
	}
	return true
}

func (c *Client[E]) fromPages(s int, p []byte) bool {
	for i := 0; len(p) > 0; i++ {
		k := min(len(p), pageSize)
		if !c.env.Copy(addrOf(p), c.data[s][i], k) {
			return false
		}
		p = p[k:]
	}
	return true
}

func addrOf(p []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(p))) }

// Mkdir makes directory name in dir.
func (c *Client[E]) Mkdir(dir Fid, name []byte, mode uint32) Errno {
	s := c.get()
	e := c.enc(s, Tmkdir, uint16(s))
	e.u32(uint32(dir))
	e.str(name)
	e.u32(mode)
	e.u32(0)
	return c.simple(s, &e, Tmkdir+1)
}

// Unlinkat removes name from dir (flags: AT_REMOVEDIR, 0x200).
func (c *Client[E]) Unlinkat(dir Fid, name []byte, flags uint32) Errno {
	s := c.get()
	e := c.enc(s, Tunlinkat, uint16(s))
	e.u32(uint32(dir))
	e.str(name)
	e.u32(flags)
	return c.simple(s, &e, Tunlinkat+1)
}

// Renameat renames oname in odir to nname in ndir.
func (c *Client[E]) Renameat(odir Fid, oname []byte, ndir Fid, nname []byte) Errno {
	s := c.get()
	e := c.enc(s, Trenameat, uint16(s))
	e.u32(uint32(odir))
	e.str(oname)
	e.u32(uint32(ndir))
	e.str(nname)
	return c.simple(s, &e, Trenameat+1)
}

// Symlink makes name in dir a symbolic link to target.
func (c *Client[E]) Symlink(dir Fid, name, target []byte) Errno {
	s := c.get()
	e := c.enc(s, Tsymlink, uint16(s))
	e.u32(uint32(dir))
	e.str(name)
	e.str(target)
	e.u32(0)
	return c.simple(s, &e, Tsymlink+1)
}

// Link makes name in dir a hard link to f.
func (c *Client[E]) Link(dir, f Fid, name []byte) Errno {
	s := c.get()
	e := c.enc(s, Tlink, uint16(s))
	e.u32(uint32(dir))
	e.u32(uint32(f))
	e.str(name)
	return c.simple(s, &e, Tlink+1)
}

// Readlink reads symbolic link f's target into p: its length (the
// target is cut to len(p)).
func (c *Client[E]) Readlink(f Fid, p []byte) (int, Errno) {
	s := c.get()
	e := c.enc(s, Treadlink, uint16(s))
	e.u32(uint32(f))
	d, err := c.rpc(s, &e, 0, 0, Treadlink+1)
	t := d.str()
	if err == 0 && d.bad {
		err = EIO
	}
	n := copy(p, t)
	c.put(s)
	return n, err
}

// Fsync makes f's data (and with datasync false its metadata) durable on
// the host.
func (c *Client[E]) Fsync(f Fid, datasync bool) Errno {
	s := c.get()
	e := c.enc(s, Tfsync, uint16(s))
	e.u32(uint32(f))
	ds := uint32(0)
	if datasync {
		ds = 1
	}
	e.u32(ds)
	return c.simple(s, &e, Tfsync+1)
}

// Statfs reads the file system's figures.
func (c *Client[E]) Statfs(f Fid, st *Statfs) Errno {
	s := c.get()
	e := c.enc(s, Tstatfs, uint16(s))
	e.u32(uint32(f))
	d, err := c.rpc(s, &e, 0, 0, Tstatfs+1)
	if err == 0 {
		*st = Statfs{Type: d.u32(), Bsize: d.u32(), Blocks: d.u64(), Bfree: d.u64(), Bavail: d.u64(),
			Files: d.u64(), Ffree: d.u64(), Fsid: d.u64(), Namelen: d.u32()}
		if d.bad {
			err = EIO
		}
	}
	c.put(s)
	return err
}
