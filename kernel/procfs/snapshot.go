package procfs

// The snapshot: every number the files show, in fixed-size arrays the
// kernel fills (Needs says which parts a file reads). Times are
// nanoseconds, memory is bytes, whatever unit the file shows (ticks of
// USER_HZ, kB, pages); the renderers convert as Linux does.

// Limits of the snapshot's lists, the kernel's own limits (sched.MaxTasks,
// kernel/files.go's table, mm's areas, sched.MaxCPUs).
const (
	MaxThreads = 512
	MaxFDs     = 16384 // kernel/files.go's numFiles: /proc/self/fd lists every descriptor
	MaxAreas   = 4096
	MaxMounts  = 64
	MaxCPUs    = 64
	MaxIRQs    = 64
	MaxAuxv    = 64 // words: 32 (type, value) pairs, AT_NULL's included
	MaxFS      = 32
	MaxIfaces  = 4        // kernel/net's interface table
	MaxIfAddrs = 4        // addresses of each family per interface
	PoolSize   = 64 << 10 // bytes of the strings of one fill (Str)
	NameSize   = 64       // bytes of a fixed name (utsname's 65 less the NUL)
)

// PageSize is the page size the files count in (statm, stat's rss).
const PageSize = 4096

// Arch selects the architecture-specific formats (cpuinfo, meminfo's
// DirectMap lines, fdinfo's O_LARGEFILE).
const (
	ArchAMD64 = iota
	ArchARM64
)

// Inf is RLIM_INFINITY.
const Inf = ^uint64(0)

// CapFull is the capability set of root with every capability Linux 6.x
// defines (CAP_LAST_CAP 40), as status shows it.
const CapFull = 1<<41 - 1

// Str names bytes in the snapshot's pool: Put and PutString make one.
// The zero Str is empty.
type Str struct{ Off, Len uint32 }

// Thread is one thread (task) of the process.
type Thread struct {
	TID   int32
	State byte  // Linux's letter: 'R' running or ready, 'S' blocked, 'D', 'T', 'Z'
	CPU   int32 // the CPU it runs or last ran on (stat's processor)

	UserNS, SysNS uint64 // CPU time in user and kernel mode
	StartNS       uint64 // when it was created, since boot
	WaitNS        uint64 // time spent ready, waiting for a CPU (schedstat)

	MinFlt, MajFlt         uint64 // page faults that did not / did read a file
	Voluntary, Involuntary uint64 // context switches: it blocked / was preempted

	SigPending, SigBlocked uint64 // signal masks, bit n-1 for signal n
}

// Rlimit is one resource limit (Inf: unlimited).
type Rlimit struct{ Cur, Max uint64 }

// Resource limits' indices in Process.Limits (RLIMIT_*).
const (
	RlimitCPU = iota
	RlimitFSize
	RlimitData
	RlimitStack
	RlimitCore
	RlimitRSS
	RlimitNProc
	RlimitNoFile
	RlimitMemLock
	RlimitAS
	RlimitLocks
	RlimitSigPending
	RlimitMsgQueue
	RlimitNice
	RlimitRTPrio
	RlimitRTTime
	NumLimits
)

// Process is the one process: its identity, memory and signal state.
// The whole-process CPU times are its threads' plus DeadUserNS and
// DeadSysNS (threads that exited), as Linux's thread-group times.
type Process struct {
	PID, PPID, PGID, SID int32
	TTY                  int32 // controlling terminal's device number, 0 if none
	TPGID                int32 // its foreground process group, -1 if none
	Comm                 [16]byte
	Umask                uint32
	UID, GID             uint32
	Caps                 uint64 // permitted = effective = bounding set (CapFull for root)
	FDSize               uint32 // descriptor table's size

	DeadUserNS, DeadSysNS  uint64
	DeadMinFlt, DeadMajFlt uint64
	SigShared              uint64 // pending for the process
	SigIgnored, SigCaught  uint64 // actions SIG_IGN / a handler
	SigQueued              uint64 // queued signals (SigQ)
	NoNewPrivs             bool
	Limits                 [NumLimits]Rlimit
	VmPeak, VmSize         uint64 // address space: largest, now
	VmLck, VmPin           uint64
	VmHWM                  uint64 // largest resident set
	RssAnon, RssFile       uint64 // resident: anonymous, file pages
	RssShmem               uint64
	VmData, VmStk, VmExe   uint64 // private writable non-stack, stack, the image's text
	VmLib, VmPTE, VmSwap   uint64
	StartCode, EndCode     uint64 // the image's text
	StartStack             uint64 // the initial stack's top
	StartData, EndData     uint64
	StartBrk               uint64
	ArgStart, ArgEnd       uint64 // argv strings on the initial stack
	EnvStart, EnvEnd       uint64 // environment strings
	RChar, WChar           uint64 // io: bytes read and written by system calls
	SyscR, SyscW           uint64 // io: read and write calls
	ReadBytes, WriteBytes  uint64 // io: bytes from / to a storage device
	CancelledWriteBytes    uint64
	Auxv                   [MaxAuxv]uint64 // the auxiliary vector, AT_NULL pair included
	NumAuxv                int32           // words of Auxv used
	Cmdline, Environ       Str             // NUL-terminated strings
	Exe, Cwd               Str             // paths; Exe empty: no exe link (ENOENT); Cwd empty: "/"
}

// FD kinds: what an open file is, which names its fd link.
const (
	FDFile     = iota // a file or directory: Path
	FDConsole         // the console: Path, "/dev/console" if empty
	FDPipe            // "pipe:[Ino]"
	FDSocket          // "socket:[Ino]"
	FDEpoll           // "anon_inode:[eventpoll]"
	FDEventfd         // "anon_inode:[eventfd]"
	FDTimerfd         // "anon_inode:[timerfd]"
	FDSignalfd        // "anon_inode:[signalfd]"
	FDInotify         // "anon_inode:inotify"
	FDPidfd           // "anon_inode:[pidfd]"
)

// FD is one open descriptor.
type FD struct {
	FD      int32
	Kind    uint8
	CloExec bool
	Flags   uint32 // the open file's status flags, O_ACCMODE included, as fcntl(F_GETFL) gives them
	Pos     int64
	Ino     uint64 // the inode's number (also the pipe's or socket's in the link)
	MntID   int32  // the mount's ID (mountinfo's first field)
	Path    Str
}

// Area protections (kernel/mm's ProtRead, ProtWrite, ProtExec).
const (
	ProtRead  = 1
	ProtWrite = 2
	ProtExec  = 4
)

// Area is one mapping of the address space (a line of maps).
type Area struct {
	Start, End   uint64
	Off          uint64 // a file area's offset in the file, bytes
	Ino          uint64
	Major, Minor uint32 // the file's device
	Prot         uint8
	Shared       bool
	Name         Str // the file's path, "[heap]", "[stack]", "[vdso]", "[vvar]"; empty: anonymous
}

// Mount flags (show_mnt_opts and the super block's).
const (
	MountRO         = 1 << iota // the mount is read-only
	MountNoSuid                 // nosuid
	MountNoDev                  // nodev
	MountNoExec                 // noexec
	MountNoAtime                // noatime
	MountNoDirAtime             // nodiratime
	MountRelAtime               // relatime
	MountSuperRO                // the file system (super block) is read-only
	MountSync                   // the super block's sync
)

// Mount is one mount (a line of mounts and mountinfo).
type Mount struct {
	ID, Parent   int32
	Major, Minor uint32 // st_dev of its files
	Flags        uint32
	Root         Str // the mount's root within its file system, "/" if empty
	Point        Str // where it is mounted
	Type         Str // "tmpfs", "proc", "sysfs", "cgroup2", "9p", "ext4" ...
	Source       Str // "none" if empty
	Opts         Str // the file system's own options ("size=...,mode=755"), may be empty
}

// CPU is one online CPU: its times and identity.
type CPU struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64 // ns
	APICID                                                uint32 // amd64: its (initial) APIC ID
	MIDR                                                  uint32 // arm64: MIDR_EL1
	CoreID                                                uint32 // amd64: core id
}

// CPUModel is what cpuinfo says of the CPUs besides their numbers.
type CPUModel struct {
	// amd64 (ReadCPUID fills all but KHz, Microcode and BogoMIPS).
	Vendor      [12]byte
	Name        [48]byte // the brand string
	Family      uint32
	Model       uint32
	Stepping    uint32
	Microcode   uint32
	KHz         uint64 // cpu MHz, in kHz
	CacheKB     uint32
	TLBSize     uint32 // "TLB size" in 4 KiB pages (AMD's L2 TLBs; 0: no line)
	CPUIDLevel  uint32
	ClflushSize uint32
	PhysBits    uint32
	VirtBits    uint32
	Siblings    uint32 // logical CPUs in the package (0: NumCPU)
	Cores       uint32 // cores in the package (0: NumCPU)
	Caps        [NumCapWords]uint32
	Power       uint32 // CPUID 0x80000007 EDX (power management)
	// arm64
	HWCap, HWCap2 uint64 // AT_HWCAP, AT_HWCAP2
	// both
	BogoMIPS uint64 // hundredths
}

// Memory counters' indices in Snapshot.Mem (meminfo's lines, bytes).
const (
	MemTotal = iota
	MemFree
	MemAvailable
	MemBuffers
	MemCached
	MemSwapCached
	MemActive
	MemInactive
	MemActiveAnon
	MemInactiveAnon
	MemActiveFile
	MemInactiveFile
	MemUnevictable
	MemMlocked
	MemSwapTotal
	MemSwapFree
	MemZswap
	MemZswapped
	MemDirty
	MemWriteback
	MemAnonPages
	MemMapped
	MemShmem
	MemKReclaimable
	MemSlab
	MemSReclaimable
	MemSUnreclaim
	MemKernelStack
	MemPageTables
	MemSecPageTables
	MemNFSUnstable
	MemBounce
	MemWritebackTmp
	MemCommitLimit
	MemCommittedAS
	MemVmallocTotal
	MemVmallocUsed
	MemVmallocChunk
	MemPercpu
	MemAnonHugePages
	MemShmemHugePages
	MemShmemPmdMapped
	MemFileHugePages
	MemFilePmdMapped
	MemBalloon
	MemHugePagesTotal // a count of huge pages, not bytes
	MemHugePagesFree  // count
	MemHugePagesRsvd  // count
	MemHugePagesSurp  // count
	MemHugepagesize
	MemHugetlb
	MemDirectMap4k // amd64 only
	MemDirectMap2M
	MemDirectMap1G
	NumMem
)

// FSType is a file system the kernel has (a line of /proc/filesystems).
type FSType struct {
	Name  [16]byte
	NoDev bool // needs no block device
}

// Iface is a network interface (kernel/net's table, as netlink dumps
// it): /proc/net/igmp and igmp6 show the multicast groups it has joined,
// which follow from its flags and IPv6 addresses as Linux's joins do
// (net.go); its IPv4 addresses play no part (224.0.0.1 is joined by an
// interface that is up, with or without one).
type Iface struct {
	Index  int32
	Flags  uint32 // IFF_*
	Name   [16]byte
	NAddr6 int32
	Addr6  [MaxIfAddrs][16]byte // the order netlink dumps them: global scope first
}

// Snapshot is everything the files show. The kernel keeps one (or one per
// reader) in memory it owns; it has no Go pointers. Fill the static part
// once (Arch, Model, CPUs' identities, the names, FS), and before a file
// is read call Reset and fill what Needs names.
type Snapshot struct {
	Arch uint8

	Proc       Process
	Threads    [MaxThreads]Thread // Threads[0] should be the leader (TID == PID)
	NumThreads int32
	CurrentTID int32 // the reading thread (thread-self)

	FDs    [MaxFDs]FD // ascending FD
	NumFDs int32

	Areas    [MaxAreas]Area // ascending Start
	NumAreas int32

	Mounts    [MaxMounts]Mount // parents before children
	NumMounts int32

	Model  CPUModel
	CPUs   [MaxCPUs]CPU
	NumCPU int32 // online CPUs, 0..NumCPU-1

	BootTime  int64     // the Unix time of boot, seconds (btime)
	UptimeNS  uint64    // since boot
	Load      [3]uint64 // 1, 5, 15 min, fixed point with FShift bits (UpdateLoad)
	Running   uint32    // threads running or ready
	Blocked   uint32    // threads blocked on I/O
	LastPID   int32     // the last thread ID given out
	Ctxt      uint64    // context switches since boot
	Forks     uint64    // threads and processes created since boot
	IRQs      [MaxIRQs]uint64
	NumIRQs   int32
	Mem       [NumMem]uint64
	Somaxconn uint32
	THPSize   uint64 // transparent huge page size; 0: no /sys/kernel/mm/transparent_hugepage

	CPUQuotaUS  uint64 // cgroup cpu.max quota, 0: max
	CPUPeriodUS uint64 // its period, 0: 100000
	MemoryMax   uint64 // cgroup memory.max, 0: max
	MemoryCur   uint64 // cgroup memory.current

	NetInOctets, NetOutOctets uint64 // IP bytes received and sent (net/netstat)

	Sysname, Release, Version, Hostname [NameSize]byte // uname's, NUL-padded
	BuiltBy, Compiler                   [NameSize]byte // version's "(user@host) (compiler)"

	FS    [MaxFS]FSType
	NumFS int32

	Ifaces    [MaxIfaces]Iface // ascending Index
	NumIfaces int32

	Pool    [PoolSize]byte
	PoolLen uint32
}

// Part is a bit set of the snapshot's parts a file reads (Needs).
type Part uint32

const (
	PartProc   Part = 1 << iota // Proc's numbers (not its Strs) and Threads
	PartArgs                    // Proc.Cmdline, Proc.Environ
	PartPaths                   // Proc.Exe, Proc.Cwd
	PartFDs                     // FDs
	PartAreas                   // Areas
	PartMounts                  // Mounts
	PartSys                     // CPUs' times, UptimeNS to NetOutOctets
	PartNet                     // Ifaces
)

// Reset empties the lists and the pool, before a fill.
func (s *Snapshot) Reset() {
	s.NumThreads, s.NumFDs, s.NumAreas, s.NumMounts = 0, 0, 0, 0
	s.NumIfaces = 0
	s.PoolLen = 0
}

// Put copies b into the pool; it keeps what fits.
func (s *Snapshot) Put(b []byte) Str {
	n := copy(s.Pool[s.PoolLen:], b)
	st := Str{s.PoolLen, uint32(n)}
	s.PoolLen += uint32(n)
	return st
}

// PutString copies str into the pool; it keeps what fits.
func (s *Snapshot) PutString(str string) Str {
	n := copy(s.Pool[s.PoolLen:], str)
	st := Str{s.PoolLen, uint32(n)}
	s.PoolLen += uint32(n)
	return st
}

// Bytes returns the bytes st names (empty if it is out of the pool).
func (s *Snapshot) Bytes(st Str) []byte {
	if uint64(st.Off)+uint64(st.Len) > uint64(s.PoolLen) {
		return nil
	}
	return s.Pool[st.Off : st.Off+st.Len]
}

// AddThread, AddFD, AddArea and AddMount append to their list; false if
// it is full.
func (s *Snapshot) AddThread(t Thread) bool {
	if int(s.NumThreads) >= len(s.Threads) {
		return false
	}
	s.Threads[s.NumThreads] = t
	s.NumThreads++
	return true
}

func (s *Snapshot) AddFD(f FD) bool {
	if int(s.NumFDs) >= len(s.FDs) {
		return false
	}
	s.FDs[s.NumFDs] = f
	s.NumFDs++
	return true
}

func (s *Snapshot) AddArea(a Area) bool {
	if int(s.NumAreas) >= len(s.Areas) {
		return false
	}
	s.Areas[s.NumAreas] = a
	s.NumAreas++
	return true
}

func (s *Snapshot) AddMount(m Mount) bool {
	if int(s.NumMounts) >= len(s.Mounts) {
		return false
	}
	s.Mounts[s.NumMounts] = m
	s.NumMounts++
	return true
}

// AddIface adds an interface; false if the list is full.
func (s *Snapshot) AddIface(f *Iface) bool {
	if int(s.NumIfaces) >= len(s.Ifaces) {
		return false
	}
	s.Ifaces[s.NumIfaces] = *f
	s.NumIfaces++
	return true
}

// AddFS adds a file system type to /proc/filesystems.
func (s *Snapshot) AddFS(name string, nodev bool) bool {
	if int(s.NumFS) >= len(s.FS) {
		return false
	}
	f := &s.FS[s.NumFS]
	f.Name = [16]byte{}
	copy(f.Name[:], name)
	f.NoDev = nodev
	s.NumFS++
	return true
}

// SetName copies str into one of the fixed names (Sysname, Release, ...).
func SetName(dst *[NameSize]byte, str string) {
	*dst = [NameSize]byte{}
	copy(dst[:], str)
}

// cstr is a fixed NUL-padded array's string.
func cstr(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// thread returns the thread with ID tid, nil if none.
func (s *Snapshot) thread(tid int32) *Thread {
	for i := 0; i < int(s.NumThreads) && i < len(s.Threads); i++ {
		if s.Threads[i].TID == tid {
			return &s.Threads[i]
		}
	}
	return nil
}

// leader is the thread whose ID is the process's (the first if none).
func (s *Snapshot) leader() *Thread {
	if t := s.thread(s.Proc.PID); t != nil {
		return t
	}
	if s.NumThreads > 0 {
		return &s.Threads[0]
	}
	return &noThread
}

// noThread stands for the leader of a snapshot without threads.
var noThread = Thread{State: 'R'}

// fd returns the descriptor fd, nil if it is not open.
func (s *Snapshot) fd(fd int32) *FD {
	for i := 0; i < int(s.NumFDs) && i < len(s.FDs); i++ {
		if s.FDs[i].FD == fd {
			return &s.FDs[i]
		}
	}
	return nil
}

// Load averages in Linux's fixed point (kernel/sched/loadavg.c).
const (
	FShift = 11
	Fixed1 = 1 << FShift
	// LoadFreq is how often UpdateLoad runs: every 5 s (Linux: 5*HZ+1 ticks).
	LoadFreqNS = 5_000_000_000
)

var loadExp = [3]uint64{1884, 2014, 2037} // 1/exp(5s/1min), 5 min, 15 min, fixed point

// UpdateLoad advances the load averages by one LoadFreqNS period in which
// active threads were running, ready or blocked uninterruptibly, as
// Linux's calc_load.
func UpdateLoad(avg *[3]uint64, active uint64) {
	a := active * Fixed1
	for i := range avg {
		l := avg[i]*loadExp[i] + a*(Fixed1-loadExp[i])
		if a >= avg[i] {
			l += Fixed1 - 1
		}
		avg[i] = l / Fixed1
	}
}
