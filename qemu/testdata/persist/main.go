// Command persist is TestDiskPersistence's program: state on an ext4
// disk that must outlive the machine. It keeps two files in DIR (the
// disk's mount):
//
//	DIR/log    one line per record, appended and fsynced one by one
//	DIR/state  the last record's number, replaced whole each time
//	           (written to state.tmp, fsynced, renamed over state, the
//	           directory fsynced: the atomic-replace pattern)
//
// persist write DIR FROM TO checks that the log holds records [0, FROM)
// and the state says FROM-1, then writes records [FROM, TO); persist read
// DIR N checks that the log holds exactly records [0, N) and the state
// says N-1. It prints "persist: ok" and exits 0, or says what is wrong
// and exits 1.
//
// persist unsynced DIR writes DIR/unsynced (64 KiB) and a directory
// DIR/unsynced.d with a file in it, without any fsync, prints "persist:
// unsynced written" and sleeps (TestDiskCommitInterval kills the machine
// seconds later); persist unsynced-check DIR checks they are there.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 3 || len(os.Args) < 4 && os.Args[1] != "unsynced" && os.Args[1] != "unsynced-check" {
		fail("usage: persist write DIR FROM TO | persist read DIR N | persist unsynced DIR | persist unsynced-check DIR")
	}
	dir := os.Args[2]
	switch os.Args[1] {
	case "unsynced":
		unsynced(dir)
		return
	case "unsynced-check":
		unsyncedCheck(dir)
		fmt.Println("persist: ok")
		return
	}
	from := atoi(os.Args[3])
	check(dir, from)
	if os.Args[1] == "write" {
		write(dir, from, atoi(os.Args[4]))
	}
	fmt.Println("persist: ok")
}

func record(i int) string { return fmt.Sprintf("record %06d %x\n", i, i*2654435761) }

// check fails unless dir's log holds records [0, n) and its state n-1.
func check(dir string, n int) {
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if n == 0 && os.IsNotExist(err) {
		return
	}
	if err != nil {
		fail("reading the log: %v", err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != n {
		fail("the log holds %d records (%d bytes), want %d", len(lines), len(b), n)
	}
	for i, l := range lines {
		if string(l) != record(i) {
			fail("record %d is %q, want %q", i, l, record(i))
		}
	}
	s, err := os.ReadFile(filepath.Join(dir, "state"))
	if err != nil || string(s) != fmt.Sprintf("last %d\n", n-1) {
		fail("the state is %q, %v; want last %d", s, err, n-1)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.tmp")); !os.IsNotExist(err) {
		fail("state.tmp is there: %v", err)
	}
}

// write appends records [from, to) to dir's log, each fsynced, and
// replaces the state after each.
func write(dir string, from, to int) {
	log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail("opening the log: %v", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		fail("opening %s: %v", dir, err)
	}
	tmp, state := filepath.Join(dir, "state.tmp"), filepath.Join(dir, "state")
	for i := from; i < to; i++ {
		if _, err := log.WriteString(record(i)); err != nil {
			fail("appending record %d: %v", i, err)
		}
		if err := log.Sync(); err != nil {
			fail("fsync of the log: %v", err)
		}
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			fail("creating %s: %v", tmp, err)
		}
		if _, err := fmt.Fprintf(f, "last %d\n", i); err != nil {
			fail("writing %s: %v", tmp, err)
		}
		if err := f.Sync(); err != nil {
			fail("fsync of %s: %v", tmp, err)
		}
		if err := f.Close(); err != nil {
			fail("close: %v", err)
		}
		if err := os.Rename(tmp, state); err != nil {
			fail("rename: %v", err)
		}
		if err := d.Sync(); err != nil {
			fail("fsync of %s: %v", dir, err)
		}
	}
	if err := log.Close(); err != nil {
		fail("closing the log: %v", err)
	}
	d.Close()
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("%q: %v", s, err)
	}
	return n
}

func fail(format string, args ...any) {
	fmt.Printf("persist: "+format+"\n", args...)
	os.Exit(1)
}

// unsyncedData is what unsynced writes.
func unsyncedData() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// unsynced writes files and a directory without fsync and waits to be
// killed: only the kernel's periodic commit can make them durable.
func unsynced(dir string) {
	if err := os.WriteFile(filepath.Join(dir, "unsynced"), unsyncedData(), 0o644); err != nil {
		fail("writing: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "unsynced.d"), 0o755); err != nil {
		fail("mkdir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "unsynced.d", "f"), []byte("in a directory\n"), 0o644); err != nil {
		fail("writing: %v", err)
	}
	fmt.Println("persist: unsynced written")
	time.Sleep(10 * time.Minute)
	fail("not killed")
}

// unsyncedCheck fails unless unsynced's files are there, whole.
func unsyncedCheck(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "unsynced"))
	if err != nil || !bytes.Equal(b, unsyncedData()) {
		fail("unsynced: %d bytes, %v; want its 64 KiB", len(b), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "unsynced.d", "f")); err != nil || string(b) != "in a directory\n" {
		fail("unsynced.d/f: %q, %v", b, err)
	}
}
