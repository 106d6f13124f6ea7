package procfs_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/procfs"
)

// at resolves a slash-separated path from root with Lookup (no links
// followed).
func at(t *testing.T, s *procfs.Snapshot, root procfs.Node, path string) procfs.Node {
	t.Helper()
	n := root
	if path == "" {
		return n
	}
	for _, c := range strings.Split(path, "/") {
		m, ok := procfs.Lookup(n, []byte(c), s)
		if !ok {
			t.Fatalf("lookup %q: no %q", path, c)
		}
		n = m
	}
	return n
}

// render renders the file at path under root.
func render(t *testing.T, s *procfs.Snapshot, root procfs.Node, path string) string {
	t.Helper()
	buf := make([]byte, 1<<20)
	n, ok := procfs.Render(at(t, s, root, path), s, buf)
	if !ok {
		t.Fatalf("render %q: not a file", path)
	}
	if n > len(buf) {
		t.Fatalf("render %q: %d bytes, more than the buffer", path, n)
	}
	return string(buf[:n])
}

func link(t *testing.T, s *procfs.Snapshot, root procfs.Node, path string) string {
	t.Helper()
	buf := make([]byte, 4096)
	n, ok := procfs.Readlink(at(t, s, root, path), s, buf)
	if !ok {
		t.Fatalf("readlink %q: not a link", path)
	}
	return string(buf[:n])
}

// fake is a snapshot with every part filled: 2 CPUs, 3 threads, open
// files of every kind, areas, mounts.
func fake() *procfs.Snapshot {
	s := new(procfs.Snapshot)
	s.Arch = procfs.ArchAMD64
	procfs.SetName(&s.Sysname, "Linux")
	procfs.SetName(&s.Release, "6.1.0-yolk")
	procfs.SetName(&s.Version, "#1 yolk")
	procfs.SetName(&s.Hostname, "yolk")
	procfs.SetName(&s.BuiltBy, "yolk@yolk")
	procfs.SetName(&s.Compiler, "go1.26.3")
	for _, fs := range []string{"sysfs", "tmpfs", "proc", "cgroup2", "pipefs", "sockfs", "9p"} {
		s.AddFS(fs, true)
	}
	s.AddFS("ext4", false)
	m := &s.Model
	copy(m.Vendor[:], "GenuineIntel")
	copy(m.Name[:], "QEMU Virtual CPU version 2.5+")
	m.Family, m.Model, m.Stepping, m.Microcode = 6, 6, 3, 1
	m.KHz, m.CacheKB, m.CPUIDLevel, m.ClflushSize = 2599998, 16384, 13, 64
	m.PhysBits, m.VirtBits = 40, 48
	m.Caps[0] = 0x078bfbfd
	m.Caps[4] = 0x80a02001
	m.HWCap = 0x1fb
	s.NumCPU = 2
	for i := range 2 {
		s.CPUs[i] = procfs.CPU{User: 1234e7, System: 567e7, Idle: 89012e7, IRQ: 3e7, APICID: uint32(i), CoreID: uint32(i), MIDR: 0x410fd034}
	}
	s.BootTime = 1796170960
	s.UptimeNS = 75926_130_000_000
	procfs.UpdateLoad(&s.Load, 1)
	s.Running, s.LastPID, s.Ctxt, s.Forks = 1, 9, 123456, 9
	s.NumIRQs = 4
	s.IRQs[1], s.IRQs[3] = 100, 7
	s.Mem[procfs.MemTotal] = 512 << 20
	s.Mem[procfs.MemFree] = 400 << 20
	s.Mem[procfs.MemAvailable] = 410 << 20
	s.Mem[procfs.MemHugepagesize] = 2 << 20
	s.Mem[procfs.MemVmallocTotal] = 34359738367 << 10
	s.Somaxconn = 4096
	s.THPSize = 2 << 20
	s.CPUQuotaUS, s.CPUPeriodUS = 150000, 100000
	s.MemoryMax, s.MemoryCur = 256<<20, 12<<20
	s.NetInOctets, s.NetOutOctets = 1000, 2000

	p := &s.Proc
	p.PID, p.PPID, p.PGID, p.SID, p.TPGID = 1, 0, 1, 1, -1
	copy(p.Comm[:], "hello")
	p.Umask, p.Caps, p.FDSize = 0o022, procfs.CapFull, 1024
	p.DeadUserNS, p.DeadSysNS = 5e7, 1e7
	p.SigCaught = 0xfffffffe7fc1feff
	for i := range p.Limits {
		p.Limits[i] = procfs.Rlimit{Cur: procfs.Inf, Max: procfs.Inf}
	}
	p.Limits[procfs.RlimitNoFile] = procfs.Rlimit{Cur: 1024, Max: 1024}
	p.Limits[procfs.RlimitStack] = procfs.Rlimit{Cur: 8 << 20, Max: procfs.Inf}
	p.Limits[procfs.RlimitCore] = procfs.Rlimit{Cur: 0, Max: procfs.Inf}
	p.Limits[procfs.RlimitSigPending] = procfs.Rlimit{Cur: 1024, Max: 1024}
	p.Limits[procfs.RlimitNice] = procfs.Rlimit{}
	p.Limits[procfs.RlimitRTPrio] = procfs.Rlimit{}
	p.VmPeak, p.VmSize, p.VmHWM = 800<<20, 700<<20, 9<<20
	p.RssAnon, p.RssFile = 6<<20, 2<<20
	p.VmData, p.VmStk, p.VmExe, p.VmPTE = 40<<20, 132<<10, 1<<20, 64<<10
	p.StartCode, p.EndCode, p.StartStack = 0x400000, 0x500000, 0x7fffffffe000
	p.StartData, p.EndData, p.StartBrk = 0x600000, 0x610000, 0x620000
	p.ArgStart, p.ArgEnd, p.EnvStart, p.EnvEnd = 0x7fffffffef00, 0x7fffffffef10, 0x7fffffffef10, 0x7fffffffef40
	p.RChar, p.WChar, p.SyscR, p.SyscW = 10, 20, 1, 2
	auxv := []uint64{6, 4096, 25, 0x7fffffffef50, 0, 0}
	copy(p.Auxv[:], auxv)
	p.NumAuxv = int32(len(auxv))
	s.CurrentTID = 2

	fill(s)
	return s
}

// fill does what the kernel does before a read: Reset, then the lists
// and the pool.
func fill(s *procfs.Snapshot) {
	s.Reset()
	p := &s.Proc
	p.Cmdline = s.PutString("/hello\x00-v\x00")
	p.Environ = s.PutString("HOME=/\x00PATH=/bin\x00")
	p.Exe = s.PutString("/hello")
	p.Cwd = s.PutString("/tmp")
	for i := range 3 {
		st := byte('S')
		if i == 0 {
			st = 'R'
		}
		s.AddThread(procfs.Thread{TID: int32(1 + i), State: st, CPU: int32(i % 2), UserNS: 3e9 + uint64(i), SysNS: 1e9, StartNS: 1e8, Voluntary: 10, Involuntary: 2, MinFlt: 100})
	}
	s.AddFD(procfs.FD{FD: 0, Kind: procfs.FDConsole, Flags: 2, MntID: 3, Ino: 5})
	s.AddFD(procfs.FD{FD: 1, Kind: procfs.FDConsole, Flags: 2, MntID: 3, Ino: 5})
	s.AddFD(procfs.FD{FD: 2, Kind: procfs.FDConsole, Flags: 2, MntID: 3, Ino: 5})
	s.AddFD(procfs.FD{FD: 3, Kind: procfs.FDEpoll, Flags: 2, CloExec: true, MntID: 9, Ino: 1})
	s.AddFD(procfs.FD{FD: 4, Kind: procfs.FDEventfd, Flags: 2 | 0o4000, CloExec: true, MntID: 9, Ino: 1})
	s.AddFD(procfs.FD{FD: 5, Kind: procfs.FDPipe, Flags: 0, MntID: 10, Ino: 4711})
	s.AddFD(procfs.FD{FD: 6, Kind: procfs.FDPipe, Flags: 1, MntID: 10, Ino: 4711})
	s.AddFD(procfs.FD{FD: 7, Kind: procfs.FDSocket, Flags: 2, MntID: 11, Ino: 4712})
	s.AddFD(procfs.FD{FD: 8, Kind: procfs.FDFile, Flags: 0o102, Pos: 42, MntID: 1, Ino: 77, Path: s.PutString("/tmp/a file")})
	s.AddArea(procfs.Area{Start: 0x400000, End: 0x500000, Prot: procfs.ProtRead | procfs.ProtExec, Major: 0, Minor: 0x16, Ino: 12, Name: s.PutString("/hello")})
	s.AddArea(procfs.Area{Start: 0x600000, End: 0x610000, Prot: procfs.ProtRead | procfs.ProtWrite, Off: 0x100000, Major: 0, Minor: 0x16, Ino: 12, Name: s.PutString("/hello")})
	s.AddArea(procfs.Area{Start: 0xc000000000, End: 0xc000400000, Prot: procfs.ProtRead | procfs.ProtWrite})
	s.AddArea(procfs.Area{Start: 0x7ffffffde000, End: 0x7ffffffff000, Prot: procfs.ProtRead | procfs.ProtWrite, Name: s.PutString("[stack]")})
	mount := func(id, parent int32, minor uint32, point, typ, src, opts string, flags uint32) {
		s.AddMount(procfs.Mount{ID: id, Parent: parent, Minor: minor, Flags: flags, Point: s.PutString(point), Type: s.PutString(typ), Source: s.PutString(src), Opts: s.PutString(opts)})
	}
	mount(1, 1, 0x16, "/", "tmpfs", "rootfs", "size=524288k,mode=755", procfs.MountRelAtime)
	mount(2, 1, 0x17, "/proc", "proc", "proc", "", procfs.MountNoSuid|procfs.MountNoDev|procfs.MountNoExec|procfs.MountRelAtime)
	mount(3, 1, 0x18, "/sys", "sysfs", "sysfs", "", procfs.MountNoSuid|procfs.MountNoDev|procfs.MountNoExec|procfs.MountRelAtime)
	mount(4, 3, 0x19, "/sys/fs/cgroup", "cgroup2", "cgroup2", "nsdelegate", procfs.MountNoSuid|procfs.MountNoDev|procfs.MountNoExec|procfs.MountRelAtime)
	mount(5, 1, 0x1a, "/go root", "9p", "share0", "trans=virtio", procfs.MountRO|procfs.MountSuperRO)
	lo := procfs.Iface{Index: 1, Flags: unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING, NAddr6: 1}
	copy(lo.Name[:], "lo")
	lo.Addr6[0] = [16]byte{15: 1}
	s.AddIface(&lo)
	eth := procfs.Iface{Index: 2, Flags: unix.IFF_UP | unix.IFF_BROADCAST | unix.IFF_RUNNING | unix.IFF_MULTICAST, NAddr6: 2}
	copy(eth.Name[:], "eth0")
	eth.Addr6[0] = [16]byte{0: 0xfd, 13: 0xab, 14: 0xcd, 15: 0xef}
	eth.Addr6[1] = [16]byte{0: 0xfe, 1: 0x80, 13: 0xab, 14: 0xcd, 15: 0xef}
	s.AddIface(&eth)
}

func readHost(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("host: %v", err)
	}
	return string(b)
}

// sameLines compares a rendering with Linux's text line by line; lines
// whose first field is in skip may differ.
func sameLines(t *testing.T, what, mine, linux string, skip ...string) {
	t.Helper()
	ml, ll := strings.Split(mine, "\n"), strings.Split(linux, "\n")
	if len(ml) != len(ll) {
		t.Errorf("%s: %d lines, Linux %d\nmine:\n%s\nLinux:\n%s", what, len(ml), len(ll), mine, linux)
		return
	}
next:
	for i := range ml {
		if ml[i] == ll[i] {
			continue
		}
		for _, k := range skip {
			if strings.HasPrefix(ll[i], k) && strings.HasPrefix(ml[i], k) {
				continue next
			}
		}
		t.Errorf("%s line %d:\nmine:  %q\nLinux: %q", what, i+1, ml[i], ll[i])
	}
}
