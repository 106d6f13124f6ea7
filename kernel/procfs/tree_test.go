package procfs_test

import (
	"runtime"
	"strings"
	"testing"

	"yolk/kernel/procfs"
)

func TestTree(t *testing.T) {
	s := fake()
	for _, bad := range []string{"01", "2", "1/task/4", "1/task/01", "1/fd/9", "1/fd/09", "1/task/2/task", "nope", "1/stat/x"} {
		n := procfs.ProcRoot
		ok := true
		for _, c := range strings.Split(bad, "/") {
			if n, ok = procfs.Lookup(n, []byte(c), s); !ok {
				break
			}
		}
		if ok {
			t.Errorf("%s: found", bad)
		}
	}
	// A thread's directory has the process's files but task/.
	list := func(path string) string {
		var names []string
		name := make([]byte, 64)
		for i := 0; ; i++ {
			_, n, ok := procfs.ReadDir(at(t, s, procfs.ProcRoot, path), s, i, name)
			if !ok {
				return strings.Join(names, " ")
			}
			names = append(names, string(name[:n]))
		}
	}
	if p, th := list("1"), list("1/task/2"); strings.Replace(p, "task ", "", 1) != th {
		t.Errorf("process dir %q, thread dir %q", p, th)
	}
	if l := list("1/fd"); l != "0 1 2 3 4 5 6 7 8" {
		t.Errorf("fd/: %q", l)
	}
	if l := list(""); !strings.HasSuffix(l, " sys 1") || !strings.HasPrefix(l, "self thread-self meminfo") {
		t.Errorf("/proc: %q", l)
	}
	for path, mode := range map[string]uint32{"": 0o40555, "self": 0o120777, "1": 0o40555, "1/fd": 0o40500, "1/environ": 0o100400,
		"1/fd/5": 0o120500, "1/fd/6": 0o120300, "1/fd/8": 0o120700, "1/task/3/fdinfo/8": 0o100444, "meminfo": 0o100444} {
		if m := procfs.Mode(at(t, s, procfs.ProcRoot, path), s); m != mode {
			t.Errorf("%s: mode %o, want %o", path, m, mode)
		}
	}
	if procfs.Ino(procfs.ProcRoot) != 1 || procfs.Ino(procfs.SysRoot) != 1 || procfs.Parent(procfs.ProcRoot) != procfs.ProcRoot {
		t.Error("roots")
	}
	if p := procfs.Parent(at(t, s, procfs.ProcRoot, "1/task/2/fd/8")); p != at(t, s, procfs.ProcRoot, "1/task/2/fd") {
		t.Errorf("parent of a thread's fd")
	}

	// Nodes outlive what they name: a closed descriptor, an exited thread.
	fd8, th3 := at(t, s, procfs.ProcRoot, "1/fd/8"), at(t, s, procfs.ProcRoot, "1/task/3/stat")
	s.NumFDs--
	s.NumThreads--
	if procfs.Valid(fd8, s) || procfs.Valid(th3, s) || procfs.Mode(fd8, s) != 0 {
		t.Error("stale nodes valid")
	}
	if _, ok := procfs.Render(th3, s, make([]byte, 100)); ok {
		t.Error("stale node rendered")
	}
	s.Proc.Exe = procfs.Str{}
	if _, ok := procfs.Readlink(at(t, s, procfs.ProcRoot, "1/exe"), s, make([]byte, 100)); ok {
		t.Error("exe without a path")
	}

	// A buffer too small: the length of the whole file, the part that fits.
	s = fake()
	whole := render(t, s, procfs.ProcRoot, "1/status")
	buf := make([]byte, 100)
	if n, ok := procfs.Render(at(t, s, procfs.ProcRoot, "1/status"), s, buf); !ok || n != len(whole) || string(buf) != whole[:100] {
		t.Errorf("short buffer: %d, want %d", n, len(whole))
	}
}

// TestARM64 checks arm64's formats against Linux's on QEMU's virt
// (cortex-a57, Linux 6.1).
func TestARM64(t *testing.T) {
	s := fake()
	s.Arch = procfs.ArchARM64
	s.NumCPU = 1
	s.CPUs[0].MIDR = 0x411fd072
	s.Model.HWCap = 0x8ff // fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid
	s.Model.BogoMIPS = 62_500_000 / 5000
	want := "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd07\nCPU revision\t: 2\n\n"
	if got := render(t, s, procfs.ProcRoot, "cpuinfo"); got != want {
		t.Errorf("cpuinfo:\n%q\nwant\n%q", got, want)
	}
	if m := render(t, s, procfs.ProcRoot, "meminfo"); strings.Contains(m, "DirectMap") || !strings.HasSuffix(m, "Hugetlb:               0 kB\n") {
		t.Errorf("meminfo's end:\n%s", m[len(m)-100:])
	}
	// O_LARGEFILE is 0400000 on arm64.
	if got := statusMap(render(t, s, procfs.ProcRoot, "1/fdinfo/8"))["flags"]; got != "0400102" {
		t.Errorf("fdinfo flags %s", got)
	}
}

// TestXCR0 checks that features the kernel's XCR0 does not enable are
// not named, with those that depend on them.
func TestXCR0(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("amd64")
	}
	var m procfs.CPUModel
	m.ReadCPUID(hostCPUID, 0)
	s := fake()
	s.Model = m
	flags := statusMap(strings.ReplaceAll(render(t, s, procfs.ProcRoot, "cpuinfo"), "\t", ""))["flags"]
	for _, f := range strings.Fields(flags) {
		// xsaveerptr (AMD: FXSAVE and XSAVE save the error pointers)
		// needs no XCR0 state.
		if strings.HasPrefix(f, "avx") || strings.HasPrefix(f, "amx") || strings.HasPrefix(f, "xsave") && f != "xsaveerptr" || f == "fma" || f == "f16c" || f == "vaes" || f == "vpclmulqdq" {
			t.Errorf("XCR0 0: %s named", f)
		}
	}
	if !strings.Contains(" "+flags+" ", " sse4_2 ") || !strings.Contains(" "+flags+" ", " cpuid ") {
		t.Errorf("flags %q", flags)
	}
}

// strip clears the parts of a snapshot not in keep, as a kernel that
// fills only what Needs names leaves them.
func strip(s *procfs.Snapshot, keep procfs.Part) {
	if keep&procfs.PartProc == 0 {
		p := &s.Proc
		s.Proc = procfs.Process{Cmdline: p.Cmdline, Environ: p.Environ, Exe: p.Exe, Cwd: p.Cwd}
		s.NumThreads, s.CurrentTID = 0, 0
	}
	if keep&procfs.PartArgs == 0 {
		s.Proc.Cmdline, s.Proc.Environ = procfs.Str{}, procfs.Str{}
	}
	if keep&procfs.PartPaths == 0 {
		s.Proc.Exe, s.Proc.Cwd = procfs.Str{}, procfs.Str{}
	}
	if keep&procfs.PartFDs == 0 {
		s.NumFDs = 0
	}
	if keep&procfs.PartAreas == 0 {
		s.NumAreas = 0
	}
	if keep&procfs.PartMounts == 0 {
		s.NumMounts = 0
	}
	if keep&procfs.PartSys == 0 {
		for i := range s.CPUs {
			s.CPUs[i] = procfs.CPU{APICID: s.CPUs[i].APICID, CoreID: s.CPUs[i].CoreID, MIDR: s.CPUs[i].MIDR}
		}
		s.UptimeNS, s.Load, s.Running, s.Blocked, s.LastPID, s.Ctxt, s.Forks = 0, [3]uint64{}, 0, 0, 0, 0, 0
		s.IRQs, s.NumIRQs, s.Mem, s.Somaxconn = [procfs.MaxIRQs]uint64{}, 0, [procfs.NumMem]uint64{}, 0
		s.CPUQuotaUS, s.CPUPeriodUS, s.MemoryMax, s.MemoryCur, s.NetInOctets, s.NetOutOctets = 0, 0, 0, 0, 0, 0
	}
}

// TestNeeds: every node renders, links and lists the same from a
// snapshot holding only the parts Needs names (and the static ones).
func TestNeeds(t *testing.T) {
	full := fake()
	buf, buf2 := make([]byte, 1<<16), make([]byte, 1<<16)
	name, name2 := make([]byte, 64), make([]byte, 64)
	for _, root := range []procfs.Node{procfs.ProcRoot, procfs.SysRoot} {
		ns, names := nodes(full, root)
		ns, names = append(ns, root), append(names, "/")
		for i, n := range ns {
			s := fake()
			strip(s, procfs.Needs(n))
			a, ok := procfs.Render(n, full, buf)
			b, ok2 := procfs.Render(n, s, buf2)
			if ok != ok2 || string(buf[:a]) != string(buf2[:b]) {
				t.Errorf("%s: Needs %b: render %q, with all parts %q", names[i], procfs.Needs(n), buf2[:b], buf[:a])
			}
			a, ok = procfs.Readlink(n, full, buf)
			b, ok2 = procfs.Readlink(n, s, buf2)
			if ok != ok2 || string(buf[:a]) != string(buf2[:b]) {
				t.Errorf("%s: Needs %b: link %q, with all parts %q", names[i], procfs.Needs(n), buf2[:b], buf[:a])
			}
			for k := 0; ; k++ {
				c, a, ok := procfs.ReadDir(n, full, k, name)
				c2, b, ok2 := procfs.ReadDir(n, s, k, name2)
				if c != c2 || ok != ok2 || string(name[:a]) != string(name2[:b]) {
					t.Errorf("%s: Needs %b: entry %d %q, with all parts %q", names[i], procfs.Needs(n), k, name2[:b], name[:a])
				}
				if !ok {
					break
				}
			}
		}
	}
}

// TestZen5RDSEED checks that rdseed is left out on AMD's Zen 5 unless its
// microcode has the fix, as Linux does (AMD-SB-7055), and named elsewhere.
func TestZen5RDSEED(t *testing.T) {
	for _, c := range []struct {
		family, model, stepping uint32
		microcode               uint32
		want                    bool
	}{
		{0x1a, 0x02, 1, 0x01000065, false}, // a hypervisor's made-up microcode
		{0x1a, 0x02, 1, 0x0b002159, false},
		{0x1a, 0x02, 1, 0x0b00215a, true},
		{0x1a, 0x11, 0, 0x0b101054, true},
		{0x1a, 0x11, 1, 0x0b101054, false}, // another stepping: no fix known
		{0x1a, 0x44, 0, 0xffffffff, false},
		{0x1a, 0x50, 0, 0, true}, // not a Zen 5 model
		{0x19, 0x01, 1, 0, true}, // Zen 3
	} {
		sig := c.stepping | (c.model&0xf)<<4 | (c.model>>4)<<16 | 0xf<<8 | (c.family-0xf)<<20
		cpuid := func(leaf, sub uint32) (a, b, cx, d uint32) {
			switch leaf {
			case 0:
				return 7, 0x68747541, 0x444d4163, 0x69746e65 // AuthenticAMD
			case 1:
				return sig, 0, 0, 0
			case 7:
				if sub == 0 {
					return 0, 1 << 18, 0, 0 // rdseed
				}
			}
			return 0, 0, 0, 0
		}
		s := fake()
		s.Model.Microcode = c.microcode
		s.Model.ReadCPUID(cpuid, 0)
		flags := statusMap(strings.ReplaceAll(render(t, s, procfs.ProcRoot, "cpuinfo"), "\t", ""))["flags"]
		if got := strings.Contains(" "+flags+" ", " rdseed "); got != c.want {
			t.Errorf("family %#x model %#x stepping %d microcode %#x: rdseed named %v, want %v", c.family, c.model, c.stepping, c.microcode, got, c.want)
		}
	}
}
