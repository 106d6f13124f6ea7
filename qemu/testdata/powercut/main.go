// Command powercut is TestPowerCut's guest (qemu/powercut_test.go): on
// the ext4 disk at its first argument it appends fixed-size records —
// a sequence number, bytes derived from it, a CRC-32 — with an fsync
// after each, printing "pc: rec N" once record N's fsync returned; after
// every fourth record it replaces file "cur" atomically (the new version
// written to "tmp", fsynced, renamed over "cur", the directory fsynced)
// and prints "pc: rep V". At start it checks what an earlier run left
// (every record whole and in order, a torn last one dropped; "cur" one
// whole version) and goes on from there. It never stops by itself: the
// test kills the machine. With a second argument "check" it only checks,
// prints "pc: ok", and exits (the disk unmounted cleanly).
package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// RecSize and CurSize are the sizes of a record and of cur's contents.
const (
	RecSize = 128
	CurSize = 3000
)

// fill is the record (or cur version) n of size bytes: n, bytes derived
// from n and salt, and the CRC-32 of those in the last four.
func fill(b []byte, n uint64, salt byte) {
	binary.LittleEndian.PutUint64(b, n)
	for i := 8; i < len(b)-4; i++ {
		b[i] = byte(n)*salt + byte(i)*7 + byte(n>>8)
	}
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
}

func fail(f string, a ...any) {
	fmt.Printf("pc: bad: "+f+"\n", a...)
	os.Exit(1)
}

func main() {
	dir := os.Args[1]
	logPath, cur, tmp := filepath.Join(dir, "log"), filepath.Join(dir, "cur"), filepath.Join(dir, "tmp")
	lf, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fail("open log: %v", err)
	}
	old, err := os.ReadFile(logPath)
	if err != nil {
		fail("read log: %v", err)
	}
	n := uint64(len(old) / RecSize)
	want := make([]byte, RecSize)
	for i := uint64(0); i < n; i++ {
		fill(want, i, 31)
		if string(old[i*RecSize:(i+1)*RecSize]) != string(want) {
			fail("record %d", i)
		}
	}
	if tail := old[n*RecSize:]; len(tail) > 0 {
		fill(want, n, 31)
		if string(tail) != string(want[:len(tail)]) {
			fail("torn record %d", n)
		}
		if err := lf.Truncate(int64(n * RecSize)); err != nil {
			fail("truncate: %v", err)
		}
	}
	v := uint64(0)
	if b, err := os.ReadFile(cur); err == nil {
		v = binary.LittleEndian.Uint64(b)
		c := make([]byte, CurSize)
		fill(c, v, 13)
		if string(b) != string(c) {
			fail("cur (%d bytes)", len(b))
		}
	} else if !os.IsNotExist(err) {
		fail("read cur: %v", err)
	}
	fmt.Printf("pc: boot records=%d cur=%d\n", n, v)
	if len(os.Args) > 2 && os.Args[2] == "check" {
		fmt.Println("pc: ok")
		return
	}
	d, err := os.Open(dir)
	if err != nil {
		fail("open dir: %v", err)
	}
	rec := make([]byte, RecSize)
	c := make([]byte, CurSize)
	for ; ; n++ {
		fill(rec, n, 31)
		if _, err := lf.WriteAt(rec, int64(n*RecSize)); err != nil {
			fail("write: %v", err)
		}
		if err := lf.Sync(); err != nil {
			fail("fsync: %v", err)
		}
		fmt.Printf("pc: rec %d\n", n)
		if n%4 != 3 {
			continue
		}
		v++
		fill(c, v, 13)
		if err := os.WriteFile(tmp, c, 0o644); err != nil {
			fail("write tmp: %v", err)
		}
		tf, err := os.OpenFile(tmp, os.O_RDWR, 0)
		if err == nil {
			err = tf.Sync()
			tf.Close()
		}
		if err != nil {
			fail("fsync tmp: %v", err)
		}
		if err := os.Rename(tmp, cur); err != nil {
			fail("rename: %v", err)
		}
		if err := d.Sync(); err != nil {
			fail("fsync dir: %v", err)
		}
		fmt.Printf("pc: rep %d\n", v)
	}
}
