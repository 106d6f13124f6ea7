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
// it runs with YOLK_DISK_APPS=1 (make diskapps); YOLK_SQLITE_MODES=wal
// (a comma-separated list) runs only the modes named.
func TestDiskSQLite(t *testing.T) {
	if os.Getenv("YOLK_DISK_APPS") == "" {
		t.Skip("YOLK_DISK_APPS unset (make diskapps runs it)")
	}
	bench := regexp.MustCompile(`(?m)^Benchmark.*$`)
	onDiskMachines(t, "yolk/qemu/internal/sqlite", diskAppsTag, "64M", func(t *testing.T, r diskRig) {
		modes := []string{"delete", "wal", "walx"}
		if m := os.Getenv("YOLK_SQLITE_MODES"); m != "" {
			modes = strings.Split(m, ",") // a subset, e.g. wal
		}
		for _, mode := range modes {
			res, out := r.boot(t, Config{SMP: 2, Memory: "256M", Timeout: 10 * time.Minute, Args: []string{"/data", mode}})
			switch {
			case !res.TimedOut && res.ExitCode == 0 && strings.Contains(out, "sqlite: "+mode+" ok"):
				t.Logf("%s:\n%s", mode, strings.Join(bench.FindAllString(out, -1), "\n"))
			default:
				t.Errorf("sqlite %s: exit %d (timed out %v, %v)\n%s", mode, res.ExitCode, res.TimedOut, res.Messages, out)
			}
		}
	})
}
