package procfs

// Render writes file n's whole contents, generated from s, into buf and
// returns the contents' length: if that is more than len(buf), only
// len(buf) bytes were written and the caller may retry with a larger
// buffer. A read at an offset is served from the rendering, as Linux's
// seq_file regenerates a file for each read from its start. False if n is
// not a regular file or no longer exists.
func Render(n Node, s *Snapshot, buf []byte) (int, bool) {
	if !valid(n, s) || entries[n.entry()].typ != tFile {
		return 0, false
	}
	o := out{b: buf}
	tid := n.tid()
	switch n.entry() {
	case eMeminfo:
		meminfo(&o, s)
	case eCpuinfo:
		cpuinfo(&o, s)
	case eStat:
		stat(&o, s)
	case eUptime:
		var idle uint64
		for i := 0; i < int(s.NumCPU) && i < len(s.CPUs); i++ {
			idle += s.CPUs[i].Idle
		}
		o.centi(s.UptimeNS / 10_000_000)
		o.ch(' ')
		o.centi(idle / 10_000_000)
		o.ch('\n')
	case eLoadavg:
		for i, a := range s.Load {
			a += Fixed1 / 200
			if i > 0 {
				o.ch(' ')
			}
			o.dec(a >> FShift)
			o.ch('.')
			f := (a & (Fixed1 - 1)) * 100 >> FShift
			o.ch(byte('0' + f/10))
			o.ch(byte('0' + f%10))
		}
		o.ch(' ')
		o.dec(uint64(s.Running))
		o.ch('/')
		o.dec(uint64(s.NumThreads))
		o.ch(' ')
		o.sdec(int64(s.LastPID))
		o.ch('\n')
	case eVersion:
		o.bytes(cstr(s.Sysname[:]))
		o.str(" version ")
		o.bytes(cstr(s.Release[:]))
		o.str(" (")
		o.bytes(cstr(s.BuiltBy[:]))
		o.str(") (")
		o.bytes(cstr(s.Compiler[:]))
		o.str(") ")
		o.bytes(cstr(s.Version[:]))
		o.ch('\n')
	case eFilesystems:
		for i := 0; i < int(s.NumFS) && i < len(s.FS); i++ {
			if s.FS[i].NoDev {
				o.str("nodev")
			}
			o.ch('\t')
			o.bytes(cstr(s.FS[i].Name[:]))
			o.ch('\n')
		}
	case eHostname:
		o.bytes(cstr(s.Hostname[:]))
		o.ch('\n')
	case eOsrelease:
		o.bytes(cstr(s.Release[:]))
		o.ch('\n')
	case eOstype:
		o.bytes(cstr(s.Sysname[:]))
		o.ch('\n')
	case eSomaxconn:
		o.dec(uint64(s.Somaxconn))
		o.ch('\n')

	case ePStat:
		pidStat(&o, s, tid)
	case ePStatus:
		status(&o, s, tid)
	case ePStatm:
		p := &s.Proc
		shared := (p.RssFile + p.RssShmem) / PageSize
		o.dec(p.VmSize / PageSize)
		o.ch(' ')
		o.dec(shared + p.RssAnon/PageSize)
		o.ch(' ')
		o.dec(shared)
		o.ch(' ')
		o.dec(p.VmExe / PageSize)
		o.str(" 0 ")
		o.dec((p.VmData + p.VmStk) / PageSize)
		o.str(" 0\n")
	case ePLimits:
		limits(&o, s)
	case ePCmdline:
		o.bytes(s.Bytes(s.Proc.Cmdline))
	case ePEnviron:
		o.bytes(s.Bytes(s.Proc.Environ))
	case ePComm:
		o.bytes(cstr(s.Proc.Comm[:]))
		o.ch('\n')
	case ePIO:
		p := &s.Proc
		o.str("rchar: ")
		o.dec(p.RChar)
		o.str("\nwchar: ")
		o.dec(p.WChar)
		o.str("\nsyscr: ")
		o.dec(p.SyscR)
		o.str("\nsyscw: ")
		o.dec(p.SyscW)
		o.str("\nread_bytes: ")
		o.dec(p.ReadBytes)
		o.str("\nwrite_bytes: ")
		o.dec(p.WriteBytes)
		o.str("\ncancelled_write_bytes: ")
		o.dec(p.CancelledWriteBytes)
		o.ch('\n')
	case ePAuxv:
		for i := 0; i < int(s.Proc.NumAuxv) && i < len(s.Proc.Auxv); i++ {
			v := s.Proc.Auxv[i]
			for k := 0; k < 8; k++ { // both architectures are little-endian
				o.ch(byte(v >> (8 * k)))
			}
		}
	case ePCgroup:
		o.str("0::/\n")
	case ePMaps:
		for i := 0; i < int(s.NumAreas) && i < len(s.Areas); i++ {
			maps(&o, s, &s.Areas[i])
		}
	case ePSmapsRollup:
		smapsRollup(&o, s)
	case ePMounts:
		for i := 0; i < int(s.NumMounts) && i < len(s.Mounts); i++ {
			mounts(&o, s, &s.Mounts[i])
		}
	case ePMountinfo:
		for i := 0; i < int(s.NumMounts) && i < len(s.Mounts); i++ {
			mountinfo(&o, s, &s.Mounts[i])
		}
	case ePSchedstat:
		t := s.leader()
		if tid != 0 {
			t = s.thread(tid)
		}
		o.dec(t.UserNS + t.SysNS)
		o.ch(' ')
		o.dec(t.WaitNS)
		o.ch(' ')
		o.dec(t.Voluntary + t.Involuntary)
		o.ch('\n')
	case eFdinfo:
		fdinfo(&o, s, s.fd(n.fdno()))
	case eIGMP:
		igmp(&o, s)
	case eIGMP6:
		igmp6(&o, s)
	case eNetstat:
		o.str("IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts InECT0Pkts InCEPkts ReasmOverlaps\nIpExt: 0 0 0 0 0 0 ")
		o.dec(s.NetInOctets)
		o.ch(' ')
		o.dec(s.NetOutOctets)
		o.str(" 0 0 0 0 0 0 0 0 0 0\n")

	case eCgControllers:
		o.str("cpu memory\n")
	case eCgProcs:
		o.sdec(int64(s.Proc.PID))
		o.ch('\n')
	case eCgThreads:
		for i := 0; i < int(s.NumThreads) && i < len(s.Threads); i++ {
			o.sdec(int64(s.Threads[i].TID))
			o.ch('\n')
		}
	case eCPUMax:
		if s.CPUQuotaUS == 0 {
			o.str("max")
		} else {
			o.dec(s.CPUQuotaUS)
		}
		o.ch(' ')
		if s.CPUPeriodUS == 0 {
			o.str("100000")
		} else {
			o.dec(s.CPUPeriodUS)
		}
		o.ch('\n')
	case eCPUStat:
		user, sys := cpuTimes(s)
		o.str("usage_usec ")
		o.dec((user + sys) / 1000)
		o.str("\nuser_usec ")
		o.dec(user / 1000)
		o.str("\nsystem_usec ")
		o.dec(sys / 1000)
		o.str("\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n")
	case eMemCurrent:
		o.dec(s.MemoryCur)
		o.ch('\n')
	case eMemMax:
		if s.MemoryMax == 0 {
			o.str("max\n")
		} else {
			o.dec(s.MemoryMax)
			o.ch('\n')
		}
	case eCPUOnline, eCPUPossible, eCPUPresent:
		o.ch('0')
		if s.NumCPU > 1 {
			o.ch('-')
			o.dec(uint64(s.NumCPU - 1))
		}
		o.ch('\n')
	case eTHPSize:
		o.dec(s.THPSize)
		o.ch('\n')
	case eTHPEnabled:
		o.str("always madvise [never]\n")
	}
	return o.n, true
}

// cpuTimes is the process's user and system CPU time: its threads' and
// its exited threads'.
func cpuTimes(s *Snapshot) (user, sys uint64) {
	user, sys = s.Proc.DeadUserNS, s.Proc.DeadSysNS
	for i := 0; i < int(s.NumThreads) && i < len(s.Threads); i++ {
		user += s.Threads[i].UserNS
		sys += s.Threads[i].SysNS
	}
	return user, sys
}

// pidStat is /proc/<pid>/stat (tid 0) and task/<tid>/stat, as Linux's
// do_task_stat: 52 fields.
func pidStat(o *out, s *Snapshot, tid int32) {
	p := &s.Proc
	t := s.leader()
	whole := tid == 0
	pid := p.PID
	utime, stime, minflt, majflt := t.UserNS, t.SysNS, t.MinFlt, t.MajFlt
	if whole {
		utime, stime = cpuTimes(s)
		minflt, majflt = p.DeadMinFlt, p.DeadMajFlt
		for i := 0; i < int(s.NumThreads) && i < len(s.Threads); i++ {
			minflt += s.Threads[i].MinFlt
			majflt += s.Threads[i].MajFlt
		}
	} else {
		t = s.thread(tid)
		pid = tid
		utime, stime, minflt, majflt = t.UserNS, t.SysNS, t.MinFlt, t.MajFlt
	}
	o.sdec(int64(pid))
	o.str(" (")
	o.bytes(cstr(p.Comm[:]))
	o.str(") ")
	o.ch(t.State)
	for _, v := range [...]int32{p.PPID, p.PGID, p.SID, p.TTY, p.TPGID} {
		o.ch(' ')
		o.sdec(int64(v))
	}
	o.str(" 0 ") // flags
	o.dec(minflt)
	o.str(" 0 ")
	o.dec(majflt)
	o.str(" 0 ")
	o.dec(ticks(utime))
	o.ch(' ')
	o.dec(ticks(stime))
	o.str(" 0 0 20 0 ") // cutime cstime priority nice
	o.dec(uint64(s.NumThreads))
	o.str(" 0 ") // itrealvalue
	o.dec(ticks(t.StartNS))
	o.ch(' ')
	o.dec(p.VmSize)
	o.ch(' ')
	o.dec((p.RssAnon + p.RssFile + p.RssShmem) / PageSize)
	o.ch(' ')
	o.dec(p.Limits[RlimitRSS].Cur)
	o.ch(' ')
	o.dec(p.StartCode)
	o.ch(' ')
	o.dec(p.EndCode)
	o.ch(' ')
	o.dec(p.StartStack)
	o.str(" 0 0 ") // kstkesp kstkeip
	// The obsolete signal fields: the first 31 signals.
	o.dec(t.SigPending & 0x7fffffff)
	o.ch(' ')
	o.dec(t.SigBlocked & 0x7fffffff)
	o.ch(' ')
	o.dec(p.SigIgnored & 0x7fffffff)
	o.ch(' ')
	o.dec(p.SigCaught & 0x7fffffff)
	// wchan: whether it waits, for a thread or a one-thread process.
	if (!whole || s.NumThreads < 2) && t.State != 'R' {
		o.str(" 1")
	} else {
		o.str(" 0")
	}
	o.str(" 0 0 ") // nswap cnswap
	if whole || t.TID == p.PID {
		o.str("17") // SIGCHLD
	} else {
		o.str("-1")
	}
	o.ch(' ')
	o.sdec(int64(t.CPU))
	o.str(" 0 0 0 0 0 ") // rt_priority policy delayacct_blkio_ticks guest_time cguest_time
	for _, v := range [...]uint64{p.StartData, p.EndData, p.StartBrk, p.ArgStart, p.ArgEnd, p.EnvStart} {
		o.dec(v)
		o.ch(' ')
	}
	o.dec(p.EnvEnd)
	o.str(" 0\n") // exit_code
}

// stateName is a state letter as status's State line names it.
func stateName(c byte) string {
	switch c {
	case 'R':
		return "R (running)"
	case 'S':
		return "S (sleeping)"
	case 'D':
		return "D (disk sleep)"
	case 'T':
		return "T (stopped)"
	case 't':
		return "t (tracing stop)"
	case 'X':
		return "X (dead)"
	case 'Z':
		return "Z (zombie)"
	case 'P':
		return "P (parked)"
	case 'I':
		return "I (idle)"
	}
	return "R (running)"
}

// kb writes a status or smaps value: label, the bytes in kB right-aligned
// in 8 columns, " kB\n".
func (o *out) kb(label string, bytes uint64) {
	o.str(label)
	o.decw(bytes>>10, 8)
	o.str(" kB\n")
}

// status is /proc/<pid>/status and task/<tid>/status, as Linux 6.x's
// proc_pid_status (x86 and arm64 print the same lines).
func status(o *out, s *Snapshot, tid int32) {
	p := &s.Proc
	t := s.leader()
	pid := p.PID
	if tid != 0 {
		t = s.thread(tid)
		pid = tid
	}
	o.str("Name:\t")
	for _, c := range cstr(p.Comm[:]) { // escaped as seq_escape_str's ESCAPE_SPACE|ESCAPE_SPECIAL
		switch c {
		case '\n':
			o.str("\\n")
		case '\t':
			o.str("\\t")
		case '\\':
			o.str("\\\\")
		default:
			o.ch(c)
		}
	}
	o.str("\nUmask:\t")
	for sh := 9; sh >= 0; sh -= 3 {
		o.ch(byte('0' + p.Umask>>sh&7))
	}
	o.str("\nState:\t")
	o.str(stateName(t.State))
	o.str("\nTgid:\t")
	o.sdec(int64(p.PID))
	o.str("\nNgid:\t0\nPid:\t")
	o.sdec(int64(pid))
	o.str("\nPPid:\t")
	o.sdec(int64(p.PPID))
	o.str("\nTracerPid:\t0\nUid:")
	for i := 0; i < 4; i++ {
		o.ch('\t')
		o.dec(uint64(p.UID))
	}
	o.str("\nGid:")
	for i := 0; i < 4; i++ {
		o.ch('\t')
		o.dec(uint64(p.GID))
	}
	o.str("\nFDSize:\t")
	o.dec(uint64(p.FDSize))
	o.str("\nGroups:\t \nNStgid:\t")
	o.sdec(int64(p.PID))
	o.str("\nNSpid:\t")
	o.sdec(int64(pid))
	o.str("\nNSpgid:\t")
	o.sdec(int64(p.PGID))
	o.str("\nNSsid:\t")
	o.sdec(int64(p.SID))
	o.str("\nKthread:\t0\n")
	o.kb("VmPeak:\t", p.VmPeak)
	o.kb("VmSize:\t", p.VmSize)
	o.kb("VmLck:\t", p.VmLck)
	o.kb("VmPin:\t", p.VmPin)
	o.kb("VmHWM:\t", p.VmHWM)
	o.kb("VmRSS:\t", p.RssAnon+p.RssFile+p.RssShmem)
	o.kb("RssAnon:\t", p.RssAnon)
	o.kb("RssFile:\t", p.RssFile)
	o.kb("RssShmem:\t", p.RssShmem)
	o.kb("VmData:\t", p.VmData)
	o.kb("VmStk:\t", p.VmStk)
	o.kb("VmExe:\t", p.VmExe)
	o.kb("VmLib:\t", p.VmLib)
	o.kb("VmPTE:\t", p.VmPTE)
	o.kb("VmSwap:\t", p.VmSwap)
	o.kb("HugetlbPages:\t", 0)
	o.str("CoreDumping:\t0\nTHP_enabled:\t")
	if s.THPSize != 0 {
		o.ch('1')
	} else {
		o.ch('0')
	}
	o.str("\nuntag_mask:\t0xffffffffffffffff\nThreads:\t")
	o.dec(uint64(s.NumThreads))
	o.str("\nSigQ:\t")
	o.dec(p.SigQueued)
	o.ch('/')
	o.dec(p.Limits[RlimitSigPending].Cur)
	o.str("\nSigPnd:\t")
	o.hex(t.SigPending, 16)
	o.str("\nShdPnd:\t")
	o.hex(p.SigShared, 16)
	o.str("\nSigBlk:\t")
	o.hex(t.SigBlocked, 16)
	o.str("\nSigIgn:\t")
	o.hex(p.SigIgnored, 16)
	o.str("\nSigCgt:\t")
	o.hex(p.SigCaught, 16)
	o.str("\nCapInh:\t0000000000000000\nCapPrm:\t")
	o.hex(p.Caps, 16)
	o.str("\nCapEff:\t")
	o.hex(p.Caps, 16)
	o.str("\nCapBnd:\t")
	o.hex(p.Caps, 16)
	o.str("\nCapAmb:\t0000000000000000\nNoNewPrivs:\t")
	if p.NoNewPrivs {
		o.ch('1')
	} else {
		o.ch('0')
	}
	o.str("\nSeccomp:\t0\nSeccomp_filters:\t0\nSpeculation_Store_Bypass:\tvulnerable\nSpeculationIndirectBranch:\talways enabled\nCpus_allowed:\t")
	cpuMask(o, int(s.NumCPU))
	o.str("\nCpus_allowed_list:\t0")
	if s.NumCPU > 1 {
		o.ch('-')
		o.dec(uint64(s.NumCPU - 1))
	}
	o.str("\nMems_allowed:\t1\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t")
	o.dec(t.Voluntary)
	o.str("\nnonvoluntary_ctxt_switches:\t")
	o.dec(t.Involuntary)
	o.ch('\n')
}

// cpuMask writes the mask of CPUs 0..n-1 as Linux's "%*pb" with nr_cpu_ids
// n: comma-separated 32-bit chunks in hexadecimal, most significant first,
// the first one only as wide as its bits need.
func cpuMask(o *out, n int) {
	if n < 1 {
		n = 1
	}
	chunk := n % 32
	if chunk == 0 {
		chunk = 32
	}
	for i := (n+31)/32*32 - 32; i >= 0; i -= 32 {
		bits := n - i // CPUs in this and lower chunks
		if bits > chunk {
			bits = chunk
		}
		var v uint64 = 1<<uint(bits) - 1
		o.hex(v, (chunk+3)/4)
		if i > 0 {
			o.ch(',')
		}
		chunk = 32
	}
}

var limitNames = [NumLimits]struct{ name, unit string }{
	{"Max cpu time", "seconds"},
	{"Max file size", "bytes"},
	{"Max data size", "bytes"},
	{"Max stack size", "bytes"},
	{"Max core file size", "bytes"},
	{"Max resident set", "bytes"},
	{"Max processes", "processes"},
	{"Max open files", "files"},
	{"Max locked memory", "bytes"},
	{"Max address space", "bytes"},
	{"Max file locks", "locks"},
	{"Max pending signals", "signals"},
	{"Max msgqueue size", "bytes"},
	{"Max nice priority", ""},
	{"Max realtime priority", ""},
	{"Max realtime timeout", "us"},
}

// limits is /proc/<pid>/limits, as proc_pid_limits.
func limits(o *out, s *Snapshot) {
	o.str("Limit                     Soft Limit           Hard Limit           Units     \n")
	for i, l := range s.Proc.Limits {
		o.strl(limitNames[i].name, 25)
		o.ch(' ')
		for _, v := range [2]uint64{l.Cur, l.Max} {
			if v == Inf {
				o.strl("unlimited", 20)
			} else {
				o.decl(v, 20)
			}
			o.ch(' ')
		}
		if u := limitNames[i].unit; u != "" {
			o.strl(u, 10)
		}
		o.ch('\n')
	}
}

// vmaPrefix writes a maps line's fields before the name, as
// show_vma_header_prefix, and returns where the line started.
func vmaPrefix(o *out, start, end uint64, prot uint8, shared bool, off uint64, major, minor uint32, ino uint64) int {
	line := o.n
	o.hex(start, 8)
	o.ch('-')
	o.hex(end, 8)
	o.ch(' ')
	for i, c := range [3]byte{'r', 'w', 'x'} {
		if prot&(1<<i) != 0 {
			o.ch(c)
		} else {
			o.ch('-')
		}
	}
	if shared {
		o.ch('s')
	} else {
		o.ch('p')
	}
	o.ch(' ')
	o.hex(off, 8)
	o.ch(' ')
	o.hex(uint64(major), 2)
	o.ch(':')
	o.hex(uint64(minor), 2)
	o.ch(' ')
	o.dec(ino)
	o.ch(' ')
	return line
}

// mapsNameCol is the column a maps line's name starts at: seq_setwidth's
// 25 + 6 * sizeof(void *) - 1, then seq_pad's space.
const mapsNameCol = 25 + 6*8 - 1 + 1

// maps writes one line of /proc/<pid>/maps, as show_map_vma.
func maps(o *out, s *Snapshot, a *Area) {
	line := vmaPrefix(o, a.Start, a.End, a.Prot, a.Shared, a.Off, a.Major, a.Minor, a.Ino)
	if name := s.Bytes(a.Name); len(name) > 0 {
		o.spaces(line + mapsNameCol - 1 - o.n)
		o.ch(' ')
		o.escaped(name, "\n")
	}
	o.ch('\n')
}

// smapsRollup is /proc/<pid>/smaps_rollup, as show_smaps_rollup, from the
// process's totals: one process, so every page is private and Pss is Rss.
func smapsRollup(o *out, s *Snapshot) {
	p := &s.Proc
	var start, end uint64
	if s.NumAreas > 0 {
		start, end = s.Areas[0].Start, s.Areas[s.NumAreas-1].End
	}
	line := vmaPrefix(o, start, end, 0, false, 0, 0, 0, 0)
	o.spaces(line + mapsNameCol - 1 - o.n)
	o.str(" [rollup]\n")
	rss := p.RssAnon + p.RssFile + p.RssShmem
	dirty := p.RssAnon + p.RssShmem
	o.kb("Rss:            ", rss)
	o.kb("Pss:            ", rss)
	o.kb("Pss_Dirty:      ", dirty)
	o.kb("Pss_Anon:       ", p.RssAnon)
	o.kb("Pss_File:       ", p.RssFile)
	o.kb("Pss_Shmem:      ", p.RssShmem)
	o.kb("Shared_Clean:   ", 0)
	o.kb("Shared_Dirty:   ", 0)
	o.kb("Private_Clean:  ", p.RssFile)
	o.kb("Private_Dirty:  ", dirty)
	o.kb("Referenced:     ", rss)
	o.kb("Anonymous:      ", p.RssAnon)
	o.kb("KSM:            ", 0)
	o.kb("LazyFree:       ", 0)
	o.kb("AnonHugePages:  ", 0)
	o.kb("ShmemPmdMapped: ", 0)
	o.kb("FilePmdMapped:  ", 0)
	o.kb("Shared_Hugetlb: ", 0)
	o.str("Private_Hugetlb: ")
	o.decw(0, 7)
	o.str(" kB\n")
	o.kb("Swap:           ", p.VmSwap)
	o.kb("SwapPss:        ", p.VmSwap)
	o.kb("Locked:         ", p.VmLck)
}

const mangle = " \t\n\\"

// mntOpts writes the per-mount options after rw/ro, as show_mnt_opts.
func mntOpts(o *out, f uint32) {
	for _, m := range [...]struct {
		bit  uint32
		name string
	}{{MountNoSuid, ",nosuid"}, {MountNoDev, ",nodev"}, {MountNoExec, ",noexec"}, {MountNoAtime, ",noatime"}, {MountNoDirAtime, ",nodiratime"}, {MountRelAtime, ",relatime"}} {
		if f&m.bit != 0 {
			o.str(m.name)
		}
	}
}

// sbOpts writes the super block's options after rw/ro: show_sb_opts's and
// the file system's own.
func sbOpts(o *out, s *Snapshot, m *Mount) {
	if m.Flags&MountSync != 0 {
		o.str(",sync")
	}
	if opts := s.Bytes(m.Opts); len(opts) > 0 {
		o.ch(',')
		o.bytes(opts)
	}
}

func mountSource(o *out, s *Snapshot, m *Mount) {
	if src := s.Bytes(m.Source); len(src) > 0 {
		o.escaped(src, mangle)
	} else {
		o.str("none")
	}
}

// mounts writes one line of /proc/<pid>/mounts, as show_vfsmnt.
func mounts(o *out, s *Snapshot, m *Mount) {
	mountSource(o, s, m)
	o.ch(' ')
	o.escaped(s.Bytes(m.Point), mangle)
	o.ch(' ')
	o.bytes(s.Bytes(m.Type))
	if m.Flags&(MountRO|MountSuperRO) != 0 {
		o.str(" ro")
	} else {
		o.str(" rw")
	}
	if m.Flags&MountSync != 0 {
		o.str(",sync")
	}
	mntOpts(o, m.Flags)
	if opts := s.Bytes(m.Opts); len(opts) > 0 {
		o.ch(',')
		o.bytes(opts)
	}
	o.str(" 0 0\n")
}

// mountinfo writes one line of /proc/<pid>/mountinfo, as show_mountinfo.
func mountinfo(o *out, s *Snapshot, m *Mount) {
	o.sdec(int64(m.ID))
	o.ch(' ')
	o.sdec(int64(m.Parent))
	o.ch(' ')
	o.dec(uint64(m.Major))
	o.ch(':')
	o.dec(uint64(m.Minor))
	o.ch(' ')
	if root := s.Bytes(m.Root); len(root) > 0 {
		o.escaped(root, mangle)
	} else {
		o.ch('/')
	}
	o.ch(' ')
	o.escaped(s.Bytes(m.Point), mangle)
	if m.Flags&MountRO != 0 {
		o.str(" ro")
	} else {
		o.str(" rw")
	}
	mntOpts(o, m.Flags)
	o.str(" - ")
	o.bytes(s.Bytes(m.Type))
	o.ch(' ')
	mountSource(o, s, m)
	if m.Flags&MountSuperRO != 0 {
		o.str(" ro")
	} else {
		o.str(" rw")
	}
	sbOpts(o, s, m)
	o.ch('\n')
}

// Open flags fdinfo adds (octal, Linux's own values, not x/sys/unix's:
// O_LARGEFILE is 0 there on 64-bit).
const (
	oCloexec        = 0o2000000
	oLargefileAMD64 = 0o100000
	oLargefileARM64 = 0o400000
)

// fdinfo is /proc/<pid>/fdinfo/<n>, as seq_show: the file's flags with
// O_CLOEXEC if the descriptor has it, and O_LARGEFILE for files opened by
// path, which Linux forces on 64-bit.
func fdinfo(o *out, s *Snapshot, f *FD) {
	fl := uint64(f.Flags)
	if f.CloExec {
		fl |= oCloexec
	}
	if f.Kind == FDFile || f.Kind == FDConsole {
		if s.Arch == ArchARM64 {
			fl |= oLargefileARM64
		} else {
			fl |= oLargefileAMD64
		}
	}
	o.str("pos:\t")
	o.sdec(f.Pos)
	o.str("\nflags:\t0")
	o.oct(fl)
	o.str("\nmnt_id:\t")
	o.sdec(int64(f.MntID))
	o.str("\nino:\t")
	o.dec(f.Ino)
	o.ch('\n')
}
