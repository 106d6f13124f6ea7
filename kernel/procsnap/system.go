package procsnap

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/procfs"
	"yolk/sched"
)

// fillAreas fills the areas: the image's (its first segment with its
// headers and text, its data, its BSS), then the address space's.
func (st *State[E]) fillAreas(s *procfs.Snapshot) {
	st.nwant = 0
	lo, ro, bss, end := st.env.Image()
	var exe procfs.Str
	if p := st.env.Exe(); len(p) > 0 {
		exe = s.Put(p)
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
	top, _ := st.env.Stack()
	first := s.NumAreas
	mm.Areas(func(a mm.Area) bool {
		ar := procfs.Area{Start: uint64(a.Start), End: uint64(a.End), Off: uint64(a.Off), Prot: uint8(a.Prot), Shared: a.Shared}
		switch {
		case a.File > 0: // the in-memory file system's inode File-1
			ar.Ino, ar.Minor = uint64(a.File), fs.Dev
		case a.File < 0: // a share's file; named below (Env.ShareArea)
			ar.Ino = uint64(-int64(a.File))
		}
		if a.Start < top && a.End >= top {
			ar.Name = stack
		}
		return s.AddArea(ar)
	})
	for i := first; i < s.NumAreas; i++ {
		ar := &s.Areas[i]
		if ar.Ino != 0 && ar.Minor == fs.Dev {
			st.WantIno(ar.Ino)
		}
	}
	st.fsNames(s)
	for i := first; i < s.NumAreas; i++ {
		ar := &s.Areas[i]
		switch {
		case ar.Ino != 0 && ar.Minor == fs.Dev:
			ar.Name = st.pathOf(s, ar.Ino)
		case ar.Ino != 0:
			st.env.ShareArea(s, ar)
		}
	}
}

// fillMounts fills the mount table.
func (st *State[E]) fillMounts(s *procfs.Snapshot) {
	const pseudo = procfs.MountNoSuid | procfs.MountNoDev | procfs.MountNoExec | procfs.MountRelAtime
	add := func(id, parent int32, major, minor uint32, root, point, typ, src, opts string, flags uint32) {
		s.AddMount(procfs.Mount{ID: id, Parent: parent, Major: major, Minor: minor, Flags: flags,
			Root: s.PutString(root), Point: s.PutString(point), Type: s.PutString(typ), Source: s.PutString(src), Opts: s.PutString(opts)})
	}
	rootDisk := -1 // a disk is the root (yolk.root): listed first, as the root
	for i := 0; rootDisk < 0; i++ {
		_, _, point, _, on, ok := st.env.Disk(i)
		if !ok {
			break
		}
		if on && len(point) == 1 {
			rootDisk = i
		}
	}
	if rootDisk < 0 {
		add(MntRoot, MntRoot, 0, fs.Dev, "/", "/", "tmpfs", "rootfs", "mode=755", procfs.MountRelAtime)
	} else {
		st.addDisk(s, rootDisk, MntRoot)
	}
	add(MntDev, MntRoot, 0, fs.Dev, "/dev", "/dev", "tmpfs", "rootfs", "mode=755", procfs.MountNoSuid|procfs.MountRelAtime)
	if rootDisk >= 0 {
		add(MntTmp, MntRoot, 0, fs.Dev, "/tmp", "/tmp", "tmpfs", "rootfs", "mode=1777", procfs.MountNoSuid|procfs.MountNoDev|procfs.MountRelAtime)
	}
	add(MntProc, MntRoot, 0, fs.Dev+1, "/", "/proc", "proc", "proc", "", pseudo)
	add(MntSys, MntRoot, 0, fs.Dev+2, "/", "/sys", "sysfs", "sysfs", "", pseudo)
	add(MntCgroup, MntSys, 0, fs.Dev+3, "/", "/sys/fs/cgroup", "cgroup2", "cgroup2", "nsdelegate", pseudo)
	for i := 0; ; i++ {
		dev, point, tag, ok := st.env.Share(i)
		if !ok {
			break
		}
		if dev < 0 {
			continue // its device was not found: the in-memory directory is all there is
		}
		s.AddMount(procfs.Mount{ID: int32(MntShare + i), Parent: MntRoot, Major: 0x90, Minor: uint32(dev),
			Root: s.PutString("/"), Point: s.Put(point), Type: s.PutString("9p"), Source: s.Put(tag),
			Opts: s.PutString("trans=virtio")})
	}
	for i := 0; ; i++ {
		_, _, _, _, on, ok := st.env.Disk(i)
		if !ok {
			break
		}
		if on && i != rootDisk { // else no file system there: only its mount point, in memory
			st.addDisk(s, i, int32(MntDisk+i))
		}
	}
}

// addDisk lists disk mount i's file system as mount id.
func (st *State[E]) addDisk(s *procfs.Snapshot, i int, id int32) {
	rdev, name, point, ro, _, _ := st.env.Disk(i)
	var src [32]byte
	n := copy(src[:], "/dev/")
	n += copy(src[n:], name)
	flags := uint32(procfs.MountRelAtime)
	if ro {
		flags |= procfs.MountRO | procfs.MountSuperRO
	}
	s.AddMount(procfs.Mount{ID: id, Parent: MntRoot, Major: unix.Major(rdev), Minor: unix.Minor(rdev),
		Flags: flags, Root: s.PutString("/"), Point: s.Put(point), Type: s.PutString("ext4"), Source: s.Put(src[:n])})
}

// fillSys fills the system's numbers: CPU times, uptime, load, memory.
func (st *State[E]) fillSys(s *procfs.Snapshot) {
	now := st.env.Now()
	s.UptimeNS = uint64(now)
	s.BootTime = st.env.WallBase() / 1e9
	s.Ctxt = 0
	for i := 0; i < int(s.NumCPU); i++ {
		c := sched.CPUAt(i)
		idle := c.IdleTask().CPUTime(now)
		s.CPUs[i].Idle = uint64(idle)
		s.CPUs[i].User = uint64(max(now-idle, 0))
		s.Ctxt += c.Switches()
	}
	s.Running = st.threads(s, false)
	s.Blocked = 0
	s.LastPID = sched.LastTID()
	s.Forks = uint64(s.LastPID)
	st.loadAvg(now, uint64(s.Running))
	s.Load = st.load
	s.NumIRQs = 0
	s.NetInOctets, s.NetOutOctets = 0, 0

	ms := mm.ReadStats()
	filePages := st.env.FilePages()
	total, free := uint64(ms.FramesAll)*mm.PageSize, uint64(ms.FramesFree)*mm.PageSize
	anon, shmem := uint64(ms.PagesMapped)*mm.PageSize, uint64(filePages)*mm.PageSize
	a := st.areaSums()
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
	fillArchMem(s, total)

	s.CPUQuotaUS, s.CPUPeriodUS = 0, 0 // cpu.max: "max 100000"
	s.MemoryMax, s.MemoryCur = 0, total-free
}

// loadAvg brings the load average up to now: one step of Linux's
// calc_load per 5-second period since the last read, each with the
// threads active now — what Linux's NO_HZ catch-up (calc_global_nohz)
// does for the periods no tick sampled. So the average is sampled when
// read, not every 5 s: between reads it follows the activity at the
// reads (the reader itself is always running).
func (st *State[E]) loadAvg(now int64, active uint64) {
	n := (now - st.loadAt) / procfs.LoadFreqNS
	if n <= 0 {
		return
	}
	st.loadAt += n * procfs.LoadFreqNS
	if n > 1000 { // the old average has decayed to nothing
		for i := range st.load {
			st.load[i] = active * procfs.Fixed1
		}
		return
	}
	for ; n > 0; n-- {
		procfs.UpdateLoad(&st.load, active)
	}
}

// fillNet fills the network interfaces (/proc/net/igmp, igmp6).
func (st *State[E]) fillNet(s *procfs.Snapshot) {
	for i := 0; i < procfs.MaxIfaces && st.env.Iface(i, &st.ifc); i++ {
		p := &st.ifc
		f := procfs.Iface{Index: p.Index, Flags: p.Flags}
		copy(f.Name[:], p.Name[:p.NameLen])
		for j := 0; j < p.NAddrs && j < len(p.Addrs); j++ {
			if a := &p.Addrs[j]; a.Family == unix.AF_INET6 && int(f.NAddr6) < len(f.Addr6) {
				f.Addr6[f.NAddr6] = a.Addr
				f.NAddr6++
			}
		}
		s.AddIface(&f)
	}
}
