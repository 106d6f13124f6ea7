// Package procfs renders Linux's /proc and /sys files, in Linux 6.x's
// exact formats, from a Snapshot of the kernel's own numbers: the files
// Go's runtime reads at start-up (/proc/self/auxv, cgroup and mountinfo,
// /sys/fs/cgroup/cpu.max, /sys/kernel/mm/transparent_hugepage/
// hpage_pmd_size), the standard library (/proc/self/exe, fd/, cpuinfo's
// model name, /proc/sys/net/core/somaxconn, /proc/sys/kernel/hostname,
// /proc/net/igmp and igmp6 for net.Interface.MulticastAddrs)
// and the metrics libraries (Prometheus' process collector through
// github.com/prometheus/procfs: stat, status, limits, fd/, net/netstat;
// gopsutil: meminfo, cpuinfo, stat, uptime, loadavg; automaxprocs: cgroup,
// mountinfo, cpu.max).
//
// It is a leaf the kernel's file layer mounts at /proc and /sys: a static
// tree of files, directories and links (tree.go) with four dynamic
// directories (/proc/<pid>, task/<tid>, fd/<n>, fdinfo/<n>) whose entries
// come from the snapshot; Lookup, ReadDir, Readlink, Mode and Parent walk
// it, and Render writes a file's whole text into the caller's buffer, as
// Linux's seq_file generates a file anew for a read from its start. The
// kernel fills the snapshot (kernel/procsnap; Needs says which parts a
// file reads) under its own locks. What serving the tree as files needs
// is here too (files.go): the walk of a path within the tree, reporting
// ".." at a root and links out of it to the caller (Walk, which fills as
// it goes through a Filler), getdents64 records, stat and statfs, a read
// of a rendering at an offset.
//
// Kernel context: everything here runs inside system calls, so nothing
// allocates on the Go heap, stores a Go pointer into memory (the Snapshot
// has fixed-size arrays and a byte pool indexed by Str, no slices,
// strings, maps or interfaces), uses fmt or strconv (numbers are
// formatted into arrays on the stack), or calls into the runtime's
// scheduler. The hosted tests prove it (kcontext_test.go: AllocsPerRun
// == 0 for every node, and the compiled package's calls for amd64 and
// arm64 against kernel/kcontext_test.go's list) and compare the
// renderings with the host's own /proc byte for byte (linux_test.go) and
// through the libraries' parsers (libs_test.go).
//
// Not here: the kernel's numbers themselves (the kernel fills them), and
// files no library this is for reads (smaps, pagemap, ns/, oom_*,
// /proc/net/{dev,tcp,...}, most of /sys).
package procfs
