package virtio9p

import "encoding/binary"

// 9P2000.L message types (T is the request, T+1 its reply).
const (
	Rlerror   = 7
	Tstatfs   = 8
	Tlopen    = 12
	Tlcreate  = 14
	Tsymlink  = 16
	Treadlink = 22
	Tgetattr  = 24
	Tsetattr  = 26
	Treaddir  = 40
	Tfsync    = 50
	Tlink     = 70
	Tmkdir    = 72
	Trenameat = 74
	Tunlinkat = 76
	Tversion  = 100
	Tattach   = 104
	Twalk     = 110
	Tread     = 116
	Twrite    = 118
	Tclunk    = 120
)

const (
	NoTag   = 0xFFFF
	NoFid   = 0xFFFFFFFF
	HdrSize = 7  // size[4] type[1] tag[2]
	QidSize = 13 // type[1] version[4] path[8]
	MaxWalk = 16 // names in one Twalk (MAXWELEM)

	// IOHdrSize is what Tread/Twrite/Treaddir replies and requests
	// spend of msize besides their data (Linux's P9_IOHDRSZ).
	IOHdrSize = 24
	// rdHdr is the reply header before the data of Rread and Rreaddir,
	// and the whole of Rlerror: size type tag count[4] (or ecode[4]).
	rdHdr = HdrSize + 4
	// wrHdr is Twrite's header before its data.
	wrHdr = HdrSize + 4 + 8 + 4
)

// Qid types.
const (
	QTDir     = 0x80
	QTSymlink = 0x02
)

// Getattr request mask and Setattr valid bits.
const (
	GetattrBasic = 0x7FF // mode, nlink, uid, gid, rdev, times, ino, size, blocks

	SetMode     = 0x1
	SetUID      = 0x2
	SetGID      = 0x4
	SetSize     = 0x8
	SetAtime    = 0x10
	SetMtime    = 0x20
	SetCtime    = 0x40
	SetAtimeSet = 0x80
	SetMtimeSet = 0x100
)

// Qid is a server's identity of a file.
type Qid struct {
	Type    uint8
	Version uint32
	Path    uint64
}

// Attr is Rgetattr's body.
type Attr struct {
	Valid                          uint64
	Qid                            Qid
	Mode, UID, GID                 uint32
	Nlink, Rdev, Size              uint64
	Blksize, Blocks                uint64
	Atime, AtimeNs, Mtime, MtimeNs uint64
	Ctime, CtimeNs                 uint64
}

// SetAttr is Tsetattr's body.
type SetAttr struct {
	Valid, Mode, UID, GID          uint32
	Size                           uint64
	Atime, AtimeNs, Mtime, MtimeNs uint64
}

// Statfs is Rstatfs's body.
type Statfs struct {
	Type, Bsize           uint32
	Blocks, Bfree, Bavail uint64
	Files, Ffree, Fsid    uint64
	Namelen               uint32
}

// enc writes a message into b; a message that does not fit sets bad.
type enc struct {
	b   []byte
	n   int
	bad bool
}

func (e *enc) room(k int) []byte {
	if e.bad || e.n+k > len(e.b) {
		e.bad = true
		return nil
	}
	p := e.b[e.n : e.n+k]
	e.n += k
	return p
}

func (e *enc) u8(v uint8) {
	if p := e.room(1); p != nil {
		p[0] = v
	}
}
func (e *enc) u16(v uint16) {
	if p := e.room(2); p != nil {
		binary.LittleEndian.PutUint16(p, v)
	}
}
func (e *enc) u32(v uint32) {
	if p := e.room(4); p != nil {
		binary.LittleEndian.PutUint32(p, v)
	}
}
func (e *enc) u64(v uint64) {
	if p := e.room(8); p != nil {
		binary.LittleEndian.PutUint64(p, v)
	}
}
func (e *enc) str(s []byte) {
	if len(s) > 0xFFFF {
		e.bad = true
		return
	}
	e.u16(uint16(len(s)))
	if p := e.room(len(s)); p != nil {
		copy(p, s)
	}
}

// start begins a message of type t with tag tag; finish writes its size,
// counting extra bytes that follow it outside b (Twrite's data).
func (e *enc) start(t uint8, tag uint16) {
	e.n = 0
	e.bad = false
	e.u32(0)
	e.u8(t)
	e.u16(tag)
}

func (e *enc) finish(extra int) int {
	if !e.bad {
		binary.LittleEndian.PutUint32(e.b[0:4], uint32(e.n+extra))
	}
	return e.n
}

// dec reads a message from b; reading past its end sets bad. data is
// the message's length past b, in the data pages (Client.rpc).
type dec struct {
	b    []byte
	n    int
	bad  bool
	data int
}

func (d *dec) take(k int) []byte {
	if d.bad || k < 0 || d.n+k > len(d.b) {
		d.bad = true
		return nil
	}
	p := d.b[d.n : d.n+k]
	d.n += k
	return p
}

func (d *dec) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}
func (d *dec) u16() uint16 {
	if p := d.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}
func (d *dec) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}
func (d *dec) str() []byte { return d.take(int(d.u16())) }
func (d *dec) qid() Qid {
	return Qid{Type: d.u8(), Version: d.u32(), Path: d.u64()}
}

// DirEntry is one entry of Rreaddir's data.
type DirEntry struct {
	Qid    Qid
	Offset uint64 // the offset to pass to read on after this entry
	Type   uint8  // DT_* as Linux
	Name   []byte // in the buffer parsed
}

// NextDirEntry parses the first entry of Rreaddir data b and returns it
// and its length; 0 when b holds no whole entry.
func NextDirEntry(b []byte) (DirEntry, int) {
	d := dec{b: b}
	e := DirEntry{Qid: d.qid(), Offset: d.u64(), Type: d.u8(), Name: d.str()}
	if d.bad {
		return DirEntry{}, 0
	}
	return e, d.n
}
