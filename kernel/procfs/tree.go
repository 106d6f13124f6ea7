package procfs

// The tree: a static table of files, directories and symbolic links, and
// four dynamic directories (/proc's process, task/, fd/, fdinfo/) whose
// entries come from the snapshot. A Node names one of them.

// Node is a file, directory or symbolic link: an entry of the table, the
// thread it is of (0: the process) and, under fd/ and fdinfo/, the
// descriptor. A small integer, safe to keep in memory the kernel writes.
type Node uint64

// The roots of the two file systems.
const (
	ProcRoot = Node(eProc)
	SysRoot  = Node(eSys)
)

func mk(e int, tid int32, fd int32) Node {
	return Node(uint64(e) | uint64(uint32(tid))<<16 | uint64(uint16(fd))<<48)
}

func (n Node) entry() int  { return int(n & 0xffff) }
func (n Node) tid() int32  { return int32(uint32(n >> 16)) }
func (n Node) fdno() int32 { return int32(uint16(n >> 48)) }

// File types (the S_IFMT bits of Mode).
const (
	ModeDir  = 0o040000
	ModeReg  = 0o100000
	ModeLink = 0o120000
)

const (
	tDir = iota
	tFile
	tLink
)

// Entry flags.
const (
	fTask   = 1 << iota // also in a thread's directory (task/<tid>/)
	fDynPid             // stands for the process's directory, named by its PID
	fDynTid             // stands for task/<tid>
	fDynFD              // stands for fd/<n> and fdinfo/<n>
	fTHP                // exists only if Snapshot.THPSize != 0
)

type entry struct {
	name   string
	parent uint8
	typ    uint8
	perm   uint16
	flags  uint8
	needs  Part
}

// Entries. The order within a directory is the order of its listing.
const (
	eProc = iota
	eSelf
	eThreadSelf
	eMeminfo
	eCpuinfo
	eStat
	eUptime
	eLoadavg
	eVersion
	eFilesystems
	eMountsLink
	eNetLink
	eSysctl
	eSysKernel
	eHostname
	eOsrelease
	eOstype
	eSysNet
	eSysNetCore
	eSomaxconn
	ePid
	eTask
	eTid
	ePStat
	ePStatus
	ePStatm
	ePLimits
	ePCmdline
	ePEnviron
	ePComm
	ePIO
	ePAuxv
	ePCgroup
	ePMaps
	ePSmapsRollup
	ePMounts
	ePMountinfo
	ePSchedstat
	ePExe
	ePCwd
	ePRoot
	ePFd
	ePFdinfo
	ePNet
	eFdLink
	eFdinfo
	eIGMP
	eIGMP6
	eNetstat

	eSys
	eSysFs
	eCgroup
	eCgControllers
	eCgProcs
	eCgThreads
	eCPUMax
	eCPUStat
	eMemCurrent
	eMemMax
	eSysDevices
	eSysSystem
	eSysCPU
	eCPUOnline
	eCPUPossible
	eCPUPresent
	eSysKern
	eSysMm
	eTHP
	eTHPSize
	eTHPEnabled
	numEntries
)

const (
	pProc = PartProc
	pSys  = PartSys
)

var entries = [numEntries]entry{
	eProc:        {"", eProc, tDir, 0o555, 0, pProc}, // the process's directory is named by its PID
	eSelf:        {"self", eProc, tLink, 0o777, 0, pProc},
	eThreadSelf:  {"thread-self", eProc, tLink, 0o777, 0, pProc},
	eMeminfo:     {"meminfo", eProc, tFile, 0o444, 0, pSys},
	eCpuinfo:     {"cpuinfo", eProc, tFile, 0o444, 0, 0},
	eStat:        {"stat", eProc, tFile, 0o444, 0, pSys},
	eUptime:      {"uptime", eProc, tFile, 0o444, 0, pSys},
	eLoadavg:     {"loadavg", eProc, tFile, 0o444, 0, pSys | pProc},
	eVersion:     {"version", eProc, tFile, 0o444, 0, 0},
	eFilesystems: {"filesystems", eProc, tFile, 0o444, 0, 0},
	eMountsLink:  {"mounts", eProc, tLink, 0o777, 0, 0},
	eNetLink:     {"net", eProc, tLink, 0o777, 0, 0},
	eSysctl:      {"sys", eProc, tDir, 0o555, 0, 0},
	eSysKernel:   {"kernel", eSysctl, tDir, 0o555, 0, 0},
	eHostname:    {"hostname", eSysKernel, tFile, 0o644, 0, 0},
	eOsrelease:   {"osrelease", eSysKernel, tFile, 0o444, 0, 0},
	eOstype:      {"ostype", eSysKernel, tFile, 0o444, 0, 0},
	eSysNet:      {"net", eSysctl, tDir, 0o555, 0, 0},
	eSysNetCore:  {"core", eSysNet, tDir, 0o555, 0, 0},
	eSomaxconn:   {"somaxconn", eSysNetCore, tFile, 0o644, 0, pSys},
	ePid:         {"", eProc, tDir, 0o555, fDynPid, pProc},

	eTask:         {"task", ePid, tDir, 0o555, 0, pProc},
	eTid:          {"", eTask, tDir, 0o555, fDynTid, pProc},
	ePStat:        {"stat", ePid, tFile, 0o444, fTask, pProc},
	ePStatus:      {"status", ePid, tFile, 0o444, fTask, pProc},
	ePStatm:       {"statm", ePid, tFile, 0o444, fTask, pProc},
	ePLimits:      {"limits", ePid, tFile, 0o444, fTask, pProc},
	ePCmdline:     {"cmdline", ePid, tFile, 0o444, fTask, pProc | PartArgs},
	ePEnviron:     {"environ", ePid, tFile, 0o400, fTask, pProc | PartArgs},
	ePComm:        {"comm", ePid, tFile, 0o644, fTask, pProc},
	ePIO:          {"io", ePid, tFile, 0o400, fTask, pProc},
	ePAuxv:        {"auxv", ePid, tFile, 0o400, fTask, pProc},
	ePCgroup:      {"cgroup", ePid, tFile, 0o444, fTask, pProc},
	ePMaps:        {"maps", ePid, tFile, 0o444, fTask, pProc | PartAreas},
	ePSmapsRollup: {"smaps_rollup", ePid, tFile, 0o444, fTask, pProc | PartAreas},
	ePMounts:      {"mounts", ePid, tFile, 0o444, fTask, pProc | PartMounts},
	ePMountinfo:   {"mountinfo", ePid, tFile, 0o444, fTask, pProc | PartMounts},
	ePSchedstat:   {"schedstat", ePid, tFile, 0o444, fTask, pProc},
	ePExe:         {"exe", ePid, tLink, 0o777, fTask, pProc | PartPaths},
	ePCwd:         {"cwd", ePid, tLink, 0o777, fTask, pProc | PartPaths},
	ePRoot:        {"root", ePid, tLink, 0o777, fTask, pProc},
	ePFd:          {"fd", ePid, tDir, 0o500, fTask, pProc | PartFDs},
	ePFdinfo:      {"fdinfo", ePid, tDir, 0o500, fTask, pProc | PartFDs},
	ePNet:         {"net", ePid, tDir, 0o555, fTask, pProc},
	eFdLink:       {"", ePFd, tLink, 0o700, fDynFD, pProc | PartFDs},
	eFdinfo:       {"", ePFdinfo, tFile, 0o444, fDynFD, pProc | PartFDs},
	eIGMP:         {"igmp", ePNet, tFile, 0o444, 0, pProc | PartNet},
	eIGMP6:        {"igmp6", ePNet, tFile, 0o444, 0, pProc | PartNet},
	eNetstat:      {"netstat", ePNet, tFile, 0o444, 0, pProc | pSys},

	eSys:           {"", eSys, tDir, 0o555, 0, 0},
	eSysFs:         {"fs", eSys, tDir, 0o755, 0, 0},
	eCgroup:        {"cgroup", eSysFs, tDir, 0o755, 0, 0},
	eCgControllers: {"cgroup.controllers", eCgroup, tFile, 0o444, 0, 0},
	eCgProcs:       {"cgroup.procs", eCgroup, tFile, 0o644, 0, pProc},
	eCgThreads:     {"cgroup.threads", eCgroup, tFile, 0o644, 0, pProc},
	eCPUMax:        {"cpu.max", eCgroup, tFile, 0o644, 0, pSys},
	eCPUStat:       {"cpu.stat", eCgroup, tFile, 0o444, 0, pProc},
	eMemCurrent:    {"memory.current", eCgroup, tFile, 0o444, 0, pSys},
	eMemMax:        {"memory.max", eCgroup, tFile, 0o644, 0, pSys},
	eSysDevices:    {"devices", eSys, tDir, 0o755, 0, 0},
	eSysSystem:     {"system", eSysDevices, tDir, 0o755, 0, 0},
	eSysCPU:        {"cpu", eSysSystem, tDir, 0o755, 0, 0},
	eCPUOnline:     {"online", eSysCPU, tFile, 0o444, 0, 0},
	eCPUPossible:   {"possible", eSysCPU, tFile, 0o444, 0, 0},
	eCPUPresent:    {"present", eSysCPU, tFile, 0o444, 0, 0},
	eSysKern:       {"kernel", eSys, tDir, 0o755, 0, 0},
	eSysMm:         {"mm", eSysKern, tDir, 0o755, 0, 0},
	eTHP:           {"transparent_hugepage", eSysMm, tDir, 0o755, fTHP, 0},
	eTHPSize:       {"hpage_pmd_size", eTHP, tFile, 0o444, 0, 0},
	eTHPEnabled:    {"enabled", eTHP, tFile, 0o644, 0, 0},
}

// valid reports whether n names something that exists in s: its entry,
// its thread and its descriptor.
func valid(n Node, s *Snapshot) bool {
	e := n.entry()
	if e >= numEntries {
		return false
	}
	if entries[e].flags&fTHP != 0 && s.THPSize == 0 {
		return false
	}
	if t := n.tid(); t != 0 && s.thread(t) == nil {
		return false
	}
	if entries[e].flags&fDynFD != 0 && s.fd(n.fdno()) == nil {
		return false
	}
	if n.tid() != 0 && entries[e].parent == ePid && entries[e].flags&fTask == 0 {
		return false // task/ is not in a thread's directory
	}
	if n.tid() == 0 && e == eTid {
		return false
	}
	return true
}

// Valid reports whether n still names something in s (a thread that has
// exited, a descriptor since closed: no longer). A stale node's reads
// should fail as Linux's do (ESRCH for a thread's files, ENOENT else).
func Valid(n Node, s *Snapshot) bool { return valid(n, s) }

// Needs says which parts of the snapshot Lookup, ReadDir, Readlink and
// Render read for node n (a directory's: for its entries too).
func Needs(n Node) Part {
	e := n.entry()
	if e >= numEntries {
		return 0
	}
	return entries[e].needs
}

// Mode is n's type and permission bits (0 if n does not exist). A
// descriptor's link has the permissions of its access mode, as Linux's.
func Mode(n Node, s *Snapshot) uint32 {
	if !valid(n, s) {
		return 0
	}
	en := &entries[n.entry()]
	m := uint32(en.perm)
	switch en.typ {
	case tDir:
		m |= ModeDir
	case tFile:
		m |= ModeReg
	case tLink:
		m |= ModeLink
	}
	if n.entry() == eFdLink {
		m = ModeLink
		switch s.fd(n.fdno()).Flags & 3 {
		case 0:
			m |= 0o500
		case 1:
			m |= 0o300
		default:
			m |= 0o700
		}
	}
	return m
}

// Ino is n's inode number: unique among nodes, 1 for /proc's root.
func Ino(n Node) uint64 {
	if n.entry() >= eSys {
		return uint64(n) - eSys + 1
	}
	return uint64(n) + 1
}

// Parent is the directory holding n (a root is its own parent).
func Parent(n Node) Node {
	e := n.entry()
	if e >= numEntries {
		return n
	}
	p := int(entries[e].parent)
	tid := n.tid()
	switch {
	case e == eTid:
		return mk(eTask, 0, 0)
	case p == ePid && tid != 0:
		return mk(eTid, tid, 0)
	}
	return mk(p, tid, 0)
}

// Lookup finds name in directory dir.
func Lookup(dir Node, name []byte, s *Snapshot) (Node, bool) {
	if !valid(dir, s) || entries[dir.entry()].typ != tDir {
		return 0, false
	}
	var child Node
	found := false
	walk(dir, s, func(n Node, nm string, num int64) bool {
		if nm != "" && string(name) == nm || nm == "" && num >= 0 && numIs(name, num) {
			child, found = n, true
			return false
		}
		return true
	})
	return child, found
}

// ReadDir returns the i-th entry of directory dir (from 0, "." and ".."
// not counted), its name written to name; false past the last.
func ReadDir(dir Node, s *Snapshot, i int, name []byte) (child Node, n int, ok bool) {
	if !valid(dir, s) || entries[dir.entry()].typ != tDir || i < 0 {
		return 0, 0, false
	}
	k := 0
	walk(dir, s, func(c Node, nm string, num int64) bool {
		if k < i {
			k++
			return true
		}
		child, ok = c, true
		if nm != "" {
			n = copy(name, nm)
		} else {
			var d [20]byte
			j := digits(&d, uint64(num))
			n = copy(name, d[j:])
		}
		return false
	})
	return child, n, ok
}

// walk calls f for each entry of dir, with its name, or "" and the number
// that names it, until f returns false. f is called directly, never
// stored: it does not escape.
func walk(dir Node, s *Snapshot, f func(n Node, name string, num int64) bool) {
	de, tid := dir.entry(), dir.tid()
	if de == eTid { // a thread's directory: the process's entries marked fTask
		for e := 0; e < numEntries; e++ {
			if entries[e].parent == ePid && entries[e].flags&fTask != 0 {
				if !f(mk(e, tid, 0), entries[e].name, -1) {
					return
				}
			}
		}
		return
	}
	for e := 0; e < numEntries; e++ {
		en := &entries[e]
		if int(en.parent) != de || e == de {
			continue
		}
		switch {
		case en.flags&fTHP != 0 && s.THPSize == 0:
		case en.flags&fDynPid != 0:
			if !f(mk(e, 0, 0), "", int64(s.Proc.PID)) {
				return
			}
		case en.flags&fDynTid != 0:
			for i := 0; i < int(s.NumThreads) && i < len(s.Threads); i++ {
				t := s.Threads[i].TID
				if !f(mk(e, t, 0), "", int64(t)) {
					return
				}
			}
		case en.flags&fDynFD != 0:
			for i := 0; i < int(s.NumFDs) && i < len(s.FDs); i++ {
				fd := s.FDs[i].FD
				if !f(mk(e, tid, fd), "", int64(fd)) {
					return
				}
			}
		default:
			if !f(mk(e, tid, 0), en.name, -1) {
				return
			}
		}
	}
}

// numIs reports whether name is num in decimal, without leading zeros
// (Linux's name_to_int).
func numIs(name []byte, num int64) bool {
	if len(name) == 0 || len(name) > 1 && name[0] == '0' {
		return false
	}
	var v uint64
	for _, c := range name {
		if c < '0' || c > '9' || v > (1<<62)/10 {
			return false
		}
		v = v*10 + uint64(c-'0')
	}
	return v == uint64(num)
}

// Readlink writes symbolic link n's target into buf and returns its
// length; false if n is not a link or has no target (exe without Exe).
func Readlink(n Node, s *Snapshot, buf []byte) (int, bool) {
	if !valid(n, s) || entries[n.entry()].typ != tLink {
		return 0, false
	}
	o := out{b: buf}
	switch n.entry() {
	case eSelf:
		o.sdec(int64(s.Proc.PID))
	case eThreadSelf:
		o.sdec(int64(s.Proc.PID))
		o.str("/task/")
		o.sdec(int64(s.CurrentTID))
	case eMountsLink:
		o.str("self/mounts")
	case eNetLink:
		o.str("self/net")
	case ePExe:
		if s.Proc.Exe.Len == 0 {
			return 0, false
		}
		o.bytes(s.Bytes(s.Proc.Exe))
	case ePCwd:
		if s.Proc.Cwd.Len == 0 {
			o.ch('/')
		}
		o.bytes(s.Bytes(s.Proc.Cwd))
	case ePRoot:
		o.ch('/')
	case eFdLink:
		fdTarget(&o, s, s.fd(n.fdno()))
	}
	if o.n > len(buf) {
		o.n = len(buf)
	}
	return o.n, true
}

// fdTarget writes what a descriptor's link says, as Linux's d_path and
// the pseudo file systems' d_dname.
func fdTarget(o *out, s *Snapshot, f *FD) {
	switch f.Kind {
	case FDPipe:
		o.str("pipe:[")
		o.dec(f.Ino)
		o.ch(']')
	case FDSocket:
		o.str("socket:[")
		o.dec(f.Ino)
		o.ch(']')
	case FDEpoll:
		o.str("anon_inode:[eventpoll]")
	case FDEventfd:
		o.str("anon_inode:[eventfd]")
	case FDTimerfd:
		o.str("anon_inode:[timerfd]")
	case FDSignalfd:
		o.str("anon_inode:[signalfd]")
	case FDInotify:
		o.str("anon_inode:inotify")
	case FDPidfd:
		o.str("anon_inode:[pidfd]")
	case FDConsole:
		if f.Path.Len == 0 {
			o.str("/dev/console")
			return
		}
		o.bytes(s.Bytes(f.Path))
	default:
		o.bytes(s.Bytes(f.Path))
	}
}

// Path writes n's absolute path ("/proc/1/task/3/stat") into buf and
// returns its length (more than len(buf): cut), as /proc/self/fd shows an
// open file of /proc.
func Path(n Node, s *Snapshot, buf []byte) int {
	var up [8]Node
	k := 0
	for k < len(up) {
		up[k] = n
		k++
		p := Parent(n)
		if p == n {
			break
		}
		n = p
	}
	o := out{b: buf}
	if up[k-1].entry() == eSys {
		o.str("/sys")
	} else {
		o.str("/proc")
	}
	for i := k - 2; i >= 0; i-- {
		c := up[i]
		en := &entries[c.entry()]
		o.ch('/')
		switch {
		case en.flags&fDynPid != 0:
			o.dec(uint64(s.Proc.PID))
		case en.flags&fDynTid != 0:
			o.dec(uint64(c.tid()))
		case en.flags&fDynFD != 0:
			o.dec(uint64(c.fdno()))
		default:
			o.str(en.name)
		}
	}
	return o.n
}
