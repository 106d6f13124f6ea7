package kernel

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/procfs"
	"yolk/kernel/share"
	"yolk/sched"
)

// The kernel's numbers for /proc and /sys: procFill fills the parts of a
// procfs.Snapshot a file reads (procfs.Needs), each from its owner under
// the owner's lock, one lock at a time, so a snapshot may be slightly
// stale (a thread that exits meanwhile) but is never torn in a way that
// crashes. Until the file layer mounts /proc and /sys, the self-tests
// read the files through abi.SysProcRender (sysProcRender).
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
//     argv[0]'s. Limits are sysPrlimit's (procRlimit, the same table).
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
//   - Descriptors (PartFDs): the table, each kind what it knows. An
//     in-memory file's path is found by walking the in-memory file
//     system for its inode number (fs keeps no path of an open file;
//     procFSNames); an unlinked one shows "/ (deleted)" where Linux shows
//     its last path. A share file shows its directory's kept path
//     (shares.DirPath), else its mount's guest path. A pipe shows fstat's
//     inode number, a socket its ID (fstat says 0 there).
//   - Mounts: "/" (tmpfs), /dev (the same file system, a bind mount of
//     its /dev, st_dev 0:0x16), /proc, /sys, /sys/fs/cgroup (cgroup2) and
//     each attached host share at its guest path (9p, st_dev 144:dev as
//     shares.Fstat gives it).
//   - System (PartSys): per CPU, idle time is its idle task's CPU time
//     and the rest of the uptime is user time; the load average is
//     computed when read (procLoad); memory from mm's frame counters and
//     fs's pages; no swap, no huge pages, no cgroup limits (cpu.max and
//     memory.max say max); interrupts and network octets are not
//     counted.

// procState is the one snapshot and what fills keep between them. It is
// big (the snapshot alone is ~400 KB): in the BSS, never on a stack.
var procState struct {
	mu     sched.Mutex // everything below
	s      procfs.Snapshot
	static bool        // s's static part is filled
	have   procfs.Part // parts filled since the last Reset

	// The load average and the end of the last period it counts (ns
	// since boot); the largest address space and resident set seen.
	load           [3]uint64
	loadAt         int64
	vmPeak, rssHWM uint64

	// The initial stack, read once (procStack).
	stackRead                              bool
	argStart, argEnd, envStart, envEnd, sp uint64
	args, env                              [4096 + 256]byte
	nArgs, nEnv                            int
	auxv                                   [procfs.MaxAuxv]uint64
	nauxv                                  int32
	stk                                    [8192]byte

	// The in-memory file system's walk (procFSNames): the inodes wanted,
	// the path built, a getdents buffer per level.
	want  [64]procWant
	nwant int
	path  [fs.PathMax]byte
	dents [procMaxDepth][512]byte

	arg [fs.PathMax]byte // sysProcRender's path
	out [256 << 10]byte  // a rendering (sysProcRender)
}

// procWant is an inode of the in-memory file system whose path a fill
// needs (st_ino), and the path found (in the snapshot's pool).
type procWant struct {
	ino   uint64
	path  procfs.Str
	found bool
}

// procMaxDepth bounds the depth of the walk for paths.
const procMaxDepth = 32

// Mount IDs (mountinfo's first field, fdinfo's mnt_id): the listed
// mounts, and the internal ones Linux does not list (anonymous inodes,
// pipes, sockets).
const (
	procMntRoot = 1 + iota
	procMntDev
	procMntProc
	procMntSys
	procMntCgroup
	procMntShare // + the share's index in mounts
	procMntAnon  = 20
	procMntPipe  = 21
	procMntSock  = 22
)

// procBegin starts a call's fill: the static part once, then an empty
// snapshot. procState.mu is held.
func procBegin(s *procfs.Snapshot) {
	if !procState.static {
		procStatic(s)
		procState.static = true
	}
	s.Reset()
	procState.have = 0
	s.CurrentTID = sched.Current().TID
}

// procFill fills the parts of s that parts names and are not yet there;
// procState.mu is held, and no other lock.
func procFill(s *procfs.Snapshot, parts procfs.Part) {
	parts &^= procState.have
	procState.have |= parts
	if parts&(procfs.PartProc|procfs.PartArgs) != 0 {
		procStack()
	}
	if parts&procfs.PartProc != 0 {
		procProc(s)
	}
	if parts&procfs.PartArgs != 0 {
		s.Proc.Cmdline = s.Put(procState.args[:procState.nArgs])
		s.Proc.Environ = s.Put(procState.env[:procState.nEnv])
	}
	if parts&procfs.PartPaths != 0 {
		if exeLen > 0 {
			s.Proc.Exe = s.Put(exePath[:exeLen])
		}
		// The share's working directory is read without its lock: a
		// chdir meanwhile may leave a stale or mixed path, never a fault.
		if procCwd.on {
			n := min(procfs.Path(procCwd.node, s, procState.path[:]), len(procState.path))
			s.Proc.Cwd = s.Put(procState.path[:n])
		} else if shares.CwdOn() {
			s.Proc.Cwd = s.Put(shares.CwdPath())
		} else if n, e := vfs.Getcwd(procState.path[:]); e == 0 && n > 1 {
			s.Proc.Cwd = s.Put(procState.path[:n-1])
		}
	}
	if parts&procfs.PartFDs != 0 {
		procFDs(s)
	}
	if parts&procfs.PartAreas != 0 {
		procAreas(s)
	}
	if parts&procfs.PartMounts != 0 {
		procMounts(s)
	}
	if parts&procfs.PartSys != 0 {
		procSys(s)
	}
}

// procStatic fills what never changes: the names, the CPUs' identities
// and model (procArch), the file system types.
func procStatic(s *procfs.Snapshot) {
	procfs.SetName(&s.Sysname, "Linux")
	procfs.SetName(&s.Release, "6.1.0-yolk") // uname's (sysUname)
	procfs.SetName(&s.Version, "#1 yolk")
	procfs.SetName(&s.Hostname, nodename)
	procfs.SetName(&s.BuiltBy, "yolk@yolk")
	procfs.SetName(&s.Compiler, runtime.Version())
	s.NumCPU = int32(min(sched.NumCPU(), procfs.MaxCPUs))
	for i := 0; i < int(s.NumCPU); i++ {
		s.CPUs[i].CoreID = uint32(i)
	}
	procArch(s)
	for _, t := range [...]string{"sysfs", "tmpfs", "proc", "cgroup2", "pipefs", "anon_inodefs", "sockfs", "9p"} {
		s.AddFS(t, true)
	}
	s.Somaxconn = 4096 // kernel/net's SomaxConn
	// No transparent huge pages: no /sys/kernel/mm/transparent_hugepage,
	// as a Linux built without them (Go's runtime then uses none).
	s.THPSize = 0
}

// procRlimit is resource res's limit, for prlimit and /proc/self/limits (RLIMIT_NOFILE
// the descriptor table's size, an 8 MiB soft stack, the rest unlimited).
func procRlimit(res int) (cur, max uint64) {
	switch res {
	case unix.RLIMIT_NOFILE:
		return uint64(len(files)), uint64(len(files))
	case unix.RLIMIT_STACK:
		return 8 << 20, procfs.Inf
	}
	return procfs.Inf, procfs.Inf
}

// procProc fills the process's numbers and its threads.
func procProc(s *procfs.Snapshot) {
	p := &s.Proc
	p.PID, p.PPID, p.PGID, p.SID, p.TTY, p.TPGID = 1, 0, 1, 1, 0, -1
	procComm(&p.Comm)
	p.Umask = atomic.LoadUint32(&shareUmask) // vfs's, which has no getter
	p.UID, p.GID, p.Caps, p.FDSize = 0, 0, procfs.CapFull, uint32(len(files))
	for i := range p.Limits {
		c, m := procRlimit(i)
		p.Limits[i] = procfs.Rlimit{Cur: c, Max: m}
	}

	procThreads(s, true)
	p.DeadUserNS, p.DeadSysNS = uint64(sched.ExitedCPUTime()), 0

	p.SigIgnored, p.SigCaught = 0, 0
	sigLock.Lock()
	for sig := 1; sig < len(sigActs); sig++ {
		switch h := sigActs[sig].handler; {
		case h == 1: // SIG_IGN
			p.SigIgnored |= 1 << (sig - 1)
		case h > 1:
			p.SigCaught |= 1 << (sig - 1)
		}
	}
	sigLock.Unlock()

	ms := mm.ReadStats()
	a := procAreaSums()
	lo, ro, bss, end := procImage()
	p.StartCode, p.EndCode, p.StartData, p.EndData = uint64(lo), uint64(ro), uint64(ro), uint64(bss)
	p.StartBrk = uint64(mm.PageRound(end))
	p.VmExe = uint64(ro - lo)
	p.VmSize = a.size + uint64(mm.PageRound(end)-lo)
	p.VmData = a.data + uint64(mm.PageRound(end)-ro)
	p.VmStk = a.stack
	p.VmLck, p.VmPin, p.VmLib, p.VmSwap = 0, 0, 0, 0
	p.VmPTE = uint64(ms.TableFrames) * mm.PageSize
	p.RssFile = uint64(ro - lo)
	p.RssAnon = uint64(ms.PagesMapped)*mm.PageSize + uint64(mm.PageRound(end)-ro)
	if untouched := uint64(ms.BSSReclaimed-ms.BSSFaulted) * mm.PageSize; untouched < p.RssAnon {
		p.RssAnon -= untouched
	}
	p.RssShmem = 0
	procState.vmPeak = max(procState.vmPeak, p.VmSize)
	procState.rssHWM = max(procState.rssHWM, p.RssAnon+p.RssFile)
	p.VmPeak, p.VmHWM = procState.vmPeak, procState.rssHWM

	p.StartStack = procState.sp
	p.ArgStart, p.ArgEnd, p.EnvStart, p.EnvEnd = procState.argStart, procState.argEnd, procState.envStart, procState.envEnd
	p.NumAuxv = procState.nauxv
	copy(p.Auxv[:], procState.auxv[:procState.nauxv])
}

// procComm is comm: the image file's name (yolk.exe), else argv[0]'s
// last element, at most 15 bytes, as Linux's from the file executed.
func procComm(c *[16]byte) {
	name := exePath[:exeLen]
	if exeLen == 0 {
		name = cstr(argOff[0])
	}
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			name = name[i+1:]
			break
		}
	}
	*c = [16]byte{}
	copy(c[:15], name)
}

// procThreads counts the threads running or ready to run and, if add,
// adds every thread to s in TID order.
func procThreads(s *procfs.Snapshot, add bool) (running uint32) {
	now := nanotime()
	for i := 0; i < sched.MaxTasks; i++ {
		t := sched.TaskAt(i)
		if !t.Alive() {
			continue
		}
		th := procfs.Thread{TID: t.TID, State: 'S', CPU: max(int32(t.RunningOn()), 0)}
		if t.Runnable() {
			th.State = 'R'
			running++
		}
		if !add {
			continue
		}
		th.UserNS = uint64(t.CPUTime(now))
		th.SigPending = atomic.LoadUint64(&sigPending[i])
		th.SigBlocked = sigMask[i] // the thread's own, read racily as Linux's status
		if !s.AddThread(th) {
			break
		}
		// Keep them in TID order (task/ lists them so): a slot is
		// reused by a later thread.
		for k := int(s.NumThreads) - 1; k > 0 && s.Threads[k-1].TID > s.Threads[k].TID; k-- {
			s.Threads[k-1], s.Threads[k] = s.Threads[k], s.Threads[k-1]
		}
	}
	return running
}

// procImage is the image's bounds: the page of its ELF headers (the
// first loaded), the end of its text and read-only data, the start of its
// BSS and its end.
func procImage() (lo, ro, bss, end uintptr) {
	lo = textStart()&^(mm.PageSize-1) - mm.PageSize
	bss, end = bssStart(), imageEnd()
	ro = imageRO()
	if ro == 0 {
		ro = bss
	}
	return lo, ro, bss, end
}

// procSums are the areas' sizes by kind.
type procSums struct {
	size  uint64 // all
	data  uint64 // private and writable, not the stack (VmData)
	stack uint64 // the initial stack's (VmStk)
}

func procAreaSums() (r procSums) {
	const stLo, stHi = stackTop - stackSize, stackTop
	mm.Areas(func(a mm.Area) bool {
		n := uint64(a.End - a.Start)
		r.size += n
		st := uint64(0)
		if a.Start < stHi && a.End > stLo {
			st = uint64(min(a.End, stHi) - max(a.Start, stLo))
		}
		r.stack += st
		if a.Prot&mm.ProtWrite != 0 && !a.Shared {
			r.data += n - st
		}
		return true
	})
	return r
}

// procStack reads the initial stack back once (buildInitStack's): the
// argument and environment strings lie at its top, argv[0]'s last; under
// them AT_RANDOM's bytes, then from the initial stack pointer argc, argv,
// envp and the auxiliary vector. The stack pointer is found as the word
// argc followed by argv[0]'s address (the string ending at the top), and
// the strings through the arrays' pointers, all within the top 8 KiB
// (the command line is at most 4 KiB).
func procStack() {
	ps := &procState
	if ps.stackRead {
		return
	}
	ps.stackRead = true
	b := ps.stk[:]
	base := uint64(stackTop - len(b))
	if mm.CopyIn(b, uintptr(base)) != 0 || nargs < 1 {
		return
	}
	word := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	// str is the string at address a, its NUL included; nil if it is
	// not within b.
	str := func(a uint64) []byte {
		if a < base || a >= stackTop {
			return nil
		}
		for i := int(a - base); i < len(b); i++ {
			if b[i] == 0 {
				return b[a-base : i+1]
			}
		}
		return nil
	}
	argv0 := uint64(stackTop - len(cstr(argOff[0])) - 1)
	sp := -1
	for off := (len(b) - 16) &^ 15; off >= 0; off -= 16 {
		if word(off) == uint64(nargs) && word(off+8) == argv0 {
			sp = off
			break
		}
	}
	if sp < 0 {
		return
	}
	off := sp + 8
	ps.argStart, ps.argEnd, ps.envStart, ps.envEnd = stackTop, stackTop, stackTop, stackTop
	for k := 0; k < nargs && off+8 <= len(b); k, off = k+1, off+8 {
		a := word(off)
		ps.nArgs += copy(ps.args[ps.nArgs:], str(a))
		ps.argStart = min(ps.argStart, a)
	}
	off += 8 // argv's NULL
	ps.envEnd = ps.argStart
	for ; off+8 <= len(b) && word(off) != 0; off += 8 {
		a := word(off)
		ps.nEnv += copy(ps.env[ps.nEnv:], str(a))
		ps.envStart = min(ps.envStart, a)
	}
	ps.envStart = min(ps.envStart, ps.envEnd)
	off += 8 // envp's NULL
	ps.sp = base + uint64(sp)
	for k := 0; k+1 < len(ps.auxv) && off+16 <= len(b); k, off = k+2, off+16 {
		ps.auxv[k], ps.auxv[k+1] = word(off), word(off+8)
		if ps.auxv[k] == atNull {
			ps.nauxv = int32(k + 2)
			break
		}
	}
}

var procSlash = [...]byte{'/'}

// procAreas fills the areas: the image's (its first segment with its
// headers and text, its data, its BSS), then the address space's.
func procAreas(s *procfs.Snapshot) {
	procState.nwant = 0
	lo, ro, bss, end := procImage()
	var exe procfs.Str
	if exeLen > 0 {
		exe = s.Put(exePath[:exeLen])
	}
	s.AddArea(procfs.Area{Start: uint64(lo), End: uint64(mm.PageRound(ro)), Prot: procfs.ProtRead | procfs.ProtExec, Name: exe})
	if dataEnd := mm.PageRound(bss); dataEnd > mm.PageRound(ro) {
		s.AddArea(procfs.Area{Start: uint64(mm.PageRound(ro)), End: uint64(dataEnd), Off: uint64(mm.PageRound(ro) - lo),
			Prot: procfs.ProtRead | procfs.ProtWrite, Name: exe})
	}
	if e := mm.PageRound(end); e > mm.PageRound(bss) {
		s.AddArea(procfs.Area{Start: uint64(mm.PageRound(bss)), End: uint64(e), Prot: procfs.ProtRead | procfs.ProtWrite})
	}
	stack := s.PutString("[stack]")
	first := s.NumAreas
	mm.Areas(func(a mm.Area) bool {
		ar := procfs.Area{Start: uint64(a.Start), End: uint64(a.End), Off: uint64(a.Off), Prot: uint8(a.Prot), Shared: a.Shared}
		switch {
		case a.File > 0: // the in-memory file system's inode File-1
			ar.Ino, ar.Minor = uint64(a.File), fs.Dev
		case a.File < 0: // share file share.AreaFile(File); its inode is named below
			ar.Ino = uint64(-int64(a.File))
		}
		if a.Start < stackTop && a.End >= stackTop {
			ar.Name = stack
		}
		return s.AddArea(ar)
	})
	for i := first; i < s.NumAreas; i++ {
		ar := &s.Areas[i]
		if ar.Ino != 0 && ar.Minor == fs.Dev {
			procWantIno(ar.Ino)
		}
	}
	procFSNames(s)
	for i := first; i < s.NumAreas; i++ {
		ar := &s.Areas[i]
		switch {
		case ar.Ino != 0 && ar.Minor == fs.Dev:
			ar.Name = procPathOf(s, ar.Ino)
		case ar.Ino != 0:
			h := share.AreaFile(int32(-int64(ar.Ino)))
			_, ar.Name = procSharePath(s, h)
			ar.Ino, ar.Major, ar.Minor = shares.File(h).Qpath, 0x90, uint32(shares.File(h).Dev)
		}
	}
}

// procMounts fills the mount table.
func procMounts(s *procfs.Snapshot) {
	const pseudo = procfs.MountNoSuid | procfs.MountNoDev | procfs.MountNoExec | procfs.MountRelAtime
	add := func(id, parent int32, major, minor uint32, root, point, typ, src, opts string, flags uint32) {
		s.AddMount(procfs.Mount{ID: id, Parent: parent, Major: major, Minor: minor, Flags: flags,
			Root: s.PutString(root), Point: s.PutString(point), Type: s.PutString(typ), Source: s.PutString(src), Opts: s.PutString(opts)})
	}
	add(procMntRoot, procMntRoot, 0, fs.Dev, "/", "/", "tmpfs", "rootfs", "mode=755", procfs.MountRelAtime)
	add(procMntDev, procMntRoot, 0, fs.Dev, "/dev", "/dev", "tmpfs", "rootfs", "mode=755", procfs.MountNoSuid|procfs.MountRelAtime)
	add(procMntProc, procMntRoot, 0, fs.Dev+1, "/", "/proc", "proc", "proc", "", pseudo)
	add(procMntSys, procMntRoot, 0, fs.Dev+2, "/", "/sys", "sysfs", "sysfs", "", pseudo)
	add(procMntCgroup, procMntSys, 0, fs.Dev+3, "/", "/sys/fs/cgroup", "cgroup2", "cgroup2", "nsdelegate", pseudo)
	for i := 0; i < shares.NumMounts(); i++ {
		m := shares.Mount(i)
		if m.Dev < 0 {
			continue // its device was not found: the in-memory directory is all there is
		}
		s.AddMount(procfs.Mount{ID: int32(procMntShare + i), Parent: procMntRoot, Major: 0x90, Minor: uint32(m.Dev),
			Root: s.PutString("/"), Point: s.Put(m.Path()), Type: s.PutString("9p"), Source: s.Put(m.Tag()),
			Opts: s.PutString("trans=virtio")})
	}
}

// procSys fills the system's numbers: CPU times, uptime, load, memory.
func procSys(s *procfs.Snapshot) {
	now := nanotime()
	s.UptimeNS = uint64(now)
	s.BootTime = wallBase / 1e9
	s.Ctxt = 0
	for i := 0; i < int(s.NumCPU); i++ {
		c := sched.CPUAt(i)
		idle := c.IdleTask().CPUTime(now)
		s.CPUs[i].Idle = uint64(idle)
		s.CPUs[i].User = uint64(max(now-idle, 0))
		s.Ctxt += c.Switches()
	}
	s.Running = procThreads(s, false)
	s.Blocked = 0
	s.LastPID = sched.LastTID()
	s.Forks = uint64(s.LastPID)
	procLoad(now, uint64(s.Running))
	s.Load = procState.load
	s.NumIRQs = 0
	s.NetInOctets, s.NetOutOctets = 0, 0

	ms := mm.ReadStats()
	filePages, _ := vfs.Pages()
	total, free := uint64(ms.FramesAll)*mm.PageSize, uint64(ms.FramesFree)*mm.PageSize
	anon, shmem := uint64(ms.PagesMapped)*mm.PageSize, uint64(filePages)*mm.PageSize
	a := procAreaSums()
	m := &s.Mem
	*m = [procfs.NumMem]uint64{}
	m[procfs.MemTotal], m[procfs.MemFree], m[procfs.MemAvailable] = total, free, free
	m[procfs.MemCached], m[procfs.MemShmem] = shmem, shmem // tmpfs: shared memory, counted as cache
	m[procfs.MemAnonPages] = anon
	m[procfs.MemActive], m[procfs.MemActiveAnon] = anon+shmem, anon+shmem // no reclaim: all active
	m[procfs.MemPageTables] = uint64(ms.TableFrames) * mm.PageSize
	m[procfs.MemKernelStack] = uint64(sched.ReadStats().Live) * mm.KStackSize
	m[procfs.MemCommitLimit] = total / 2 // overcommit_ratio 50, no swap
	m[procfs.MemCommittedAS] = a.data + a.stack
	m[procfs.MemHugepagesize] = 2 << 20
	procArchMem(s, total)

	s.CPUQuotaUS, s.CPUPeriodUS = 0, 0 // cpu.max: "max 100000"
	s.MemoryMax, s.MemoryCur = 0, total-free
}

// procLoad brings the load average up to now: one step of Linux's
// calc_load per 5-second period since the last read, each with the
// threads active now — what Linux's NO_HZ catch-up (calc_global_nohz)
// does for the periods no tick sampled. So the average is sampled when
// read, not every 5 s: between reads it follows the activity at the
// reads (the reader itself is always running).
func procLoad(now int64, active uint64) {
	ps := &procState
	n := (now - ps.loadAt) / procfs.LoadFreqNS
	if n <= 0 {
		return
	}
	ps.loadAt += n * procfs.LoadFreqNS
	if n > 1000 { // the old average has decayed to nothing
		for i := range ps.load {
			ps.load[i] = active * procfs.Fixed1
		}
		return
	}
	for ; n > 0; n-- {
		procfs.UpdateLoad(&ps.load, active)
	}
}
