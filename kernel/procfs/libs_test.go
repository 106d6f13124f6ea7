package procfs_test

// The libraries' view: the whole tree written out as files, directories
// and links in a temporary directory, read with
// github.com/prometheus/procfs (Prometheus' collectors), the way gopsutil
// parses, and the way Go's runtime finds its cgroup CPU limit.

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	promfs "github.com/prometheus/procfs"

	"yolk/kernel/procfs"
)

// writeTree writes the tree under root to dir; it returns the number of
// files, directories and links written.
func writeTree(t *testing.T, s *procfs.Snapshot, root procfs.Node, dir string) int {
	t.Helper()
	count := 0
	buf := make([]byte, 1<<20)
	name := make([]byte, 256)
	for i := 0; ; i++ {
		c, n, ok := procfs.ReadDir(root, s, i, name)
		if !ok {
			break
		}
		count++
		path := filepath.Join(dir, string(name[:n]))
		if p := procfs.Parent(c); p != root {
			t.Errorf("%s: parent %x, want %x", path, p, root)
		}
		if m, ok := procfs.Lookup(root, name[:n], s); !ok || m != c {
			t.Errorf("%s: Lookup gives %x %v, ReadDir %x", path, m, ok, c)
		}
		switch mode := procfs.Mode(c, s); mode &^ 0o7777 {
		case procfs.ModeDir:
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			count += writeTree(t, s, c, path)
		case procfs.ModeLink:
			n, ok := procfs.Readlink(c, s, buf)
			if !ok {
				continue // exe without a path: ENOENT
			}
			if err := os.Symlink(string(buf[:n]), path); err != nil {
				t.Fatal(err)
			}
		case procfs.ModeReg:
			n, ok := procfs.Render(c, s, buf)
			if !ok || n > len(buf) {
				t.Fatalf("%s: render %d %v", path, n, ok)
			}
			if err := os.WriteFile(path, buf[:n], 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: mode %o", path, mode)
		}
	}
	return count
}

func writeFake(t *testing.T) (*procfs.Snapshot, string) {
	s := fake()
	dir := t.TempDir()
	for _, r := range []struct {
		root procfs.Node
		name string
	}{{procfs.ProcRoot, "proc"}, {procfs.SysRoot, "sys"}} {
		if err := os.Mkdir(filepath.Join(dir, r.name), 0o755); err != nil {
			t.Fatal(err)
		}
		if n := writeTree(t, s, r.root, filepath.Join(dir, r.name)); n < 20 {
			t.Fatalf("%s: only %d entries", r.name, n)
		}
	}
	return s, dir
}

func TestPrometheusProcfs(t *testing.T) {
	s, dir := writeFake(t)
	fs, err := promfs.NewFS(filepath.Join(dir, "proc"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, got, want any) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	p, err := fs.Self()
	check("Self", err, p.PID, 1)
	all, err := fs.AllProcs()
	check("AllProcs", err, len(all), 1)

	st, err := p.Stat()
	check("Stat", err, []any{st.Comm, st.State, st.NumThreads, st.CPUTime(), st.VirtualMemory(), st.ResidentMemory() / os.Getpagesize(), st.Processor},
		[]any{"hello", "R", 3, 12.06, uint(700 << 20), 2048, uint(0)})
	start, err := st.StartTime()
	check("StartTime", err, start, 1796170960.1)

	status, err := p.NewStatus()
	check("NewStatus", err, []any{status.Name, status.TGID, status.VmRSS, status.VmSize, status.VmHWM, status.RssAnon, status.VoluntaryCtxtSwitches, status.NonVoluntaryCtxtSwitches, status.CpusAllowedList, status.CapEff},
		[]any{"hello", 1, uint64(8 << 20), uint64(700 << 20), uint64(9 << 20), uint64(6 << 20), uint64(10), uint64(2), []uint64{0, 1}, uint64(procfs.CapFull)})
	statm, err := p.Statm()
	check("Statm", err, []any{statm.Size, statm.Resident, statm.Shared, statm.Text, statm.Data}, []any{uint64(179200), uint64(2048), uint64(512), uint64(256), uint64(10273)})

	lim, err := p.Limits()
	check("Limits", err, []any{lim.OpenFiles, lim.StackSize, lim.AddressSpace, lim.CoreFileSize, lim.NicePriority}, []any{uint64(1024), uint64(8 << 20), uint64(math.MaxUint64), uint64(0), uint64(0)})

	cmd, err := p.CmdLine()
	check("CmdLine", err, cmd, []string{"/hello", "-v"})
	env, err := p.Environ()
	check("Environ", err, env, []string{"HOME=/", "PATH=/bin"})
	comm, err := p.Comm()
	check("Comm", err, comm, "hello")
	exe, err := p.Executable()
	check("Executable", err, exe, "/hello")
	cwd, err := p.Cwd()
	check("Cwd", err, cwd, "/tmp")
	root, err := p.RootDir()
	check("RootDir", err, root, "/")

	nfd, err := p.FileDescriptorsLen()
	check("FileDescriptorsLen", err, nfd, 9)
	fds, err := p.FileDescriptors()
	check("FileDescriptors", err, len(fds), 9)
	targets, err := p.FileDescriptorTargets()
	sort.Strings(targets) // in the temporary directory's order
	check("FileDescriptorTargets", err, targets, []string{"/dev/console", "/dev/console", "/dev/console", "/tmp/a file", "anon_inode:[eventfd]", "anon_inode:[eventpoll]", "pipe:[4711]", "pipe:[4711]", "socket:[4712]"})
	infos, err := p.FileDescriptorsInfo()
	if err == nil && len(infos) == 9 {
		for _, fi := range infos {
			if fi.FD == "8" {
				check("FDInfo 8", nil, []string{fi.Pos, fi.Flags, fi.MntID, fi.Ino}, []string{"42", "0100102", "1", "77"})
			}
		}
	} else {
		t.Errorf("FileDescriptorsInfo: %d, %v", len(infos), err)
	}

	mi, err := p.MountInfo()
	if err != nil || len(mi) != 5 {
		t.Fatalf("MountInfo: %d, %v", len(mi), err)
	}
	check("MountInfo cgroup2", nil, []any{mi[3].MountID, mi[3].ParentID, mi[3].MajorMinorVer, mi[3].Root, mi[3].MountPoint, mi[3].FSType, mi[3].Source, mi[3].Options, mi[3].SuperOptions},
		[]any{4, 3, "0:25", "/", "/sys/fs/cgroup", "cgroup2", "cgroup2", map[string]string{"rw": "", "nosuid": "", "nodev": "", "noexec": "", "relatime": ""}, map[string]string{"rw": "", "nsdelegate": ""}})
	check("MountInfo 9p", nil, []any{mi[4].MountPoint, mi[4].Options, mi[4].SuperOptions}, []any{`/go\040root`, map[string]string{"ro": ""}, map[string]string{"ro": "", "trans": "virtio"}})

	maps, err := p.ProcMaps()
	if err != nil || len(maps) != 4 {
		t.Fatalf("ProcMaps: %d, %v", len(maps), err)
	}
	check("ProcMaps[1]", nil, []any{maps[1].StartAddr, maps[1].EndAddr, maps[1].Perms.Read, maps[1].Perms.Write, maps[1].Perms.Execute, maps[1].Perms.Private, maps[1].Offset, maps[1].Dev, maps[1].Inode, maps[1].Pathname},
		[]any{uintptr(0x600000), uintptr(0x610000), true, true, false, true, int64(0x100000), uint64(0x16), uint64(12), "/hello"})
	check("ProcMaps[3]", nil, maps[3].Pathname, "[stack]")
	roll, err := p.ProcSMapsRollup()
	check("ProcSMapsRollup", err, []any{roll.Rss, roll.Pss, roll.Anonymous, roll.SharedClean, roll.PrivateDirty, roll.Swap}, []any{uint64(8 << 20), uint64(8 << 20), uint64(6 << 20), uint64(0), uint64(6 << 20), uint64(0)})

	io, err := p.IO()
	check("IO", err, []any{io.RChar, io.WChar, io.SyscR, io.SyscW}, []any{uint64(10), uint64(20), uint64(1), uint64(2)})
	ss, err := p.Schedstat()
	check("Schedstat", err, []any{ss.RunningNanoseconds, ss.WaitingNanoseconds, ss.RunTimeslices}, []any{uint64(3e9 + 1e9), uint64(0), uint64(12)})
	ns, err := p.Netstat()
	if err == nil && ns.IpExt.InOctets != nil && ns.IpExt.OutOctets != nil {
		check("Netstat", nil, []float64{*ns.IpExt.InOctets, *ns.IpExt.OutOctets}, []float64{1000, 2000})
	} else {
		t.Errorf("Netstat: %v", err)
	}
	cg, err := p.Cgroups()
	check("Cgroups", err, cg, []promfs.Cgroup{{HierarchyID: 0, Controllers: nil, Path: "/"}})

	threads, err := fs.AllThreads(1)
	if err != nil || len(threads) != 3 {
		t.Fatalf("AllThreads: %d, %v", len(threads), err)
	}
	for _, th := range threads {
		ts, err := th.Stat()
		check("thread Stat", err, []any{ts.PID == th.PID, ts.CPUTime()}, []any{true, 4.0})
	}

	stat, err := fs.Stat()
	check("/proc/stat", err, []any{stat.BootTime, stat.CPUTotal.User, stat.CPUTotal.Idle, stat.CPUTotal.IRQ, len(stat.CPU), stat.CPU[1].System, stat.IRQTotal, stat.ContextSwitches, stat.ProcessCreated, stat.ProcessesRunning},
		[]any{uint64(1796170960), 24.68, 1780.24, 0.06, 2, 5.67, uint64(107), uint64(123456), uint64(9), uint64(1)})
	mem, err := fs.Meminfo()
	if err == nil && mem.MemTotal != nil && mem.MemAvailable != nil && mem.HugePagesTotal != nil && mem.DirectMap4k != nil {
		check("Meminfo", nil, []uint64{*mem.MemTotal, *mem.MemFree, *mem.MemAvailable, *mem.Hugepagesize, *mem.VmallocTotal}, []uint64{512 << 10, 400 << 10, 410 << 10, 2048, 34359738367})
	} else {
		t.Errorf("Meminfo: %v", err)
	}
	ci, err := fs.CPUInfo()
	if err == nil && len(ci) == 2 {
		check("CPUInfo", nil, []any{ci[1].Processor, ci[1].VendorID, ci[1].ModelName, ci[1].CPUMHz, ci[1].CoreID, ci[1].APICID, ci[1].CPUCores, ci[1].Flags[:4], ci[1].BogoMips, ci[1].AddressSizes},
			[]any{uint(1), "GenuineIntel", "QEMU Virtual CPU version 2.5+", 2599.998, "1", "1", uint(2), []string{"fpu", "de", "pse", "tsc"}, 5199.99, "40 bits physical, 48 bits virtual"})
	} else {
		t.Errorf("CPUInfo: %d, %v", len(ci), err)
	}
	la, err := fs.LoadAvg()
	if err == nil {
		check("LoadAvg", nil, *la, promfs.LoadAvg{Load1: 0.08, Load5: 0.02, Load15: 0.01})
	} else {
		t.Error(err)
	}
	host, err := fs.SysctlStrings("kernel/hostname")
	check("hostname", err, host, []string{"yolk"})
	somax, err := fs.SysctlInts("net/core/somaxconn")
	check("somaxconn", err, somax, []int{4096})
	_ = s
}

// TestGopsutilParsing parses as gopsutil's Linux code does (load.Avg,
// cpu.Times, mem.VirtualMemory, host.BootTime and Uptime, cpu.Info).
func TestGopsutilParsing(t *testing.T) {
	_, dir := writeFake(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, "proc", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// load.Avg: the first three fields, ParseFloat; load.Misc: running/total.
	f := strings.Fields(read("loadavg"))
	for i, want := range []float64{0.08, 0.02, 0.01} {
		if v, err := strconv.ParseFloat(f[i], 64); err != nil || v != want {
			t.Errorf("loadavg %d: %v %v", i, v, err)
		}
	}
	if r, a, ok := strings.Cut(f[3], "/"); !ok || r != "1" || a != "3" {
		t.Errorf("loadavg running/total %q", f[3])
	}
	// cpu.Times: lines starting "cpu", fields ParseFloat / ClocksPerSec.
	cpus := 0
	for _, l := range strings.Split(read("stat"), "\n") {
		if !strings.HasPrefix(l, "cpu") {
			continue
		}
		fs := strings.Fields(l)
		if len(fs) < 11 {
			t.Errorf("stat %q: %d fields", l, len(fs))
		}
		for _, v := range fs[1:] {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				t.Error(err)
			}
		}
		cpus++
	}
	if cpus != 3 {
		t.Errorf("stat: %d cpu lines", cpus)
	}
	// mem.VirtualMemory: "Key: value kB", value * 1024.
	for _, l := range strings.Split(strings.TrimSpace(read("meminfo")), "\n") {
		k, v, ok := strings.Cut(l, ":")
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		if _, err := strconv.ParseUint(v, 10, 64); !ok || err != nil || strings.ContainsAny(k, " \t") {
			t.Errorf("meminfo %q", l)
		}
	}
	// host.BootTime: /proc/stat's "btime"; host.Uptime: /proc/uptime's
	// first field.
	if !strings.Contains(read("stat"), "\nbtime 1796170960\n") {
		t.Error("stat: no btime")
	}
	if up, err := strconv.ParseFloat(strings.Fields(read("uptime"))[0], 64); err != nil || up != 75926.13 {
		t.Errorf("uptime %v %v", up, err)
	}
	// cpu.Info: blocks of "key\t: value"; "processor" starts one.
	n := 0
	for _, l := range strings.Split(read("cpuinfo"), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if l == "" {
			continue
		}
		if !ok {
			t.Errorf("cpuinfo %q", l)
		}
		if strings.TrimSpace(k) == "processor" {
			n++
		}
		if strings.TrimSpace(k) == "model name" && strings.TrimSpace(v) != "QEMU Virtual CPU version 2.5+" {
			t.Errorf("model name %q", v)
		}
	}
	if n != 2 {
		t.Errorf("cpuinfo: %d processors", n)
	}
}

// TestGoRuntimeCgroup finds the CPU limit as Go's runtime does at start
// (internal/runtime/cgroup: /proc/self/cgroup's "0::" line, the cgroup2
// mount in mountinfo whose root holds it, cpu.max there) and as
// automaxprocs does, and reads the huge page size as the runtime does.
func TestGoRuntimeCgroup(t *testing.T) {
	s, dir := writeFake(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var cgroup []byte
	for _, l := range bytes.Split(read("proc/self/cgroup"), []byte("\n")) {
		h, rest, ok := bytes.Cut(l, []byte(":"))
		if len(l) == 0 {
			continue
		}
		_, path, ok2 := bytes.Cut(rest, []byte(":"))
		if !ok || !ok2 || len(path) == 0 || path[0] != '/' {
			t.Fatalf("cgroup line %q malformed for the runtime", l)
		}
		if string(h) == "0" {
			cgroup = path
		}
	}
	var mnt string
	for _, l := range strings.Split(strings.TrimSpace(string(read("proc/self/mountinfo"))), "\n") {
		f := strings.Fields(l)
		i := strings.Index(l, " - ")
		if len(f) < 10 || i < 0 || f[3][0] != '/' {
			t.Fatalf("mountinfo line %q malformed for the runtime", l)
		}
		if g := strings.Fields(l[i+3:]); g[0] == "cgroup2" && strings.HasPrefix(string(cgroup), f[3]) {
			mnt = f[4]
			break
		}
	}
	if mnt != "/sys/fs/cgroup" || string(cgroup) != "/" {
		t.Fatalf("cgroup %q mounted at %q", cgroup, mnt)
	}
	max := strings.Fields(string(read(filepath.Join(mnt[1:], "cpu.max"))))
	quota, err1 := strconv.ParseFloat(max[0], 64)
	period, err2 := strconv.ParseFloat(max[1], 64)
	if err1 != nil || err2 != nil || math.Ceil(quota/period) != 2 {
		t.Errorf("cpu.max %q", max)
	}
	s.CPUQuotaUS = 0
	buf := make([]byte, 64)
	n, _ := procfs.Render(at(t, s, procfs.SysRoot, "fs/cgroup/cpu.max"), s, buf)
	if string(buf[:n]) != "max 100000\n" {
		t.Errorf("unlimited cpu.max %q", buf[:n])
	}
	// getHugePageSize: a decimal power of two and a newline, in 20 bytes.
	hp := read("sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if v, err := strconv.Atoi(string(hp[:len(hp)-1])); err != nil || len(hp) > 20 || v != 2<<20 || hp[len(hp)-1] != '\n' {
		t.Errorf("hpage_pmd_size %q", hp)
	}
	s.THPSize = 0
	if _, ok := procfs.Lookup(at(t, s, procfs.SysRoot, "kernel/mm"), []byte("transparent_hugepage"), s); ok {
		t.Error("transparent_hugepage without THPSize")
	}
}
