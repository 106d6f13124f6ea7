package main

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	promfs "github.com/prometheus/procfs"

	"yolk/kernel/abi"
)

// /proc and /sys as the kernel mounts them (kernel/procfiles.go), filled
// from its own numbers (kernel/procsnap.go): the whole tree is read with
// the program's own calls (readdir, readlink, read) and copied into a
// directory of the guest's /tmp with the same layout, and
// github.com/prometheus/procfs reads the copy, as Prometheus' process
// collector reads /proc (it reads the live /proc too); the values are
// checked against what the program sees through its own system calls.

func init() {
	tests = append(tests, test{"TestProcfs", testProcfs})
}

// procCopy copies the tree at src ("/proc/...", "/sys/..."), as the
// program's own calls read it, into dst, an existing directory:
// directories, symbolic links and files. What is gone by the time it is
// read (a thread that exited, a descriptor closed, exe without a path)
// is left out, as a walk of Linux's /proc would find it.
func procCopy(src, dst string) error {
	ents, err := os.ReadDir(src)
	if errnoOf(err) == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		s, d := src+"/"+e.Name(), filepath.Join(dst, e.Name())
		switch e.Type() {
		case fs.ModeDir:
			if err := os.Mkdir(d, 0o755); err != nil {
				return err
			}
			if err := procCopy(s, d); err != nil {
				return err
			}
		case fs.ModeSymlink:
			target, err := os.Readlink(s)
			if errnoOf(err) == syscall.ENOENT {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.Symlink(target, d); err != nil {
				return err
			}
		case 0:
			if err := procFile(s, d); err != nil {
				return err
			}
		default:
			return fmt.Errorf("readdir %s: %q has type %v", src, e.Name(), e.Type())
		}
	}
	return nil
}

// procFile copies the file src into dst (again, for a later reading).
func procFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if errnoOf(err) == syscall.ENOENT || errnoOf(err) == syscall.ESRCH {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// procCopyDir copies the directory src into dst anew.
func procCopyDir(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	return procCopy(src, dst)
}

// processCPU is CLOCK_PROCESS_CPUTIME_ID, in seconds.
func processCPU() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 2 /* CLOCK_PROCESS_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Nano()) / 1e9
}

func testProcfs(t *T) {
	if !onYolk() {
		t.Skipf("not on yolk: the numbers are checked against yolk's private calls (abi.SysStats)")
	}
	dir := "/tmp/procfs-copy"
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	procDir, pid := filepath.Join(dir, "proc"), os.Getpid()
	pidDir := filepath.Join(procDir, strconv.Itoa(pid))
	threadsBefore := pprof.Lookup("threadcreate").Count()
	for _, r := range []string{"proc", "sys"} {
		if err := os.MkdirAll(filepath.Join(dir, r), 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		if err := procCopy("/"+r, filepath.Join(dir, r)); err != nil {
			t.Fatalf("copying /%s: %v", r, err)
		}
	}
	fs, err := promfs.NewFS(procDir)
	if err != nil {
		t.Fatalf("procfs.NewFS: %v", err)
	}
	p, err := fs.Self()
	if err != nil || p.PID != pid {
		t.Fatalf("Self: %+v, %v; want PID %d", p, err, pid)
	}
	var ks abi.Stats
	if _, _, e := syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&ks)), 0, 0); e != 0 {
		t.Fatalf("SysStats: %v", e)
	}

	// The initial stack, read back: cmdline is os.Args, auxv has the
	// page size; exe and cwd are what the program sees.
	if b, err := os.ReadFile(filepath.Join(pidDir, "cmdline")); err != nil || string(b) != strings.Join(os.Args, "\x00")+"\x00" {
		t.Errorf("cmdline %q, %v; want os.Args %q", b, err, os.Args)
	}
	if env, err := p.Environ(); err != nil || !hasPrefixIn(env, "HOME=") || !hasPrefixIn(env, "GOMEMLIMIT=") {
		t.Errorf("Environ %q, %v; want the boot's environment, HOME and GOMEMLIMIT among it", env, err)
	}
	if b, err := os.ReadFile(filepath.Join(pidDir, "auxv")); err != nil || !auxvHas(b, 6, 4096) {
		t.Errorf("auxv %x, %v; want AT_PAGESZ 4096", b, err)
	}
	if exe, err := os.Executable(); err == nil {
		if got, err := p.Executable(); got != exe {
			t.Errorf("exe %q, %v; os.Executable %q", got, err, exe)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if got, err := p.Cwd(); got != wd {
			t.Errorf("cwd %q, %v; os.Getwd %q", got, err, wd)
		}
	}

	// CPU time: stat's, between two readings of the process's CPU clock
	// (the same count, in ticks of 10 ms), growing with a 50 ms spin.
	statFile := filepath.Join(pidDir, "stat")
	cpuNow := func() (float64, promfs.ProcStat) {
		c0 := processCPU()
		if err := procFile("/proc/self/stat", statFile); err != nil {
			t.Fatalf("%v", err)
		}
		c1 := processCPU()
		st, err := p.Stat()
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if cpu := st.CPUTime(); cpu < c0-0.0101 || cpu > c1+1e-9 {
			t.Errorf("utime+stime %.2f s, outside the process's CPU clock's %.4f..%.4f s", cpu, c0, c1)
		}
		return st.CPUTime(), st
	}
	cpu0, st := cpuNow()
	if cpu0 <= 0 {
		t.Errorf("utime+stime %v s, want > 0", cpu0)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	cpu1, _ := cpuNow()
	if cpu1-cpu0 < 0.02 {
		t.Errorf("utime+stime grew %.2f s over a 50 ms spin, want at least 0.02", cpu1-cpu0)
	}
	t.Logf("utime+stime %.2f s, %.2f s after a 50 ms spin", cpu0, cpu1)

	// Memory: RSS above 1 MiB and under the machine's memory; status
	// agrees; meminfo's MemTotal is the kernel's frames.
	rss := st.ResidentMemory()
	if rss < 1<<20 || int64(rss) >= ks.FramesAll*4096 {
		t.Errorf("RSS %d bytes, want > 1 MiB and < the machine's %d", rss, ks.FramesAll*4096)
	}
	status, err := p.NewStatus()
	if err != nil || status.TGID != pid || status.VmRSS == 0 {
		t.Errorf("NewStatus: %+v, %v", status, err)
	}
	mi, err := fs.Meminfo()
	if err != nil || mi.MemTotalBytes == nil || mi.MemFreeBytes == nil {
		t.Fatalf("Meminfo: %v", err)
	}
	if *mi.MemTotalBytes != uint64(ks.FramesAll)*4096 || *mi.MemFreeBytes > *mi.MemTotalBytes {
		t.Errorf("MemTotal %d, MemFree %d bytes; the kernel has %d frames", *mi.MemTotalBytes, *mi.MemFreeBytes, ks.FramesAll)
	}

	// Threads: at least the runtime's (its Ms, each a thread), the same
	// as task/ lists.
	if st.NumThreads < threadsBefore {
		t.Errorf("stat's num_threads %d, fewer than the runtime's %d threads", st.NumThreads, threadsBefore)
	}
	if tasks, err := os.ReadDir(filepath.Join(pidDir, "task")); err != nil || len(tasks) < 1 {
		t.Errorf("task/: %d entries, %v", len(tasks), err)
	}
	// The program's threads are task/'s and no others: tgkill finds no
	// TID it does not list (the kernel's own task, the journal's
	// committer where a disk is mounted, is not one of them: ESRCH, as
	// Linux for a TID outside the process).
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil {
		listed, top := map[int]bool{}, 0
		for _, e := range tasks {
			n, _ := strconv.Atoi(e.Name())
			listed[n], top = true, max(top, n)
		}
		for tid := 1; tid <= top; tid++ {
			if err := syscall.Tgkill(1, tid, 0); !listed[tid] && err != syscall.ESRCH {
				t.Errorf("tgkill(1, %d, 0) = %v, but task/ does not list %d", tid, err, tid)
			}
		}
	}

	// Descriptors: fd/ lists the open ones; 10 more opened, 10 more
	// listed, each named by its path; a pipe and a socket by their kind.
	fdDir := filepath.Join(pidDir, "fd")
	countFD := func() (int, int) {
		n := openFDs()
		if err := procCopyDir("/proc/self/fd", fdDir); err != nil {
			t.Fatalf("%v", err)
		}
		got, err := p.FileDescriptorsLen()
		if err != nil {
			t.Fatalf("FileDescriptorsLen: %v", err)
		}
		if n2 := openFDs(); n2 != n {
			t.Logf("open descriptors changed meanwhile: %d, then %d", n, n2)
		}
		return got, n
	}
	nfd, want := countFD()
	if nfd != want {
		t.Errorf("FileDescriptorsLen %d, the program has %d open", nfd, want)
	}
	var opened []*os.File
	for i := 0; i < 10; i++ {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatalf("%v", err)
		}
		opened = append(opened, f)
	}
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	if nfd2, want2 := countFD(); nfd2 != nfd+10 || want2 != want+10 {
		t.Errorf("after 10 opens: FileDescriptorsLen %d (was %d), the program has %d open (was %d)", nfd2, nfd, want2, want)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer pr.Close()
	defer pw.Close()
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer syscall.Close(sp[0])
	defer syscall.Close(sp[1])
	named := filepath.Join(dir, "named file")
	nf, err := os.Create(named)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer nf.Close()
	var pst syscall.Stat_t
	syscall.Fstat(int(pr.Fd()), &pst)
	for _, c := range []struct {
		fd   uintptr
		want string
	}{
		{opened[0].Fd(), "/dev/null"}, {opened[9].Fd(), "/dev/null"}, {nf.Fd(), named},
		{pr.Fd(), fmt.Sprintf("pipe:[%d]", pst.Ino)}, {uintptr(sp[0]), "socket:["}, {0, "/dev/console"},
	} {
		got, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", c.fd))
		if err != nil || !strings.HasPrefix(got, c.want) {
			t.Errorf("fd %d links to %q, %v; want %q", c.fd, got, err, c.want)
		}
	}

	// Limits: getrlimit's, every one.
	lim, err := p.Limits()
	if err != nil {
		t.Fatalf("Limits: %v", err)
	}
	for _, l := range []struct {
		res int
		got uint64
	}{
		{0, lim.CPUTime}, {1, lim.FileSize}, {2, lim.DataSize}, {3, lim.StackSize}, {4, lim.CoreFileSize},
		{5, lim.ResidentSet}, {6, lim.Processes}, {7, lim.OpenFiles}, {8, lim.LockedMemory}, {9, lim.AddressSpace},
		{10, lim.FileLocks}, {11, lim.PendingSignals}, {12, lim.MsqqueueSize}, {13, lim.NicePriority},
		{14, lim.RealtimePriority}, {15, lim.RealtimeTimeout},
	} {
		var r syscall.Rlimit
		if err := syscall.Getrlimit(l.res, &r); err != nil || r.Cur != l.got {
			t.Errorf("limits' resource %d: %d; getrlimit %d, %v", l.res, l.got, r.Cur, err)
		}
	}

	// The system: stat's CPUs and boot time, loadavg, the mounts. The
	// snapshot is taken between two readings of uptime.
	uptime := func() float64 {
		up, err := os.ReadFile(filepath.Join(procDir, "uptime"))
		var upS, idleS float64
		if _, e := fmt.Sscan(string(up), &upS, &idleS); err != nil || e != nil || upS <= 0 {
			t.Errorf("uptime %q: %v %v", up, err, e)
		}
		return upS
	}
	up0 := uptime()
	sys, err := fs.Stat()
	if err != nil {
		t.Fatalf("Stat (system): %v", err)
	}
	// btime is the wall clock at boot, in whole seconds: the wall clock
	// when uptime was read, less uptime. The read is bracketed by two
	// readings of the wall clock, since a loaded host can stall the
	// guest for seconds between any two instructions.
	before := time.Now()
	upS := uptime()
	after := time.Now()
	unixS := func(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
	if lo, hi := unixS(before)-upS-1.1, unixS(after)-upS+0.1; float64(sys.BootTime) < lo || float64(sys.BootTime) > hi {
		t.Errorf("btime %d, want the wall clock less uptime (%.2f s): between %.2f and %.2f", sys.BootTime, upS, lo, hi)
	}
	if len(sys.CPU) != runtime.NumCPU() || sys.ProcessesRunning < 1 {
		t.Errorf("stat: %d CPUs (want %d), %d running", len(sys.CPU), runtime.NumCPU(), sys.ProcessesRunning)
	}
	// Each CPU is busy or idle: their sum is the uptime, per CPU, at the
	// snapshot (the copy was made over some time: within a second).
	if n, sum := float64(len(sys.CPU)), sys.CPUTotal.User+sys.CPUTotal.System+sys.CPUTotal.Idle; sum < n*(up0-1) || sum > n*(upS+1) {
		t.Errorf("stat's CPU times add up to %.2f s, want %.0f × uptime, between %.2f and %.2f s", sum, n, up0, upS)
	}
	// The load average counts every 5 s since boot the threads running
	// (the reader at least): after the first period it is above 0.
	if upS < 5.5 {
		time.Sleep(time.Duration((5.5 - upS) * float64(time.Second)))
	}
	if err := procFile("/proc/loadavg", filepath.Join(procDir, "loadavg")); err != nil {
		t.Fatalf("%v", err)
	}
	load, err := fs.LoadAvg()
	if err != nil || load.Load1 <= 0 || load.Load15 < 0 || load.Load1 > 1000 {
		t.Errorf("LoadAvg: %+v, %v; want a 1-minute load above 0 after 5 s", load, err)
	}
	mounts, err := p.MountInfo()
	if err != nil {
		t.Fatalf("MountInfo: %v", err)
	}
	types := map[string]string{}
	for _, m := range mounts {
		types[m.MountPoint] = m.FSType
	}
	for point, typ := range map[string]string{"/": "tmpfs", "/proc": "proc", "/sys": "sysfs", "/sys/fs/cgroup": "cgroup2"} {
		if types[point] != typ {
			t.Errorf("mountinfo: %s is %q, want %s (%v)", point, types[point], typ, types)
		}
	}

	// cgroup v2's CPU limit, as Go's runtime finds it (internal/runtime/
	// cgroup: /proc/self/cgroup's path, under the cgroup2 mount of
	// mountinfo, cpu.max there): none, so GOMAXPROCS is the CPUs'.
	quota, period, file, err := cgroupCPUMax(dir)
	if err != nil || quota != -1 || period != 100000 {
		t.Errorf("cgroup cpu.max: quota %d, period %d at %s, %v; want max 100000", quota, period, file, err)
	}
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) != runtime.NumCPU() {
		t.Errorf("GOMAXPROCS %d with no CPU limit, want the CPUs' %d", runtime.GOMAXPROCS(0), runtime.NumCPU())
	}

	// Prometheus' process collector (client_golang's processCollect):
	// each metric from the parsed files as it computes it.
	start, err := st.StartTime()
	if err != nil || start < float64(sys.BootTime) || start > float64(time.Now().Unix())+1 {
		t.Errorf("StartTime %v, %v: want between btime %d and now", start, err, sys.BootTime)
	}
	netstat, err := p.Netstat()
	if err != nil || netstat.IpExt.InOctets == nil {
		t.Errorf("Netstat: %v", err)
	}
	metrics := map[string]float64{
		"process_cpu_seconds_total":        st.CPUTime(),
		"process_virtual_memory_bytes":     float64(st.VirtualMemory()),
		"process_resident_memory_bytes":    float64(st.ResidentMemory()),
		"process_start_time_seconds":       start,
		"process_open_fds":                 float64(nfd),
		"process_max_fds":                  float64(lim.OpenFiles),
		"process_virtual_memory_max_bytes": float64(lim.AddressSpace),
	}
	for name, v := range metrics {
		// The start time is 0 on a board without a clock (the Pi 3:
		// the wall clock starts at the epoch, btime 0, as on Linux).
		if math.IsNaN(v) || v < 0 || v == 0 && name != "process_start_time_seconds" {
			t.Errorf("%s = %v", name, v)
		}
	}
	if metrics["process_virtual_memory_bytes"] < metrics["process_resident_memory_bytes"] {
		t.Errorf("virtual memory %v below resident %v", metrics["process_virtual_memory_bytes"], metrics["process_resident_memory_bytes"])
	}
	t.Logf("process collector: %v", metrics)
	t.Logf("load %+v, %d threads (runtime %d), %d descriptors", *load, st.NumThreads, threadsBefore, nfd)
}

// hasPrefixIn reports whether a string of list starts with prefix.
func hasPrefixIn(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// auxvHas reports whether the auxiliary vector b has typ with value v.
func auxvHas(b []byte, typ, v uint64) bool {
	for ; len(b) >= 16; b = b[16:] {
		if binary.LittleEndian.Uint64(b) == typ {
			return binary.LittleEndian.Uint64(b[8:]) == v
		}
	}
	return false
}

// cgroupCPUMax finds cpu.max under root as Go's runtime does on Linux
// (internal/runtime/cgroup, cgroup v2): the "0::" line of
// /proc/self/cgroup names the cgroup, the cgroup2 line of
// /proc/self/mountinfo where its hierarchy is mounted; quota is -1 for
// "max".
func cgroupCPUMax(root string) (quota, period int64, file string, err error) {
	cg, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, 0, "", err
	}
	path := ""
	for _, l := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path = p
		}
	}
	mi, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return 0, 0, "", err
	}
	for _, l := range strings.Split(string(mi), "\n") {
		f := strings.Fields(l)
		for i := 6; i+1 < len(f); i++ {
			if f[i] == "-" && f[i+1] == "cgroup2" && strings.HasPrefix(path, f[3]) {
				file = filepath.Join(root, f[4], strings.TrimPrefix(path, f[3]), "cpu.max")
			}
		}
	}
	if path == "" || file == "" {
		return 0, 0, "", fmt.Errorf("no cgroup v2 path (%q) or cgroup2 mount", path)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, file, err
	}
	var q string
	if _, err := fmt.Sscan(string(b), &q, &period); err != nil {
		return 0, 0, file, fmt.Errorf("%q: %v", b, err)
	}
	if q == "max" {
		return -1, period, file, nil
	}
	quota, err = strconv.ParseInt(q, 10, 64)
	return quota, period, file, err
}
