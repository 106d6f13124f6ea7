// Command bbcommit is bbolt's TestDB_Open_InitialMmapSize steps as a
// program (docs/disks.md): open a database in the directory named last
// with a 1 GiB initial mapping, put one 128 MiB value and commit it; it
// prints the commit's time in Go's benchmark format. For comparing the
// commit on yolk and Linux (qemu/linuxref) and with GODEBUG settings.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

func main() {
	dir := os.Args[len(os.Args)-1]
	for _, readTx := range []bool{false} {
		path := filepath.Join(dir, fmt.Sprintf("big-%v.db", readTx))
		os.Remove(path)
		db, err := bolt.Open(path, 0o600, &bolt.Options{InitialMmapSize: 1 << 30})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		var rtx *bolt.Tx
		if readTx {
			rtx, _ = db.Begin(false)
		}
		wtx, _ := db.Begin(true)
		b, _ := wtx.CreateBucket([]byte("test"))
		t0 := time.Now()
		if err := b.Put([]byte("foo"), make([]byte, 1<<27)); err != nil {
			fmt.Println("put:", err)
			os.Exit(1)
		}
		t1 := time.Now()
		if err := wtx.Commit(); err != nil {
			fmt.Println("commit:", err)
			os.Exit(1)
		}
		t2 := time.Now()
		if rtx != nil {
			rtx.Rollback()
		}
		db.Close()
		fmt.Printf("BenchmarkBboltBigCommit/readtx=%v 1 %d ns/op %d put-ns\n", readTx, t2.Sub(t1).Nanoseconds(), t1.Sub(t0).Nanoseconds())
	}
}
