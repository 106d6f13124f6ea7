package virtio9p

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"
	"time"
	"unsafe"
)

// The server's replies are the host's to write: every length and count
// in them (the message's size, a read's or write's count, a walk's
// number of qids, a string's length, the version's msize) may be
// anything, and the device may write fewer bytes than the message says.
// replyCase runs one client call against a device that answers its first
// request with a given reply (the others well) and checks what the
// client makes of it: no panic, no read past what the device wrote, data
// returned only from the bytes the device wrote, an error that is EIO or
// the server's, and every slot and fid back afterwards.
// FuzzReplies feeds it the fuzzer's replies, TestRepliesRandom 10^5
// mutations of good replies.

// fz is the fuzzed client's environment and memory: one request at a
// time, answered at once; a wait would be a hang.
type fz struct {
	t     testing.TB
	c     *Client[*fz]
	arena []byte
	used  int

	first  bool                // the next exchange is the call's first: it gets reply
	reply  func([]byte) []byte // the first exchange's reply from the good one; nil: the good one
	fail   bool                // the first exchange fails in the transport
	noPost bool                // Post fails
	good   []byte              // the first exchange's good reply (seeds)
	got    []byte              // what the device wrote into the data pages on the first exchange
	sent   []byte              // the first exchange's reply as sent
}

func (z *fz) Lock()   {}
func (z *fz) Unlock() {}
func (z *fz) Wait(addr *uint32, val uint32) {
	z.t.Fatalf("the client waits (*addr %d): with one call at a time this never ends", val)
}
func (z *fz) Wake(addr *uint32) {}
func (z *fz) Copy(dst, src uintptr, n int) bool {
	copy(bytesAt(dst, n), bytesAt(src, n))
	return true
}

// Page hands out the arena's pages, cleared (the arena is reused by the
// next client).
func (z *fz) Page() (uintptr, uint64) {
	if z.used+pageSize > len(z.arena) {
		return 0, 0
	}
	p := z.arena[z.used : z.used+pageSize]
	clear(p)
	z.used += pageSize
	a := uintptr(unsafe.Pointer(&p[0]))
	return a, uint64(a)
}

// Post completes a posted request (a clunk, whose reply nothing reads) at
// once.
func (z *fz) Post(s, out int) bool {
	if z.noPost {
		return false
	}
	z.c.Complete(s)
	return true
}

// stale fills the reply and data pages before a reply lands, as an
// earlier request would have left them.
const stale = 0xA5

func (z *fz) Exchange(s, out, outData, inData int) (int, bool) {
	req, rep, data := z.c.SlotMem(s)
	msg := bytesAt(req, out)
	r := goodReply(msg)
	first := z.first
	if first {
		z.first = false
		z.good = append([]byte(nil), r...)
		if z.fail {
			return 0, false
		}
		if z.reply != nil {
			r = z.reply(r)
		}
		z.sent = r
	}
	hl := pageSize
	if inData > 0 {
		hl = ReplyHdr
	}
	// The device writes at most what the chain holds; the used length
	// says how much it wrote.
	w := min(len(r), hl+inData)
	fill := func(a uintptr, n int) {
		b := bytesAt(a, n)
		for i := range b {
			b[i] = stale
		}
	}
	fill(rep, pageSize)
	for i := 0; i*pageSize < inData; i++ {
		fill(data[i], pageSize)
	}
	copy(bytesAt(rep, hl), r[:w])
	rest := r[min(hl, w):w]
	if first {
		z.got = append(z.got[:0], rest...)
	}
	for i := 0; len(rest) > 0; i++ {
		rest = rest[copy(bytesAt(data[i], pageSize), rest):]
	}
	return w, w > 0
}

// rbuf builds a reply.
type rbuf struct{ b []byte }

func (w *rbuf) u8(v uint8)   { w.b = append(w.b, v) }
func (w *rbuf) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *rbuf) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *rbuf) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *rbuf) str(s string) { w.u16(uint16(len(s))); w.b = append(w.b, s...) }
func (w *rbuf) qid(t uint8)  { w.u8(t); w.u32(1); w.u64(42) }

// goodReply is a well-formed reply to request msg: what a server that
// does everything asked would send.
func goodReply(msg []byte) []byte {
	d := dec{b: msg}
	d.u32()
	typ, tag := d.u8(), d.u16()
	w := &rbuf{b: make([]byte, HdrSize)}
	switch typ {
	case Tversion:
		w.u32(Msize)
		w.str(string(version[:]))
	case Tattach, Tmkdir, Tsymlink:
		w.qid(QTDir)
	case Twalk:
		d.u32()
		d.u32()
		n := d.u16()
		w.u16(n)
		for range n {
			w.qid(QTDir)
		}
	case Tread, Treaddir:
		d.u32()
		d.u64()
		n := d.u32()
		w.u32(n)
		for i := range n {
			w.u8(byte(i*7 + 1))
		}
	case Twrite:
		d.u32()
		d.u64()
		w.u32(d.u32())
	case Tgetattr:
		w.u64(GetattrBasic)
		w.qid(0)
		for range 3 {
			w.u32(0o644)
		}
		for range 13 {
			w.u64(7)
		}
	case Tlopen, Tlcreate:
		w.qid(0)
		w.u32(0)
	case Treadlink:
		w.str("a/target")
	case Tstatfs:
		w.u32(0x01021997)
		w.u32(4096)
		for range 6 {
			w.u64(100)
		}
		w.u32(255)
	}
	binary.LittleEndian.PutUint32(w.b, uint32(len(w.b)))
	w.b[4] = typ + 1
	binary.LittleEndian.PutUint16(w.b[5:], tag)
	return w.b
}

// The calls replyCase makes, one a case.
const (
	opRead = iota
	opReaddir
	opWrite
	opWalk
	opGetattr
	opLopen
	opLcreate
	opReadlink
	opStatfs
	opMkdir
	opInit
	numOps
)

var opNames = [numOps]string{"read", "readdir", "write", "walk", "getattr", "lopen", "lcreate", "readlink", "statfs", "mkdir", "init"}

// newFz is a client on a device that answers well.
func newFz(t testing.TB) *fz {
	z := &fz{t: t, arena: make([]byte, (2*Slots+Slots*DataPages)*pageSize)}
	z.c = new(Client[*fz])
	if e := Init(z.c, z, z); e != 0 {
		t.Fatalf("Init: errno %d", e)
	}
	return z
}

// reinit makes z's client anew in the same memory.
func (z *fz) reinit() Errno {
	z.used = 0
	return Init(z.c, z, z)
}

// replyCase runs call op with its first request answered by reply (from
// the good reply; nil: the good one) and checks the invariants.
func replyCase(t testing.TB, z *fz, op int, reply func([]byte) []byte, fail, noPost bool) Errno {
	t.Helper()
	z.t = t
	z.first, z.reply, z.fail, z.noPost, z.sent = true, reply, fail, noPost, nil
	c := z.c
	var e Errno
	var p [200]byte
	for i := range p {
		p[i] = 0x5A
	}
	want := 0 // the data the call reads
	n := 0
	switch op {
	case opRead:
		want = 100
		n, e = c.Read(Root, 0, p[:want])
	case opReaddir:
		want = 200
		n, e = c.Readdir(Root, 0, p[:want])
	case opWrite:
		n, e = c.Write(Root, 0, p[:150])
		if e == 0 && n > 150 {
			t.Fatalf("write of 150 bytes wrote %d", n)
		}
	case opWalk:
		var f Fid
		f, _, e = c.Walk(Root, []byte("a/b/c"))
		if e == 0 {
			if f == Root || f >= NumFids {
				t.Fatalf("Walk gave fid %d", f)
			}
			z.noPost = false
			c.Clunk(f)
		}
	case opGetattr:
		var a Attr
		e = c.Getattr(Root, &a)
	case opLopen:
		_, e = c.Lopen(Root, 0)
	case opLcreate:
		_, e = c.Lcreate(Root, []byte("n"), 0, 0o644)
	case opReadlink:
		want = 5
		n, e = c.Readlink(Root, p[:want])
		// The target, cut to the buffer, from what the device wrote.
		if s := z.sent; e == 0 && (n > want || len(s) < 9+n || !bytes.Equal(p[:n], s[9:9+n])) {
			t.Fatalf("Readlink = %q from the reply % x", p[:n], s)
		}
		want = 0
	case opStatfs:
		var st Statfs
		e = c.Statfs(Root, &st)
	case opMkdir:
		e = c.Mkdir(Root, []byte("d"), 0o755)
	case opInit:
		e = z.reinit()
		if e != 0 || z.c.Msize() < pageSize || z.c.chunk <= 0 || z.c.chunk > MaxData {
			if e == 0 {
				t.Fatalf("Init took msize %d, chunk %d", z.c.Msize(), z.c.chunk)
			}
			z.first = false
			if e2 := z.reinit(); e2 != 0 {
				t.Fatalf("Init on a good device: %d", e2)
			}
		}
	}
	if want > 0 && e == 0 {
		// Data only from the bytes the device wrote, none past them.
		if n > want || n > len(z.got) {
			t.Fatalf("%s returned %d bytes of %d asked; the device wrote %d", opNames[op], n, want, len(z.got))
		}
		if !bytes.Equal(p[:n], z.got[:n]) {
			t.Fatalf("%s returned bytes the device did not write", opNames[op])
		}
	}
	if e != 0 && e != EIO && !(op == opWalk && (e == ENOENT || e == ENOTDIR)) {
		if s := z.sent; len(s) < rdHdr || s[4] != Rlerror || Errno(binary.LittleEndian.Uint32(s[7:])) != e {
			t.Fatalf("%s: errno %d, neither EIO nor the server's", opNames[op], e)
		}
	}
	if c.free != 1<<Slots-1 || c.posted != 0 {
		t.Fatalf("%s: slots free %#b, posted %#b after the call", opNames[op], c.free, c.posted)
	}
	if k := c.FidsInUse(); k != 1 {
		t.Fatalf("%s: %d fids in use after the call, want the root's", opNames[op], k)
	}
	return e
}

// fuzzFix are FuzzReplies' repairs of the fuzzer's reply, a bit each, so
// that it gets past the header checks: the request's tag, the expected
// type, the size the reply's length; and the transport's failures.
const (
	fixTag = 1 << iota
	fixType
	fixSize
	fixFail
	fixNoPost
)

var fzShared *fz

func FuzzReplies(f *testing.F) {
	// Seeds: each call's good reply, repaired and not, and a few bad ones.
	z := newFz(f)
	for op := range numOps {
		replyCase(f, z, op, nil, false, false)
		if op == opInit {
			continue // the seed is the attach's; the version's comes next
		}
		f.Add(uint8(op), uint8(fixTag|fixType|fixSize), z.good)
		f.Add(uint8(op), uint8(0), z.good)
	}
	f.Add(uint8(opInit), uint8(fixTag|fixType|fixSize), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x10, 1, 0, 8, 0, '9', 'P', '2', '0', '0', '0', '.', 'L'})
	f.Add(uint8(opRead), uint8(fixTag|fixType), []byte{13, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 1, 2})
	f.Add(uint8(opWalk), uint8(fixTag|fixType|fixSize), []byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 0x80, 1, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(opRead), uint8(fixTag|fixSize), []byte{0, 0, 0, 0, Rlerror, 0, 0, 2, 0, 0, 0})
	f.Add(uint8(opGetattr), uint8(fixFail), []byte{})
	f.Add(uint8(opWalk), uint8(fixTag|fixType|fixSize|fixNoPost), []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0x80, 1, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, op, fix uint8, reply []byte) {
		if fzShared == nil {
			fzShared = newFz(t)
		}
		z := fzShared
		if z.c.Msize() != Msize || z.c.free != 1<<Slots-1 {
			if e := z.reinit(); e != 0 {
				t.Fatalf("Init: %d", e)
			}
		}
		replyCase(t, z, int(op)%numOps, func(good []byte) []byte {
			r := append([]byte(nil), reply...)
			if len(r) >= HdrSize && len(good) >= HdrSize {
				if fix&fixTag != 0 {
					copy(r[5:7], good[5:7])
				}
				if fix&fixType != 0 {
					r[4] = good[4]
				}
				if fix&fixSize != 0 {
					binary.LittleEndian.PutUint32(r, uint32(len(r)))
				}
			}
			return r
		}, fix&fixFail != 0, fix&fixNoPost != 0)
	})
}

// field is a length or count in a reply: its offset and width.
type field struct{ off, width int }

// replyFields are the length and count fields of good reply r.
func replyFields(r []byte) []field {
	fs := []field{{0, 4}}
	switch r[4] - 1 {
	case Tread, Treaddir, Twrite:
		fs = append(fs, field{7, 4})
	case Twalk, Treadlink:
		fs = append(fs, field{7, 2})
	case Tversion:
		fs = append(fs, field{7, 4}, field{11, 2})
	case Tgetattr:
		fs = append(fs, field{7, 8}) // the valid mask
	case Tstatfs:
		fs = append(fs, field{11, 4}, field{len(r) - 4, 4}) // bsize, namelen
	}
	return fs
}

// mutate changes good reply r as a broken or hostile server might: a
// length or count field set to a boundary or random value, the message
// cut short (its size saying so or not), the type made Rlerror, its
// errno, tag or type wrong, or bytes flipped.
func mutate(rng *rand.Rand, r []byte) []byte {
	fs := replyFields(r)
	r = append([]byte(nil), r...)
	for range 1 + rng.Intn(2) {
		switch k := rng.Intn(10); {
		case k < 5:
			f := fs[rng.Intn(len(fs))]
			if f.off+f.width > len(r) {
				continue
			}
			var old uint64
			for i := f.width - 1; i >= 0; i-- {
				old = old<<8 | uint64(r[f.off+i])
			}
			v := [...]uint64{0, 1, old - 1, old + 1, old * 2, 1<<(8*f.width) - 1, uint64(rng.Int63()), old + uint64(rng.Intn(64)), old - uint64(rng.Intn(64))}[rng.Intn(9)]
			for i := range f.width {
				r[f.off+i] = byte(v >> (8 * i))
			}
		case k < 7:
			r = r[:rng.Intn(len(r)+1)]
			if rng.Intn(2) == 0 && len(r) >= 4 {
				binary.LittleEndian.PutUint32(r, uint32(len(r)))
			}
		case k < 8:
			if len(r) >= rdHdr {
				r = r[:rdHdr]
				binary.LittleEndian.PutUint32(r, rdHdr)
				r[4] = Rlerror
				binary.LittleEndian.PutUint32(r[7:], uint32(rng.Intn(3)*rng.Intn(200)))
			}
		case k < 9:
			if len(r) >= HdrSize {
				r[4+rng.Intn(3)] ^= byte(1 + rng.Intn(255))
			}
		default:
			for range 1 + rng.Intn(4) {
				if len(r) > 0 {
					r[rng.Intn(len(r))] = byte(rng.Intn(256))
				}
			}
		}
	}
	return r
}

// TestRepliesRandom drives 10^5 mutated replies, spread over every call,
// through the client with a fixed seed.
func TestRepliesRandom(t *testing.T) {
	z := newFz(t)
	rng := rand.New(rand.NewSource(9))
	start := time.Now()
	var errs, oks [numOps]int
	for i := range 100_000 {
		op := i % numOps
		e := replyCase(t, z, op, func(good []byte) []byte { return mutate(rng, good) }, rng.Intn(100) == 0, rng.Intn(50) == 0)
		if e != 0 {
			errs[op]++
		} else {
			oks[op]++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("10^5 replies in %v; per call ok/error: %v / %v", time.Since(start).Round(time.Millisecond), oks, errs)
	for op := range numOps {
		if oks[op] == 0 || errs[op] == 0 {
			t.Errorf("%s: %d ok, %d errors: the mutations do not reach both outcomes", opNames[op], oks[op], errs[op])
		}
	}
}
