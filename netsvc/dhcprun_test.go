package netsvc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestResolvConfAtomic: a reader that rereads resolv.conf while leases
// come and go (as Go's resolver does when the file changes) always finds
// a whole file, never an empty or half-written one, and no temporary
// file is left behind.
func TestResolvConfAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	lease := &Lease{DNS: [][4]byte{{10, 0, 2, 3}, {10, 0, 2, 4}}, Domain: "example.internal", Search: []string{"a.example", "b.example"}}
	writeResolvConf(path, lease)
	var done atomic.Bool
	errs := make(chan string, 1)
	go func() {
		defer close(errs)
		for !done.Load() {
			b, err := os.ReadFile(path)
			if err != nil || !strings.HasPrefix(string(b), "# DHCP (yolk netsvc)\n") || !strings.HasSuffix(string(b), "\n") {
				errs <- fmt.Sprintf("%q (%v)", b, err)
				return
			}
			if strings.Contains(string(b), "10.0.2.3") && !strings.HasSuffix(string(b), "search example.internal a.example b.example\n") {
				errs <- fmt.Sprintf("half a file: %q", b)
				return
			}
		}
	}()
	for i := 0; i < 2000; i++ {
		if i%2 == 0 {
			writeResolvConf(path, nil)
		} else {
			writeResolvConf(path, lease)
		}
	}
	done.Store(true)
	if e, ok := <-errs; ok {
		t.Fatalf("a reader found resolv.conf as %s", e)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("%s.tmp is left: %v", path, err)
	}
}
