package qemu

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPowerCut is issue 30's power-cut test: the guest
// (testdata/powercut) appends records with an fsync after each and
// replaces a file atomically, and QEMU is killed (SIGKILL) at a random
// moment (a fixed seed) after its first record, again and again on the
// same disk. After each kill, on a copy of the disk: e2fsck replays the
// journal (-E journal_only), then e2fsck -fn finds it clean, every
// record whose fsync returned (printed) is there, every record holds the
// bytes written and no others, and "cur" is one whole version, the last
// one printed or the next. The next run boots on the disk as the kill
// left it (the kernel's mount replays the journal) and checks the same
// from inside. At the end one more boot checks and unmounts cleanly, and
// e2fsck -fn finds the disk itself clean. $YOLK_POWERCUT_RUNS runs
// (default 5; make powercut: 50) on $YOLK_POWERCUT_MACHINE (default
// microvm; virt boots the arm64 image).
func TestPowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("boots an image many times")
	}
	needQEMU(t)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Fatalf("mkfs.ext4 not found (Debian's e2fsprogs; make test installs it): %v", err)
	}
	runs := 5
	if s := os.Getenv("YOLK_POWERCUT_RUNS"); s != "" {
		var err error
		if runs, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	machine := cmp.Or(os.Getenv("YOLK_POWERCUT_MACHINE"), "microvm")
	arch := ArchOfMachine(machine)
	if _, err := FindQEMUFor(arch); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	img := fixtureImage(t, "yolk/qemu/testdata/powercut", dir, arch)
	disk := filepath.Join(dir, "pc.img")
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", "powercut", disk, "32M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	r := rand.New(rand.NewSource(30))
	start := time.Now()
	prevRec, prevRep := int64(-1), int64(0)
	checked, replays := 0, 0
	for run := 0; run < runs; run++ {
		delay := time.Duration(r.Int63n(int64(2500 * time.Millisecond)))
		g := boot(t, img, machine, disk, delay, false)
		if g.boot.records < prevRec+1 || g.boot.cur < prevRep {
			t.Fatalf("run %d: the guest found %d records and cur %d after the kill; the last run printed record %d and version %d\n%s",
				run, g.boot.records, g.boot.cur, prevRec, prevRep, g.serial)
		}
		if g.lastRec < 0 {
			t.Fatalf("run %d: killed before a record\n%s", run, g.serial)
		}
		if g.replayed {
			replays++
		}
		checked += checkDisk(t, run, disk, g)
		prevRec, prevRep = g.lastRec, g.lastRep
	}
	g := boot(t, img, machine, disk, 0, true)
	if g.boot.records < prevRec+1 || g.boot.cur < prevRep || !strings.Contains(g.serial, "pc: ok") {
		t.Fatalf("the last check: %d records, cur %d; want %d, %d\n%s", g.boot.records, g.boot.cur, prevRec+1, prevRep, g.serial)
	}
	if out, err := exec.Command("e2fsck", "-fn", disk).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn after the last clean unmount: %v\n%s", err, out)
	}
	t.Logf("powercut on %s: %d runs, %d kills, %d records checked, %d mounts replayed the journal, %d records at the end, %v",
		machine, runs, runs, checked, replays, g.boot.records, time.Since(start).Round(time.Second))
}

// guestRun is what one boot printed.
type guestRun struct {
	serial           string
	boot             struct{ records, cur int64 }
	lastRec, lastRep int64 // the last record and version printed; -1, 0: none
	replayed         bool  // the mount replayed the journal
}

// boot boots the guest on disk and kills QEMU delay after its first
// record, or (check) lets it check and exit.
func boot(t *testing.T, img, machine, disk string, delay time.Duration, check bool) *guestRun {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	g := &guestRun{lastRec: -1}
	g.boot.records = -1
	var mu sync.Mutex
	var serial bytes.Buffer
	var timer *time.Timer
	args := []string{"/mnt/pc"}
	if check {
		args = append(args, "check")
	}
	res, err := Run(ctx, Config{Image: img, Machine: machine, Memory: "128M", Args: args, Timeout: 3 * time.Minute,
		Disks:  []Disk{{File: disk, If: "virtio", GuestPath: "/mnt/pc"}},
		Stdout: &lockedWriter{&mu, &serial}, Stderr: &lockedWriter{&mu, &serial},
		OnLine: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			var n int64
			switch {
			case strings.Contains(line, "journal replayed"):
				g.replayed = true
			case sscan(line, "pc: boot records=%d cur=%d", &g.boot.records, &g.boot.cur):
			case sscan(line, "pc: rec %d", &n):
				g.lastRec = n
				if timer == nil && !check {
					timer = time.AfterFunc(delay, cancel) // SIGKILL
				}
			case sscan(line, "pc: rep %d", &n):
				g.lastRep = n
			}
		}})
	if timer != nil {
		timer.Stop()
	}
	mu.Lock()
	defer mu.Unlock()
	g.serial = serial.String()
	if check {
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("the check boot: %v %+v\n%s", err, res, g.serial)
		}
	} else if err != context.Canceled {
		t.Fatalf("the guest was to be killed; it ended: %v %+v\n%s", err, res, g.serial)
	}
	if strings.Contains(g.serial, "pc: bad") || strings.Contains(g.serial, "yolk: fault") {
		t.Fatalf("the guest failed:\n%s", g.serial)
	}
	return g
}

func sscan(line, format string, a ...any) bool {
	i := strings.Index(line, format[:strings.IndexByte(format, '%')])
	if i < 0 {
		return false
	}
	n, err := fmt.Sscanf(line[i:], format, a...)
	return err == nil && n == len(a)
}

// checkDisk judges a copy of disk after run's kill: the journal replayed
// by e2fsck, then clean; the records and cur as the guest printed them.
// It returns the number of records checked.
func checkDisk(t *testing.T, run int, disk string, g *guestRun) int {
	t.Helper()
	b, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cp := filepath.Join(dir, "copy.img")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("e2fsck", "-fy", "-E", "journal_only", cp).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			t.Fatalf("run %d: e2fsck's journal replay: %v\n%s", run, err, out)
		}
	}
	if out, err := exec.Command("e2fsck", "-fn", cp).CombinedOutput(); err != nil {
		t.Fatalf("run %d: e2fsck -fn after the kill and the journal's replay: %v\n%s\n%s", run, err, out, g.serial)
	}
	dump := func(name string) ([]byte, bool) {
		p := filepath.Join(dir, name)
		out, err := exec.Command("debugfs", "-R", "dump /"+name+" "+p, cp).CombinedOutput()
		if err != nil {
			t.Fatalf("debugfs dump %s: %v\n%s", name, err, out)
		}
		b, err := os.ReadFile(p)
		return b, err == nil && !strings.Contains(string(out), "not found")
	}
	log, _ := dump("log")
	n := int64(len(log) / 128)
	if n < g.lastRec+1 {
		t.Fatalf("run %d: %d records on the disk; record %d's fsync had returned\n%s", run, n, g.lastRec, g.serial)
	}
	rec := make([]byte, 128)
	for i := int64(0); i < n; i++ {
		pcFill(rec, uint64(i), 31)
		if !bytes.Equal(log[i*128:(i+1)*128], rec) {
			t.Fatalf("run %d: record %d holds bytes never written", run, i)
		}
	}
	if tail := log[n*128:]; len(tail) > 0 {
		pcFill(rec, uint64(n), 31)
		if !bytes.Equal(tail, rec[:len(tail)]) {
			t.Fatalf("run %d: the torn record %d holds bytes never written", run, n)
		}
	}
	cur, ok := dump("cur")
	if g.lastRep > 0 || g.boot.cur > 0 {
		want := max(g.lastRep, g.boot.cur)
		if !ok || len(cur) != 3000 {
			t.Fatalf("run %d: cur is %d bytes (found %v); version %d was printed", run, len(cur), ok, want)
		}
		v := int64(binary.LittleEndian.Uint64(cur))
		c := make([]byte, 3000)
		pcFill(c, uint64(v), 13)
		if (v != want && v != want+1) || !bytes.Equal(cur, c) {
			t.Fatalf("run %d: cur holds version %d (whole: %v); the last printed was %d", run, v, bytes.Equal(cur, c), want)
		}
	}
	return int(n)
}

// pcFill is testdata/powercut's fill.
func pcFill(b []byte, n uint64, salt byte) {
	binary.LittleEndian.PutUint64(b, n)
	for i := 8; i < len(b)-4; i++ {
		b[i] = byte(n)*salt + byte(i)*7 + byte(n>>8)
	}
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
}
