package qemu

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDiskSQLite: modernc.org/sqlite on an ext4 disk (the program is
// qemu/internal/sqlite, outside testdata so that go mod tidy keeps its
// module): a table, 1,000 inserts one transaction each and 10,000 in one, read
// back, the database closed, opened again and checked, in the rollback
// journal's mode (delete), in WAL mode with its shared-memory index (wal:
// SQLite maps the -shm file) and in WAL mode with exclusive locking
// (walx: the index in the process's memory). Each mode is its own boot on
// one image, judged by e2fsck -fn after it. The insert rates are logged
// in Go's benchmark format (docs/disks.md). It takes minutes under TCG:
// it runs with YOLK_DISK_APPS=1 (make diskapps).
func TestDiskSQLite(t *testing.T) {
	if os.Getenv("YOLK_DISK_APPS") == "" {
		t.Skip("YOLK_DISK_APPS unset (make diskapps runs it)")
	}
	bench := regexp.MustCompile(`(?m)^Benchmark.*$`)
	onDiskMachines(t, "yolk/qemu/internal/sqlite", "64M", func(t *testing.T, r diskRig) {
		for _, mode := range []string{"delete", "wal", "walx"} {
			res, out := r.boot(t, Config{SMP: 2, Memory: "256M", Timeout: 10 * time.Minute, Args: []string{"/data", mode}})
			switch {
			case !res.TimedOut && res.ExitCode == 0 && strings.Contains(out, "sqlite: "+mode+" ok"):
				t.Logf("%s:\n%s", mode, strings.Join(bench.FindAllString(out, -1), "\n"))
			case mode == "wal" && walNoMmap.MatchString(out):
				// Disk files have no mmap yet (kernel/disks.go's
				// diskOps): SQLite cannot map its -shm file.
				t.Logf("wal: %s (disk files have no mmap yet)", walNoMmap.FindString(out))
			default:
				t.Errorf("sqlite %s: exit %d (timed out %v, %v)\n%s", mode, res.ExitCode, res.TimedOut, res.Messages, out)
			}
		}
	})
}

// walNoMmap is what the program says when WAL mode fails for want of a
// shared mapping of the -shm file: SQLITE_IOERR_SHMMAP (5386) at the
// first write.
var walNoMmap = regexp.MustCompile(`sqlite: wal: .*\(5386\)`)
