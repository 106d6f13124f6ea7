// Package share is the host shares (yolk run -share, docs/share.md): a
// file system behind the file layer. Each share is a virtio-9p device
// (drivers/virtio9p) whose mount tag the command line maps to a guest
// path, yolk.share=TAG:PATH, a directory of the in-memory file system
// the share is mounted on (kernel/pathwalk.go): a path that reaches it
// goes on on the share (the path operations here, called by the kernel's
// sharePathOp with a Ref), and ".." above the share's root goes back.
// Descriptors of files on a share are of the kernel's kind fileShare, an
// index into the open files here (File). Nothing is cached: every call is
// a round trip to the host, whose errno comes back as is.
//
// A symbolic link at the end of a path is followed (walk; one whose
// target is absolute through the tree's root: ErrLinkOut). Not done:
// links inside a path (the server refuses to walk through them), fchdir
// to a share directory opened while the directory paths' slots were all
// taken, ".." above a share's root from a descriptor of a directory on it
// (the server keeps the walk at the root). mmap of share files (the
// kernel's sys_mm.go) reads them into the mapping and writes shared
// mappings back at msync, munmap, fsync and the program's end. A chdir
// racing a relative call on another thread may leave that call walking
// from the old directory's fid after its clunk (an error from the
// server).
//
// The kernel's value is Shares[E], E its environment (Env): the 9P
// clients' environment (whose methods come back here: Lock, Wait,
// Exchange), the descriptor table and its lock, the console, the
// program's end, the in-memory tree's mount points and the working
// directory elsewhere. The path walk, the place a call stands and the
// descriptor kinds' tables are the kernel's.
//
// Kernel-context Go, as package kernel: nothing here allocates on the Go
// heap, stores a Go pointer into memory or calls the runtime's
// scheduler; blocking is sched's. Env's methods are called through the
// type parameter's dictionary: none is given a slice or a pointer of a
// local. kernel/kcontext_test.go checks this on a built image.
package share

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/drivers/virtio"
	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/sched"
)

// MaxShares is how many shares a machine has at most.
const MaxShares = 4

// NumFiles is the size of the kernel's descriptor table: as many open
// files as descriptors, and the most waiters a wake-up wakes.
const NumFiles = 1024

// Env is what the kernel supplies. It must be a value type without
// pointers: the 9P client's environment of one device (Dev), the
// device's index.
type Env[E any] interface {
	// virtio9p.Env for device Dev: Lock and Unlock are Shares.Lock
	// and Unlock, Wait and Wake Shares', Post and Exchange Shares';
	// Copy the fault-safe copy to and from the program's memory.
	virtio9p.Env
	// Mem gives the driver its pages.
	virtio9p.Mem
	// Dev is the environment of device dev's client.
	Dev(dev int) E

	// Log starts a line of the kernel's log with s; Print, PrintBytes,
	// PrintDec and PrintHex go on with it.
	Log(s string)
	Print(s string)
	PrintBytes(b []byte)
	PrintDec(v int64)
	PrintHex(v uint64, digits int)

	// Ending reports whether the current task is the one writing the
	// shared mappings back at the program's end; Exit ends the machine
	// with the program's status.
	Ending() bool
	Exit()

	// LockFiles and UnlockFiles are the descriptor table's lock, which
	// guards the open files' references.
	LockFiles()
	UnlockFiles()
	// Get is the open file behind descriptor fd with a reference (Put),
	// -1 if fd is not a share's.
	Get(fd int) int
	// Install gives open file h a descriptor.
	Install(h int) (uintptr, abi.Errno)
	// Unback takes the pages from offset off on (page-aligned) from the
	// mappings of open file h (a shrunk file: touching them is SIGBUS).
	Unback(h int, off int64)
	// TakeDirty is mm's (kernel/mm/dirty.go): it cleans the first run
	// of pages in [addr, end) the program wrote to since they were last
	// cleaned — start == stop when the part it looked at had none — and
	// the caller goes on from stop. The caller holds the areas
	// (mm.HoldAreas) and reads the run's bytes after the call.
	TakeDirty(addr, end uintptr) (start, stop uintptr)
	// LockSizes and UnlockSizes serialize what sets or uses the open
	// files' Size (sizes.go): a blocking mutex, taken after the areas
	// (mm.HoldAreas) when both are held, never before.
	LockSizes()
	UnlockSizes()

	// Umask is the process's umask.
	Umask() uint32
	// Mount makes path (absolute, of the in-memory tree, made if
	// missing) the mount point of mount id.
	Mount(path []byte, id int32) abi.Errno
	// CwdEntered says the working directory is on a share now: the
	// kernel forgets one elsewhere (/proc).
	CwdEntered()
}

// Shares is the kernel's shares: the devices and their clients, the
// mounts, the open files and the working directory when it is on one.
// The zero value is at boot: requests poll until Started.
type Shares[E Env[E]] struct {
	devs    [MaxShares]device[E]
	n       int
	locks   [MaxShares]sched.TWALock // the client's tables and the device's queue
	wq      sched.WaitQueue          // requests waiting for their reply, a slot or descriptors
	started bool                     // false before the first task: requests poll
	lost    uint32                   // replies found by polling: their interrupt was lost (atomic)
	mounts  [MaxShares]Mount
	nmounts int
	bad     bool // a malformed yolk.share option (reported once the console prints)

	files   [NumFiles]File
	closing int32 // files whose last reference went under the descriptor lock, to clunk outside it (Reap)
	dead    [NumFiles]bool
	// MapRefs counts the areas' references on share files (the
	// kernel's FileRef; mmap counts the first): while it is 0 no
	// file's size matters to a fault, and Resized has nothing to do
	// (atomic).
	MapRefs int32

	cwd      cwd
	dirPaths [32]dirPath
}

type device[E Env[E]] struct {
	t   virtio9p.Transport
	c   virtio9p.Client[E]
	irq uint32
}

// Mount is a yolk.share option: a mount tag and the guest path it is
// mounted on; Dev is its device's index, -1 until the device is found.
type Mount struct {
	path [256]byte // absolute, no trailing '/'
	plen int
	tag  [virtio9p.MaxTag]byte
	tlen int
	Dev  int
}

// Path is the guest path m is mounted on; Tag its mount tag.
func (m *Mount) Path() []byte { return m.path[:m.plen] }
func (m *Mount) Tag() []byte  { return m.tag[:m.tlen] }

// lostIRQ is how long a request waits for its reply's interrupt before
// the client polls the device: a lost interrupt (one boot of pc in
// seventeen once stopped for good in a 9p write) costs a second, not the
// machine.
const lostIRQ = 1e9

// ExitWait bounds each wait for the host of the task that writes the
// shared mappings back at the program's end (Env.Ending): a reply, a
// free slot or free descriptors that do not come within it end the
// machine with the program's status and a note on serial instead of a
// hang. Other tasks' waits (a read of a host FIFO may last) are not
// bounded: they do not end the machine under the write-back.
const ExitWait = 10e9

func env[E Env[E]]() E { var e E; return e }

// exitLate ends the machine if the current task writes back at the
// program's end and its wait for the host, begun at start, has passed
// ExitWait.
func exitLate[E Env[E]](start int64) {
	e := env[E]()
	if !e.Ending() || clock.Nanotime()-start < ExitWait {
		return
	}
	e.Log("share: no reply from the host for 10 s after the program's end: its shared mappings are not all written back\n")
	e.Exit()
}

// Count is how many devices are attached.
func (s *Shares[E]) Count() int { return s.n }

// Client is device dev's 9P client.
func (s *Shares[E]) Client(dev int32) *virtio9p.Client[E] { return &s.devs[dev].c }

func (s *Shares[E]) c(dev int) *virtio9p.Client[E] { return &s.devs[dev].c }

// Lock and Unlock are device dev's lock: its client's tables and its
// queue.
func (s *Shares[E]) Lock(dev int)   { s.locks[dev].Lock() }
func (s *Shares[E]) Unlock(dev int) { s.locks[dev].Unlock() }

// Wait blocks while *addr == val (a client's Env.Wait).
func (s *Shares[E]) Wait(addr *uint32, val uint32) {
	a := uintptr(unsafe.Pointer(addr))
	for start := clock.Nanotime(); atomic.LoadUint32(addr) == val; {
		deadline := int64(0)
		if env[E]().Ending() {
			deadline = start + ExitWait
		}
		if sched.Block(&s.wq, a, a, val, deadline) {
			exitLate[E](start)
		}
	}
}

// Wake wakes the waiters on addr (a client's Env.Wake).
func (s *Shares[E]) Wake(addr *uint32) { s.wq.Wake(uintptr(unsafe.Pointer(addr)), NumFiles) }

// Post submits device dev's slot s's request; its reply comes to the
// client's Complete (poll).
func (s *Shares[E]) Post(dev, slot, out int) bool { return s.submit(dev, slot, out, 0, 0) }

// submit gives slot's request to device dev, waiting for descriptors if
// too few are free (at boot, before tasks run, polling the device).
func (s *Shares[E]) submit(dev, slot, out, outData, inData int) bool {
	d := &s.devs[dev]
	req, rep, data := d.c.SlotPages(slot)
	for {
		s.locks[dev].Lock()
		seq := atomic.LoadUint32(&d.t.Freed)
		err := d.t.Submit(slot, req, rep, data, out, outData, inData)
		s.locks[dev].Unlock()
		if err == virtio.OK {
			return true
		}
		if err != virtio.ErrFull {
			return false
		}
		if !s.started {
			s.poll(dev)
			continue
		}
		s.Wait(&d.t.Freed, seq)
	}
}

// Exchange submits device dev's slot s's request and waits for the
// interrupt that completes it (at boot it polls the device).
func (s *Shares[E]) Exchange(dev, slot, out, outData, inData int) (int, bool) {
	d := &s.devs[dev]
	if !s.submit(dev, slot, out, outData, inData) {
		return 0, false
	}
	for waited, start := 0, clock.Nanotime(); atomic.LoadUint32(&d.t.Done[slot]) == 0; {
		if !s.started {
			s.poll(dev)
			continue
		}
		a := uintptr(unsafe.Pointer(&d.t.Done[slot]))
		if sched.Block(&s.wq, a, a, 0, clock.Nanotime()+lostIRQ) {
			exitLate[E](start)
			if waited++; waited == 30 {
				env[E]().Log("share: no reply from the host for 30 s; still waiting\n")
			}
			// No interrupt for a second: ask the device itself. A reply
			// found there had its interrupt lost; say so once.
			s.poll(dev)
			if atomic.LoadUint32(&d.t.Done[slot]) != 0 && atomic.AddUint32(&s.lost, 1) == 1 {
				env[E]().Log("share: a reply came without its interrupt (found by polling after 1 s); the share polls each second it waits\n")
			}
		}
	}
	l := int(atomic.LoadUint32(&d.t.Len[slot]))
	return l, l > 0
}

// poll harvests device dev's answers: a posted request's frees its slot
// (Complete), another's wakes its waiter.
func (s *Shares[E]) poll(dev int) {
	d := &s.devs[dev]
	s.locks[dev].Lock()
	mask := d.t.Interrupt()
	s.locks[dev].Unlock()
	for i := 0; i < virtio9p.Slots; i++ {
		if mask&(1<<i) != 0 && !d.c.Complete(i) && s.started {
			s.wq.Wake(uintptr(unsafe.Pointer(&d.t.Done[i])), 1)
		}
	}
	if mask != 0 && s.started {
		s.wq.Wake(uintptr(unsafe.Pointer(&d.t.Freed)), NumFiles)
	}
}

// Interrupt is the shares' interrupt handler for line irq (amd64's GSI,
// arm64's GIC ID): every share on it is asked (a PCI line may be
// shared).
func (s *Shares[E]) Interrupt(irq uint32) {
	for i := 0; i < s.n; i++ {
		if s.devs[i].irq == irq {
			s.poll(i)
		}
	}
}

// IsIRQ reports whether id is a share's interrupt (arm64's GIC).
func (s *Shares[E]) IsIRQ(id uint32) bool {
	for i := 0; i < s.n; i++ {
		if s.devs[i].irq == id {
			return true
		}
	}
	return false
}

// Option records yolk.share=TAG:PATH (PATH absolute, not "/").
func (s *Shares[E]) Option(v []byte) {
	i := 0
	for i < len(v) && v[i] != ':' {
		i++
	}
	tag, path := v[:i], v[min(i+1, len(v)):]
	for len(path) > 1 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	if s.nmounts == MaxShares || i == len(v) || len(tag) == 0 || len(tag) > virtio9p.MaxTag ||
		len(path) < 2 || path[0] != '/' || len(path) >= len(s.mounts[0].path) {
		s.bad = true
		return
	}
	m := &s.mounts[s.nmounts]
	m.plen = copy(m.path[:], path)
	m.tlen = copy(m.tag[:], tag)
	m.Dev = -1
	s.nmounts++
}

// printPlace goes on with where a device is: "pci 0x18, irq 11)".
func printPlace[E Env[E]](e E, where string, base uint64, irq uint32) {
	e.Print(where)
	e.Print(" ")
	e.PrintHex(base, 1)
	e.Print(", irq ")
	e.PrintDec(int64(irq))
	e.Print(")")
}

// Attach opens 9p device d and mounts it where its tag says; false if
// it is not used, with the transport's error if it failed to open (the
// caller reports it).
func (s *Shares[E]) Attach(d virtio.Device, where string, base uint64, irq uint32) (bool, virtio.Error) {
	e := env[E]()
	if s.bad {
		e.Log("share: yolk.share: want TAG:/ABSOLUTE/PATH (at most 4): ignored\n")
		s.bad = false
	}
	if s.n == MaxShares {
		e.Log("share: virtio-9p (")
		printPlace(e, where, base, irq)
		e.Print(" not used: more than 4 virtio-9p devices\n")
		return false, virtio.OK
	}
	n := s.n
	sd := &s.devs[n]
	if te := virtio9p.OpenTransport(&sd.t, d, e); te != virtio.OK {
		return false, te
	}
	tag := sd.t.Tag()
	m := -1
	for i := 0; i < s.nmounts; i++ {
		if string(s.mounts[i].Tag()) == string(tag) && s.mounts[i].Dev < 0 {
			m = i
			break
		}
	}
	e.Log("share: virtio-9p \"")
	e.PrintBytes(tag)
	e.Print("\" (")
	printPlace(e, where, base, irq)
	if m < 0 {
		e.Print(" not used: no yolk.share names its tag\n")
		d.Reset()
		return false, virtio.OK
	}
	sd.irq = irq
	s.n++
	if ie := virtio9p.Init(&sd.c, e.Dev(n), e); ie != 0 {
		e.Print(" not used: attach failed, errno ")
		e.PrintDec(int64(ie))
		e.Print("\n")
		s.n--
		d.Reset()
		return false, virtio.OK
	}
	s.mounts[m].Dev = n
	e.Print(" at ")
	e.PrintBytes(s.mounts[m].Path())
	e.Print(", msize ")
	e.PrintDec(int64(sd.c.Msize()))
	e.Print("\n")
	// The mount point, in the in-memory file system.
	p := s.mounts[m].Path()
	if me := e.Mount(p, int32(m+1)); me != 0 {
		e.Log("share: cannot mount on ")
		e.PrintBytes(p)
		e.Print(": errno ")
		e.PrintDec(int64(me))
		e.Print("\n")
	}
	return true, virtio.OK
}

// Started ends the boot's polling: tasks run, requests block.
func (s *Shares[E]) Started() { s.started = true }

// NumMounts is how many yolk.share options there are; Mount(i) is the
// i-th.
func (s *Shares[E]) NumMounts() int     { return s.nmounts }
func (s *Shares[E]) Mount(i int) *Mount { return &s.mounts[i] }

// MountIndex is the mount of device dev, -1 if none.
func (s *Shares[E]) MountIndex(dev int) int {
	for i := 0; i < s.nmounts; i++ {
		if s.mounts[i].Dev == dev {
			return i
		}
	}
	return -1
}

// MountOf is the mount whose guest path is path or an ancestor of it
// (the longest), -1 if none.
func (s *Shares[E]) MountOf(path []byte) int {
	best, bl := -1, 0
	for i := 0; i < s.nmounts; i++ {
		m := s.mounts[i].Path()
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
