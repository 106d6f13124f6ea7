// Package procsnap fills kernel/procfs's Snapshot from the kernel's own
// numbers, for /proc and /sys: Fill fills the parts of the snapshot a
// file reads (procfs.Needs), each from its owner under the owner's lock,
// one lock at a time, so a snapshot may be slightly stale (a thread that
// exits meanwhile) but is never torn in a way that crashes. It keeps the
// one snapshot (State) and what fills keep between them (the load
// average, the peaks, the initial stack read back).
//
// What is the kernel's it reaches through its type parameter (Env, an
// empty struct in kernel/): the clock, the image's bounds and its command
// line, the initial stack's place, the descriptor table (each kind's view
// of an open file: kernel/fileops.go's fdViews), the signal actions and
// masks, the working directory, the host shares and the in-memory file
// system's calls. The scheduler (sched) and the address space (mm) it
// reads directly, as the kernel does.
//
// Kernel-context Go, as package kernel: nothing here allocates on the Go
// heap, stores a Go pointer into memory the kernel writes or calls the
// runtime's scheduler. Env's methods are called through the type
// parameter's dictionary, which the compiler cannot see into: what is
// passed to them by pointer lives in State (the kernel's BSS), never on a
// stack. kernel/kcontext_test.go checks this on a built image.
//
// Where each number comes from, and what is approximate:
//
//   - Threads (PartProc): every live task but the CPUs' idle tasks, by
//     TID. CPU time is the scheduler's per-task count, all of it shown as
//     user time (the kernel does not split user from system time); a
//     thread's CPU is the one running it, 0 when it waits (the last CPU
//     is not kept); state 'R' or 'S'; start time, faults and context
//     switches are not counted (0). Exited threads' time is sched's.
//   - The process: PID 1 (getpid), no parent, session and group 1, root
//     with every capability; comm is the image file's name (yolk.exe) or
//     argv[0]'s. Limits are prlimit's (Rlimit, the same table).
//     Signals: each thread's pending and blocked sets, the actions'
//     ignored and caught sets.
//   - Memory: the areas (mm.Areas) plus the image, which lies in the
//     boot's identity map below the areas: its text and read-only data
//     count as the file's resident pages, its data and BSS as anonymous
//     ones less the BSS pages given back at boot and not touched since;
//     the areas' backed pages (mm's PagesMapped) are anonymous (shared
//     file pages included). VmPeak and VmHWM are the largest seen by a
//     fill. VmPTE is every page table made for the user half and the
//     kernel stacks.
//   - The initial stack (PartArgs, stat's addresses, auxv): read back
//     once from the program's memory through mm.CopyIn, as Linux reads
//     cmdline and environ from it: argc and argv[0]'s address mark the
//     initial stack pointer, the arrays there name the strings.
//   - Descriptors (PartFDs): the table, each kind what it knows (Env.FD).
//     An in-memory file's path is found by walking the in-memory file
//     system for its inode number (fs keeps no path of an open file;
//     fsNames); an unlinked one shows "/ (deleted)" where Linux shows
//     its last path. A share file shows its directory's kept path, else
//     its mount's guest path. A pipe shows fstat's inode number, a socket
//     its ID (fstat says 0 there).
//   - Mounts: "/" (tmpfs), /dev (the same file system, a bind mount of
//     its /dev, st_dev 0:0x16), /proc, /sys, /sys/fs/cgroup (cgroup2) and
//     each attached host share at its guest path (9p, st_dev 144:dev as
//     a share's stat gives it).
//   - Network interfaces (PartNet): the socket layer's table, as
//     netlink dumps it (index, name, flags, IPv6 addresses), one
//     interface at a time under its lock.
//   - System (PartSys): per CPU, idle time is its idle task's CPU time
//     and the rest of the uptime is user time; the load average is
//     computed when read (load); memory from mm's frame counters and
//     fs's pages; no swap, no huge pages, no cgroup limits (cpu.max and
//     memory.max say max); interrupts and network octets are not
//     counted.
package procsnap

import (
	"runtime"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/net"
	"yolk/kernel/procfs"
	"yolk/sched"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	archEnv

	// Now is the monotonic clock in nanoseconds since boot, WallBase the
	// Unix time in nanoseconds at its 0.
	Now() int64
	WallBase() int64
	// Hostname is uname's nodename.
	Hostname() string
	// Exe is the image file's absolute path (yolk.exe=), empty without
	// one; Args are the command line's argument count and argv[0].
	Exe() []byte
	Args() (n int, argv0 []byte)
	// Image is the image's bounds: the page of its ELF headers (the
	// first loaded), the end of its text and read-only data, the start
	// of its BSS and its end (ro is bss if the ELF headers cannot be
	// read). Stack is the initial stack's top and size.
	Image() (lo, ro, bss, end uintptr)
	Stack() (top, size uintptr)
	// Umask is the process's umask; Files the descriptor table's size.
	Umask() uint32
	Files() int
	// SigActions are the signals whose action ignores them and those it
	// catches (bit sig-1), read under the actions' lock; SigThread is
	// task slot i's pending and blocked signals, read racily as Linux's
	// status reads them.
	SigActions() (ignored, caught uint64)
	SigThread(i int) (pending, blocked uint64)
	// Cwd writes the working directory's path into b and returns its
	// length; false if there is none to show.
	Cwd(s *procfs.Snapshot, b []byte) (int, bool)
	// FD describes descriptor fd into d as its kind sees it (its flags,
	// kind, identity, mount and path), under the table's rules (a
	// reference of its own for the call); false if it is not open. A
	// file of the in-memory tree asks for its path (State.WantIno).
	FD(fd int, s *procfs.Snapshot, d *procfs.FD) bool
	// ShareArea names area a, a mapping of a host share's file (a.Ino is
	// -mm.Area.File): its path, inode and device.
	ShareArea(s *procfs.Snapshot, a *procfs.Area)
	// Share is host share i's device (negative: not found), guest path
	// and tag; false past the last.
	Share(i int) (dev int, point, tag []byte, ok bool)
	// Disk is disk mount i's block device number and name, where it is
	// mounted, whether read-only, and whether it is mounted; ok false
	// past the last.
	Disk(i int) (rdev uint64, name, point []byte, ro, on, ok bool)
	// The in-memory file system's calls, as a program makes them: the
	// root's inode number, open (fs.AtCWD or a handle; a handle or
	// fs's error), getdents64 (0 or less: no more) and close.
	FSRootIno() (uint64, bool)
	FSOpen(dir int, path []byte, flags int) (int, fs.Errno)
	FSGetdents(h int, b []byte) int
	FSClose(h int)
	// FilePages is the in-memory file system's pages of files.
	FilePages() int64
	// Iface copies network interface i (from 0) of the socket layer's
	// table into p, under its lock; false past the last.
	Iface(i int, p *net.Iface) bool
}

// State is the one snapshot and what fills keep between them. It is big
// (the snapshot alone is ~400 KB): in the kernel's BSS, never on a stack.
type State[E Env] struct {
	env    E
	mu     sched.Mutex // everything below
	s      procfs.Snapshot
	static bool        // s's static part is filled
	have   procfs.Part // parts filled since the last Begin

	// The load average and the end of the last period it counts (ns
	// since boot); the largest address space and resident set seen.
	load           [3]uint64
	loadAt         int64
	vmPeak, rssHWM uint64

	// The initial stack, read once (readStack).
	stackRead                              bool
	argStart, argEnd, envStart, envEnd, sp uint64
	args, environ                          [4096 + 256]byte
	nArgs, nEnv                            int
	auxv                                   [procfs.MaxAuxv]uint64
	nauxv                                  int32
	stk                                    [8192]byte

	// The in-memory file system's walk (fsNames): the inodes wanted, the
	// path built, a getdents buffer per level.
	want  [64]want
	nwant int
	path  [fs.PathMax]byte
	dents [maxDepth][512]byte

	fd  procfs.FD       // Env.FD's
	ifc net.Iface       // Env.Iface's
	out [256 << 10]byte // a rendering
}

// want is an inode of the in-memory file system whose path a fill needs
// (st_ino), and the path found (in the snapshot's pool).
type want struct {
	ino   uint64
	path  procfs.Str
	found bool
}

// maxDepth bounds the depth of the walk for paths.
const maxDepth = 32

// Mount IDs (mountinfo's first field, fdinfo's mnt_id): the listed
// mounts, and the internal ones Linux does not list (anonymous inodes,
// pipes, sockets).
const (
	MntRoot = 1 + iota
	MntDev
	MntProc
	MntSys
	MntCgroup
	MntShare // + the share's index
	MntAnon  = 20
	MntPipe  = 21
	MntSock  = 22
	MntDisk  = 23 // + the disk mount's index
	MntTmp   = 31 // the in-memory /tmp, where a disk is the root
)

// Lock and Unlock take and drop the state's lock, which Begin, Fill,
// Text, Getdents and the snapshot they return need held.
func (st *State[E]) Lock()   { st.mu.Lock() }
func (st *State[E]) Unlock() { st.mu.Unlock() }

// Begin starts a call's fill and returns the snapshot: the static part
// once, then an empty snapshot.
func (st *State[E]) Begin() *procfs.Snapshot {
	s := &st.s
	if !st.static {
		st.fillStatic(s)
		st.static = true
	}
	s.Reset()
	st.have = 0
	s.CurrentTID = sched.Current().TID
	return s
}

// Fill fills the parts of s that parts names and are not yet there
// (procfs.Filler); the lock is held, and no other.
func (st *State[E]) Fill(s *procfs.Snapshot, parts procfs.Part) {
	parts &^= st.have
	st.have |= parts
	if parts&(procfs.PartProc|procfs.PartArgs) != 0 {
		st.readStack()
	}
	if parts&procfs.PartProc != 0 {
		st.fillProc(s)
	}
	if parts&procfs.PartArgs != 0 {
		s.Proc.Cmdline = s.Put(st.args[:st.nArgs])
		s.Proc.Environ = s.Put(st.environ[:st.nEnv])
	}
	if parts&procfs.PartPaths != 0 {
		if exe := st.env.Exe(); len(exe) > 0 {
			s.Proc.Exe = s.Put(exe)
		}
		if n, ok := st.env.Cwd(s, st.path[:]); ok {
			s.Proc.Cwd = s.Put(st.path[:min(n, len(st.path))])
		}
	}
	if parts&procfs.PartFDs != 0 {
		st.fillFDs(s)
	}
	if parts&procfs.PartAreas != 0 {
		st.fillAreas(s)
	}
	if parts&procfs.PartMounts != 0 {
		st.fillMounts(s)
	}
	if parts&procfs.PartSys != 0 {
		st.fillSys(s)
	}
	if parts&procfs.PartNet != 0 {
		st.fillNet(s)
	}
}

// Scratch is a buffer of PathMax bytes the Env's methods may use during
// a fill (a share file's path, before it goes into the snapshot's pool).
func (st *State[E]) Scratch() []byte { return st.path[:] }

// Text renders node n (filling what it needs) and returns its text from
// off on (procfs.Read): a read of an open file.
func (st *State[E]) Text(n procfs.Node, off int64) ([]byte, abi.Errno) {
	s := st.Begin()
	return procfs.Read(st, s, n, st.out[:], off)
}

// Getdents is getdents64 on directory dir from entry pos on
// (procfs.Getdents), with what it needs filled.
func (st *State[E]) Getdents(dir procfs.Node, pos int64, b []byte) (int, int64, abi.Errno) {
	s := st.Begin()
	st.Fill(s, procfs.Needs(dir))
	return procfs.Getdents(dir, s, pos, b)
}

// Getcwd is getcwd with the working directory at node n: its path and
// a NUL in b, ERANGE if they do not fit.
func (st *State[E]) Getcwd(n procfs.Node, b []byte) (int, abi.Errno) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.Begin()
	st.Fill(s, procfs.Needs(n)|procfs.PartProc)
	k := procfs.Path(n, s, b)
	if k+1 > len(b) {
		return 0, abi.Errno(unix.ERANGE)
	}
	b[k] = 0
	return k + 1, 0
}

// fillStatic fills what never changes: the names, the CPUs' identities
// and model (fillArch), the file system types.
func (st *State[E]) fillStatic(s *procfs.Snapshot) {
	procfs.SetName(&s.Sysname, "Linux")
	procfs.SetName(&s.Release, "6.1.0-yolk") // uname's (sysUname)
	procfs.SetName(&s.Version, "#1 yolk")
	procfs.SetName(&s.Hostname, st.env.Hostname())
	procfs.SetName(&s.BuiltBy, "yolk@yolk")
	procfs.SetName(&s.Compiler, runtime.Version())
	s.NumCPU = int32(min(sched.NumCPU(), procfs.MaxCPUs))
	for i := 0; i < int(s.NumCPU); i++ {
		s.CPUs[i].CoreID = uint32(i)
	}
	fillArch(st.env, s)
	for _, t := range [...]string{"sysfs", "tmpfs", "proc", "cgroup2", "pipefs", "anon_inodefs", "sockfs", "9p"} {
		s.AddFS(t, true)
	}
	s.Somaxconn = 4096 // kernel/net's SomaxConn
	// No transparent huge pages: no /sys/kernel/mm/transparent_hugepage,
	// as a Linux built without them (Go's runtime then uses none).
	s.THPSize = 0
}

// Rlimit is resource res's limit, for prlimit and /proc/self/limits:
// RLIMIT_NOFILE the descriptor table's size (files), an 8 MiB soft
// stack, the rest unlimited.
func Rlimit(res, files int) (cur, max uint64) {
	switch res {
	case unix.RLIMIT_NOFILE:
		return uint64(files), uint64(files)
	case unix.RLIMIT_STACK:
		return 8 << 20, procfs.Inf
	}
	return procfs.Inf, procfs.Inf
}
