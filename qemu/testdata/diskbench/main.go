// Command diskbench is issue 30's disk benchmark (make diskbench,
// docs/disks.md): one static Linux program run on yolk and on Linux
// (qemu/linuxref) in the same QEMU configuration, each on its own copy of
// one ext4 image, printing Go benchmark lines for benchstat.
//
//	diskbench [-budget 8s] [-seq 32] [-run REGEXP] [-mark /dev/vda] DIR
//
// DIR is the disk's mount. DIR/data, a file of written bytes (the image's
// mkfs.ext4 -d puts it there; made and fsynced here if missing), is read
// sequentially first (cold: this boot has not touched it), then again
// (warm: what a page cache keeps), and is the target of the 4 KiB random
// reads and writes, which use O_DIRECT (Linux then goes to the device,
// not its page cache) at queue depth 1 and 32 (32 goroutines, each in
// its own pread or pwrite). Then: a sequential write of -seq MiB in 1 MiB
// writes (fewer if the budget passes first), the fsync at its end
// included; 4 KiB appended and fsynced, and
// 4 KiB overwritten in place and fdatasynced, each fsync's latency
// recorded (p50, p99); empty files created then deleted in one directory;
// SQLite inserts (modernc.org/sqlite, rollback journal and WAL) and bbolt
// puts, one per transaction and batched.
// The looped benchmarks run until their -budget has passed and their
// minimum count is reached (or their maximum count), so a slow system
// runs fewer operations, never fewer than the minimum. -run picks the
// benchmarks (SeqRead, SeqWrite, RandRead4K, RandWrite4K, Fsync,
// CreateDelete, SQLiteInsert, BboltPut) and variants (Fsync/append4K,
// RandWrite4K/qd=1, SQLiteInsert/journal=wal ...) whose names it
// matches: a run of one, its device requests counted by QEMU's trace,
// says what one operation asks of the disk; -mark (mark.go) lets one
// traced run say it for every variant.
//
// Where the system publishes the disk's request counts (Linux's sysfs),
// a line after each benchmark gives them: reads, writes, flushes.
//
// At the end it syncs and unmounts DIR: Linux's /init must leave the
// disk clean; yolk unmounts at the program's end and may refuse
// umount2.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

var (
	budget = flag.Duration("budget", 8*time.Second, "time each looped benchmark runs for (at least its minimum count)")
	seqMiB = flag.Int("seq", 32, "MiB written by the sequential write")
	run    = flag.String("run", "", "run only the benchmarks whose names match this regular expression")
)

func main() {
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Println("usage: diskbench [-budget 8s] [-seq 32] [-run REGEXP] [-mark /dev/vda] DIR")
		os.Exit(2)
	}
	var err error
	if only, err = regexp.Compile(*run); err != nil {
		fmt.Printf("diskbench: -run: %v\n", err)
		os.Exit(2)
	}
	dir := flag.Arg(0)
	fmt.Printf("goos: %s\ngoarch: %s\npkg: yolk/qemu/testdata/diskbench\n", runtime.GOOS, runtime.GOARCH)
	failed := false
	for _, b := range benchmarks {
		stats := devStats(dir)
		rs, err := b.run(dir)
		if err != nil {
			fmt.Printf("diskbench: %s: %v\n", b.name, err)
			failed = true
			continue
		}
		if len(rs) == 0 {
			continue // -run left it out
		}
		for _, r := range rs {
			r.print()
		}
		if s := devStats(dir); stats != "" && s != "" {
			fmt.Printf("diskbench: %s: device requests %s\n", b.name, diffStats(stats, s))
		}
	}
	mark("end")
	unix.Sync()
	fmt.Printf("diskbench: umount %v\n", unix.Unmount(dir, 0))
	if failed {
		fmt.Println("diskbench: FAIL")
		os.Exit(1)
	}
	fmt.Println("diskbench: done")
}

var only *regexp.Regexp // -run

// want says whether -run picks the benchmark or variant name; if so, its
// marker goes to the disk (-mark).
func want(name string) bool {
	if !only.MatchString(name) {
		return false
	}
	mark(name)
	return true
}

// A benchmark runs on DIR and gives one or more results (variants), none
// if -run picks none of them.
type benchmark struct {
	name string
	run  func(dir string) ([]result, error)
}

var benchmarks = []benchmark{
	{"SeqRead", seqRead},
	{"SeqWrite", seqWrite},
	{"RandRead4K", randRead},
	{"RandWrite4K", randWrite},
	{"Fsync", fsyncLatency},
	{"CreateDelete", createDelete},
	{"SQLiteInsert", sqliteInsert},
	{"BboltPut", boltPut},
}

// A result is one benchmark line: n operations in d, bytes per operation
// (for MB/s; 0: none) and further metrics.
type result struct {
	name    string
	n       int
	d       time.Duration
	bytes   int64
	metrics []metric
}

type metric struct {
	v    float64
	unit string
}

// print writes r as package testing does: BenchmarkNAME-GOMAXPROCS,
// the count, ns/op, MB/s, then the metrics.
func (r result) print() {
	var b strings.Builder
	fmt.Fprintf(&b, "Benchmark%s-%d\t%8d\t%12.0f ns/op", r.name, runtime.GOMAXPROCS(0), r.n, float64(r.d.Nanoseconds())/float64(r.n))
	if r.bytes > 0 {
		fmt.Fprintf(&b, "\t%8.2f MB/s", float64(r.bytes)*float64(r.n)/1e6/r.d.Seconds())
	}
	for _, m := range r.metrics {
		fmt.Fprintf(&b, "\t%10.4g %s", m.v, m.unit)
	}
	fmt.Println(b.String())
}
