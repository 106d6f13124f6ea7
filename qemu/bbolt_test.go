package qemu

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDiskBbolt: go.etcd.io/bbolt on an ext4 disk (the program is
// qemu/internal/bbolt): open, 2,000 puts one transaction each and 20,000
// in one, every key read back, closed, opened again and read and checked
// (tx.Check) once more; e2fsck -fn clean after. bbolt reads its pages
// through a read-only MAP_SHARED mapping of the file and writes them
// with pwrite: the disk's page cache keeps the two coherent
// (docs/disks.md). The put rates are logged in Go's benchmark format.
// It takes minutes under TCG: it runs with YOLK_DISK_APPS=1 (make
// diskapps).
func TestDiskBbolt(t *testing.T) {
	if os.Getenv("YOLK_DISK_APPS") == "" {
		t.Skip("YOLK_DISK_APPS unset (make diskapps runs it)")
	}
	bench := regexp.MustCompile(`(?m)^Benchmark.*$`)
	onDiskMachines(t, "yolk/qemu/internal/bbolt", diskAppsTag, "64M", func(t *testing.T, r diskRig) {
		res, out := r.boot(t, Config{SMP: 2, Memory: "256M", Timeout: 10 * time.Minute, Args: []string{"/data"}})
		if res.TimedOut || res.ExitCode != 0 || !strings.Contains(out, "bbolt: ok") {
			t.Fatalf("bbolt: exit %d (timed out %v, %v)\n%s", res.ExitCode, res.TimedOut, res.Messages, out)
		}
		t.Logf("\n%s", strings.Join(bench.FindAllString(out, -1), "\n"))
	})
}
