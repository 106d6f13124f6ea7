package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/clock"
	"yolk/drivers/virtio"
	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The host shares (yolk run -share, docs/share.md): each is a virtio-9p
// device (drivers/virtio9p) whose mount tag the command line maps to a
// guest path, yolk.share=TAG:PATH, a directory of the in-memory file
// system the share is mounted on (pathwalk.go): a path that reaches it
// goes on on the share (sharePathOp), and ".." above the share's root
// goes back. Descriptors of files on a share are of kind fileShare, an
// index into shareFiles. Nothing is cached: every call is a round trip
// to the host, whose errno comes back as is.
//
// A symbolic link at the end of a path is followed (shareWalk; one whose
// target is absolute through the tree's root). Not done: links inside a
// path (the server refuses to walk through them), fchdir to a share
// directory opened while shareDirPaths' slots were all taken, ".." above
// a share's root from a descriptor of a directory on it (the server keeps
// the walk at the root). mmap of share files reads them into
// the mapping and writes shared mappings back at msync, munmap, fsync and
// the program's end (sys_mm.go). A chdir racing a relative call on
// another thread may leave that call walking from the old directory's
// fid after its clunk (an error from the server).

const maxShares = 4

// shareEnv is the 9p client's environment: dev indexes shares.
type shareEnv struct{ dev int }

type shareDev struct {
	t   virtio9p.Transport
	c   virtio9p.Client[shareEnv]
	irq uint32
}

type mount struct {
	path [256]byte // absolute, no trailing '/'
	plen int
	tag  [virtio9p.MaxTag]byte
	tlen int
	dev  int // index in shares, -1 until its device is found
}

var (
	shares     [maxShares]shareDev
	nshares    int
	shareLocks [maxShares]sched.TWALock // the client's tables and the device's queue
	shareWQ    sched.WaitQueue          // requests waiting for their reply, a slot or descriptors
	shareBoot  = true                   // before the first task: requests poll
	mounts     [maxShares]mount
	nmounts    int
	shareUmask uint32 = 0o022 // the process's umask, as vfs has it (atomic)
	shareLost  uint32         // replies found by polling: their interrupt was lost (atomic)
)

// shareLostIRQ is how long a request waits for its reply's interrupt
// before the client polls the device: a lost interrupt (one boot of pc in
// seventeen once stopped for good in a 9p write) costs a second, not the
// machine.
const shareLostIRQ = 1e9

// shareExitWait bounds each wait for the host of the task that writes
// the shared mappings back at the program's end (exitWriteBack): a reply,
// a free slot or free descriptors that do not come within it end the
// machine with the program's status and a note on serial instead of a
// hang. Other tasks' waits (a read of a host FIFO may last) are not
// bounded: they do not end the machine under the write-back.
const shareExitWait = 10e9

// shareEnder is the TID of the task writing back at the program's end, 0
// before; exitCode is the program's status (atomic both).
var shareEnder, exitCode int32

// shareEnding reports whether the current task is the one writing back
// at the program's end.
func shareEnding() bool {
	e := atomic.LoadInt32(&shareEnder)
	return e != 0 && sched.Current() != nil && sched.Current().TID == e
}

// shareExitLate ends the machine if the current task writes back at the
// program's end and its wait for the host, begun at start, has passed
// shareExitWait.
func shareExitLate(start int64) {
	if !shareEnding() || clock.Nanotime()-start < shareExitWait {
		return
	}
	klog("share: no reply from the host for 10 s after the program's end: its shared mappings are not all written back\n")
	exitQEMU(uint8(atomic.LoadInt32(&exitCode)))
}

func (e shareEnv) Lock()   { shareLocks[e.dev].Lock() }
func (e shareEnv) Unlock() { shareLocks[e.dev].Unlock() }

func (e shareEnv) Wait(addr *uint32, val uint32) {
	a := uintptr(unsafe.Pointer(addr))
	for start := clock.Nanotime(); atomic.LoadUint32(addr) == val; {
		deadline := int64(0)
		if shareEnding() {
			deadline = start + shareExitWait
		}
		if sched.Block(&shareWQ, a, a, val, deadline) {
			shareExitLate(start)
		}
	}
}

// Copy is the client's copy to and from the program's buffers: the
// fault-safe user copy.
func (e shareEnv) Copy(dst, src uintptr, n int) bool { return mm.Copy(dst, src, n) }

func (e shareEnv) Wake(addr *uint32) { shareWQ.Wake(uintptr(unsafe.Pointer(addr)), len(files)) }

// Post submits slot s's request; its reply comes to the client's
// Complete (sharePoll).
func (e shareEnv) Post(s, out int) bool { return e.submit(s, out, 0, 0) }

// submit gives slot s's request to the device, waiting for descriptors
// if too few are free (at boot, before tasks run, polling the device).
func (e shareEnv) submit(s, out, outData, inData int) bool {
	d := &shares[e.dev]
	req, rep, data := d.c.SlotPages(s)
	for {
		shareLocks[e.dev].Lock()
		seq := atomic.LoadUint32(&d.t.Freed)
		err := d.t.Submit(s, req, rep, data, out, outData, inData)
		shareLocks[e.dev].Unlock()
		if err == virtio.OK {
			return true
		}
		if err != virtio.ErrFull {
			return false
		}
		if shareBoot {
			sharePoll(e.dev)
			continue
		}
		e.Wait(&d.t.Freed, seq)
	}
}

// Exchange submits slot s's request and waits for the interrupt that
// completes it (at boot it polls the device).
func (e shareEnv) Exchange(s, out, outData, inData int) (int, bool) {
	d := &shares[e.dev]
	if !e.submit(s, out, outData, inData) {
		return 0, false
	}
	for waited, start := 0, clock.Nanotime(); atomic.LoadUint32(&d.t.Done[s]) == 0; {
		if shareBoot {
			sharePoll(e.dev)
			continue
		}
		a := uintptr(unsafe.Pointer(&d.t.Done[s]))
		if sched.Block(&shareWQ, a, a, 0, clock.Nanotime()+shareLostIRQ) {
			shareExitLate(start)
			if waited++; waited == 30 {
				klog("share: no reply from the host for 30 s; still waiting\n")
			}
			// No interrupt for a second: ask the device itself. A reply
			// found there had its interrupt lost; say so once.
			sharePoll(e.dev)
			if atomic.LoadUint32(&d.t.Done[s]) != 0 && atomic.AddUint32(&shareLost, 1) == 1 {
				klog("share: a reply came without its interrupt (found by polling after 1 s); the share polls each second it waits\n")
			}
		}
	}
	l := int(atomic.LoadUint32(&d.t.Len[s]))
	return l, l > 0
}

// sharePoll harvests device dev's answers: a posted request's frees its
// slot (Complete), another's wakes its waiter.
func sharePoll(dev int) {
	d := &shares[dev]
	shareLocks[dev].Lock()
	mask := d.t.Interrupt()
	shareLocks[dev].Unlock()
	for s := 0; s < virtio9p.Slots; s++ {
		if mask&(1<<s) != 0 && !d.c.Complete(s) && !shareBoot {
			shareWQ.Wake(uintptr(unsafe.Pointer(&d.t.Done[s])), 1)
		}
	}
	if mask != 0 && !shareBoot {
		shareWQ.Wake(uintptr(unsafe.Pointer(&d.t.Freed)), len(files))
	}
}

// shareInterrupt is the shares' interrupt handler for line irq (amd64's
// GSI, arm64's GIC ID): every share on it is asked (a PCI line may be
// shared).
func shareInterrupt(irq uint32) {
	for i := 0; i < nshares; i++ {
		if shares[i].irq == irq {
			sharePoll(i)
		}
	}
}

// isShareIRQ reports whether id is a share's interrupt (arm64's GIC).
func isShareIRQ(id uint32) bool {
	for i := 0; i < nshares; i++ {
		if shares[i].irq == id {
			return true
		}
	}
	return false
}

// shareOption records yolk.share=TAG:PATH (PATH absolute, not "/").
func shareOption(v []byte) {
	i := 0
	for i < len(v) && v[i] != ':' {
		i++
	}
	tag, path := v[:i], v[min(i+1, len(v)):]
	for len(path) > 1 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	if nmounts == maxShares || i == len(v) || len(tag) == 0 || len(tag) > virtio9p.MaxTag ||
		len(path) < 2 || path[0] != '/' || len(path) >= len(mounts[0].path) {
		shareBad = true
		return
	}
	m := &mounts[nmounts]
	m.plen = copy(m.path[:], path)
	m.tlen = copy(m.tag[:], tag)
	m.dev = -1
	nmounts++
}

var shareBad bool // a malformed yolk.share option (reported once the console prints)

// shareAttach opens 9p device d and mounts it where its tag says; false
// if it is not used.
func shareAttach(d virtio.Device, where string, base uint64, irq uint32) bool {
	if shareBad {
		klog("share: yolk.share: want TAG:/ABSOLUTE/PATH (at most 4): ignored\n")
		shareBad = false
	}
	if nshares == maxShares {
		klog("share: more than 4 virtio-9p devices: the rest not used\n")
		return false
	}
	n := nshares
	sd := &shares[n]
	if e := virtio9p.OpenTransport(&sd.t, d, nicMem{}); e != virtio.OK {
		nicRefused(where, base, e)
		return false
	}
	tag := sd.t.Tag()
	m := -1
	for i := 0; i < nmounts; i++ {
		if string(mounts[i].tag[:mounts[i].tlen]) == string(tag) && mounts[i].dev < 0 {
			m = i
			break
		}
	}
	klog("share: virtio-9p \"")
	kprintBytes(tag)
	kprint("\" (")
	kprint(where)
	kprint(" ")
	kprintHex(base, 1)
	kprint(", irq ")
	kprintDec(int64(irq))
	kprint(")")
	if m < 0 {
		kprint(" not used: no yolk.share names its tag\n")
		d.Reset()
		return false
	}
	sd.irq = irq
	nshares++
	if e := virtio9p.Init(&sd.c, shareEnv{n}, nicMem{}); e != 0 {
		kprint(" not used: attach failed, errno ")
		kprintDec(int64(e))
		kprint("\n")
		nshares--
		d.Reset()
		return false
	}
	mounts[m].dev = n
	kprint(" at ")
	kprintBytes(mounts[m].path[:mounts[m].plen])
	kprint(", msize ")
	kprintDec(int64(sd.c.Msize()))
	kprint("\n")
	// The mount point, in the in-memory file system.
	p := mounts[m].path[:mounts[m].plen]
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			vfs.Mkdir(fs.AtCWD, p[:i], 0o755)
		}
	}
	if e := mountAt(p, int32(m+1)); e != 0 {
		klog("share: cannot mount on ")
		kprintBytes(p)
		kprint(": errno ")
		kprintDec(int64(e))
		kprint("\n")
	}
	return true
}

// shareStarted ends the boot's polling and enters yolk.cwd if it is on a
// share (unpackInitrd left it alone).
func shareStarted() {
	if cwdLen != 0 && mountOf(cwdPath[:cwdLen]) >= 0 {
		// Still polling: the boot context cannot block. A share whose
		// device is missing leaves the path to the in-memory file system.
		if e := chdirPath(cwdPath[:cwdLen]); e != 0 {
			klog("yolk.cwd: cannot change to ")
			kprintBytes(cwdPath[:cwdLen])
			kprint(": errno ")
			kprintDec(int64(e))
			kprint("\n")
		}
	}
	shareBoot = false
}

// mountOf is the mount whose guest path is path or an ancestor of it (the
// longest), -1 if none.
func mountOf(path []byte) int {
	best, bl := -1, 0
	for i := 0; i < nmounts; i++ {
		m := mounts[i].path[:mounts[i].plen]
		if len(m) > bl && hasDirPrefix(path, m) {
			best, bl = i, len(m)
		}
	}
	return best
}

// hasDirPrefix reports whether p is dir or a path under it.
func hasDirPrefix(p, dir []byte) bool {
	return len(p) >= len(dir) && string(p[:len(dir)]) == string(dir) && (len(p) == len(dir) || p[len(dir)] == '/')
}

// The working directory when it is on a share: the device, a fid for it,
// its depth below the share's root and its guest path (getcwd).
var shareCwd struct {
	on    bool
	dev   int
	fid   virtio9p.Fid
	depth int
	path  [fs.PathMax]byte
	plen  int
}

// shareRef is where a path call's path lies on a share: the device, the
// fid to walk from and the path to walk; h is the share file whose fid
// from is, with a reference (-1: none), released by shareDone. A last
// symbolic link whose target is absolute leaves the share: shareWalk puts
// the target in link (linkLen bytes) and says errLinkOut.
type shareRef struct {
	dev     int
	from    virtio9p.Fid
	rel     []byte
	h       int
	link    []byte
	linkLen int
}

func (r *shareRef) c() *virtio9p.Client[shareEnv] { return &shares[r.dev].c }

func shareDone(r *shareRef) {
	if r.h >= 0 {
		sharePut(r.h)
	}
}

// splitName splits a path into its directory part and its last name
// (trailing slashes dropped).
func splitName(p []byte) (dir, name []byte) {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	i := len(p)
	for i > 0 && p[i-1] != '/' {
		i--
	}
	return p[:i], p[i:]
}

// walkParent walks r to the directory holding its last name and returns
// its fid and the name. A single name's directory is r.from itself
// unless clone asks for a fid of the caller's own (Lcreate turns it into
// the new file); the caller clunks the fid if it is not r.from
// (dropParent).
func walkParent(r *shareRef, clone bool) (virtio9p.Fid, []byte, abi.Errno) {
	dir, name := splitName(r.rel)
	if len(name) == 0 || len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
		return virtio9p.NoFid, nil, abi.Errno(unix.EBUSY) // the share's root, the working directory or its parent
	}
	if len(dir) == 0 && !clone {
		return r.from, name, 0
	}
	f, _, e := r.c().Walk(r.from, dir)
	return f, name, abi.Errno(e)
}

// dropParent clunks walkParent's fid unless it is r.from.
func dropParent(r *shareRef, f virtio9p.Fid) {
	if f != r.from {
		r.c().Clunk(f)
	}
}

// maxFollow is how many symbolic links one lookup follows (Linux's
// MAXSYMLINKS is 40; 8 is what a path needs in practice).
const maxFollow = 8

// shareWalk walks r's path to a new fid; with follow, a symbolic link at
// its end is followed (as stat and open do): a relative target from the
// link's directory, an absolute one by onPath, from the root of the
// tree (errLinkOut). Links inside the path are not followed (the server
// refuses them: ELOOP or ENOTDIR).
func shareWalk(r *shareRef, follow bool) (virtio9p.Fid, virtio9p.Qid, abi.Errno) {
	c := r.c()
	from, rel := r.from, r.rel
	var bufs [2][1024]byte
	for i := 0; ; i++ {
		f, q, e := c.Walk(from, rel)
		if e != 0 || !follow || q.Type&virtio9p.QTSymlink == 0 {
			return f, q, abi.Errno(e)
		}
		if i == maxFollow {
			c.Clunk(f)
			return virtio9p.NoFid, q, abi.Errno(unix.ELOOP)
		}
		// The new path: the link's directory, then its target.
		b := &bufs[i%2]
		dir, _ := splitName(rel)
		k := copy(b[:], dir)
		if k == len(dir) && k < len(b) && k > 0 && b[k-1] != '/' {
			b[k] = '/'
			k++
		}
		n, le := c.Readlink(f, b[k:])
		c.Clunk(f)
		if le != 0 {
			return virtio9p.NoFid, q, abi.Errno(le)
		}
		if k+n >= len(b) {
			return virtio9p.NoFid, q, abi.Errno(unix.ENAMETOOLONG)
		}
		if n > 0 && b[k] == '/' {
			if n > len(r.link) {
				return virtio9p.NoFid, q, abi.Errno(unix.ENAMETOOLONG)
			}
			r.linkLen = copy(r.link, b[k:k+n])
			return virtio9p.NoFid, q, errLinkOut // onPath goes on from the root
		}
		rel = b[:k+n]
	}
}
