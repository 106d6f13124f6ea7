//go:build yolk_diskapps

// Command bbolt is TestDiskBbolt's program: go.etcd.io/bbolt on a file
// in DIR, a disk's mount. bbolt writes its pages with pwrite and
// fdatasync and reads them through a read-only MAP_SHARED mapping of the
// file, which it grows and maps again as the database grows: the
// mapping must see the writes made after mmap. It opens the database,
// puts 2,000 keys one transaction each and 20,000 in one (the file
// grows past its first mappings), reads every key back, closes, opens
// again and reads them once more. It prints the put rates in Go's
// benchmark format, then "bbolt: ok", or "bbolt: ERROR" and exits 1.
//
//	bbolt DIR
//
// It builds only with the yolk_diskapps tag (diskAppsTag in qemu's tests):
// make test's vets and hosted run leave it out.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	single = 2000  // keys put one transaction each
	batch  = 20000 // keys put in one transaction
)

var bucket = []byte("b")

func key(i int) []byte   { return fmt.Appendf(nil, "key-%06d", i) }
func value(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "value-%06d;", i), 4) }

func main() {
	if len(os.Args) != 2 {
		fmt.Println("usage: bbolt DIR")
		os.Exit(2)
	}
	if err := run(filepath.Join(os.Args[1], "bolt.db")); err != nil {
		fmt.Printf("bbolt: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("bbolt: ok")
}

func run(path string) error {
	os.Remove(path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	start := time.Now()
	for i := 0; i < single; i++ {
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key(i), value(i)) }); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
	}
	report("tx=1", single, time.Since(start))
	start = time.Now()
	if err := db.Update(func(tx *bolt.Tx) error {
		for i := single; i < single+batch; i++ {
			if err := tx.Bucket(bucket).Put(key(i), value(i)); err != nil {
				return fmt.Errorf("put %d: %w", i, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	report(fmt.Sprintf("tx=%d", batch), batch, time.Since(start))
	if err := check(db); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer db.Close()
	if err := check(db); err != nil {
		return fmt.Errorf("after reopening: %w", err)
	}
	return db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("check: %w", err)
		}
		return nil
	})
}

// check reads every key back.
func check(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return fmt.Errorf("no bucket")
		}
		n := 0
		for i := 0; i < single+batch; i++ {
			if v := b.Get(key(i)); !bytes.Equal(v, value(i)) {
				return fmt.Errorf("key %d: %q", i, v)
			}
			n++
		}
		if st := b.Stats(); st.KeyN != n {
			return fmt.Errorf("%d keys, want %d", st.KeyN, n)
		}
		return nil
	})
}

func report(name string, n int, d time.Duration) {
	fmt.Printf("BenchmarkBboltPut/%s-%d\t%d\t%d ns/op\t%.0f puts/s\n", name, runtime.GOMAXPROCS(0), n, d.Nanoseconds()/int64(n), float64(n)/d.Seconds())
}
