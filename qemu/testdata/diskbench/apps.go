package main

// Applications on the disk: SQLite (modernc.org/sqlite) inserts and
// bbolt (go.etcd.io/bbolt) puts, one per transaction (each a commit with
// its syncs) and batched in one transaction.

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite"
)

const (
	sqliteBatch = 10000 // rows inserted in the batched transaction
	boltBatch   = 5000  // keys put in the batched transaction
)

// sqliteInsert inserts rows into a new database in the rollback
// journal's mode (delete, SQLite's default) and in WAL mode: one
// transaction each until the budget has passed (at least 50), then
// sqliteBatch in one transaction.
func sqliteInsert(dir string) ([]result, error) {
	var rs []result
	for _, mode := range []string{"delete", "wal"} {
		if !want("SQLiteInsert/journal=" + mode) {
			continue
		}
		path := filepath.Join(dir, "sqlite-"+mode+".db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		r, err := sqliteRun(db, mode)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("journal=%s: %w", mode, err)
		}
		rs = append(rs, r...)
	}
	return rs, nil
}

func sqliteRun(db *sql.DB, mode string) ([]result, error) {
	var jm string
	if err := db.QueryRow("PRAGMA journal_mode=" + mode).Scan(&jm); err != nil || jm != mode {
		return nil, fmt.Errorf("journal_mode %q: %v", jm, err)
	}
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, v INTEGER NOT NULL)"); err != nil {
		return nil, err
	}
	name := func(i int) string { return fmt.Sprintf("row-%08d-%x", i, i*2654435761) }
	start := time.Now()
	n := 0
	for n < 5000 && (n < 50 || time.Since(start) < *budget) {
		if _, err := db.Exec("INSERT INTO t VALUES (?, ?, ?)", n, name(n), n*7); err != nil {
			return nil, err
		}
		n++
	}
	one := result{name: "SQLiteInsert/journal=" + mode + "/tx=1", n: n, d: time.Since(start)}
	start = time.Now()
	tx, err := db.Begin()
	if err != nil {
		return nil, err
	}
	st, err := tx.Prepare("INSERT INTO t VALUES (?, ?, ?)")
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	for i := n; i < n+sqliteBatch; i++ {
		if _, err := st.Exec(i, name(i), i*7); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	st.Close()
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	batch := result{name: fmt.Sprintf("SQLiteInsert/journal=%s/tx=%d", mode, sqliteBatch), n: sqliteBatch, d: time.Since(start)}
	var count int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&count); err != nil || count != n+sqliteBatch {
		return nil, fmt.Errorf("%d rows read back, want %d (%v)", count, n+sqliteBatch, err)
	}
	for _, r := range []*result{&one, &batch} {
		r.metrics = []metric{{float64(r.n) / r.d.Seconds(), "inserts/s"}}
	}
	return []result{one, batch}, nil
}

// boltPut puts keys into a new bbolt database, one transaction each
// until the budget has passed (at least 50), then boltBatch in one.
func boltPut(dir string) ([]result, error) {
	if !want("BboltPut") {
		return nil, nil
	}
	path := filepath.Join(dir, "bolt.db")
	os.Remove(path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	bucket := []byte("b")
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }
	value := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "value-%06d;", i), 4) }
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		return nil, err
	}
	start := time.Now()
	n := 0
	for n < 5000 && (n < 50 || time.Since(start) < *budget) {
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key(n), value(n)) }); err != nil {
			return nil, err
		}
		n++
	}
	one := result{name: "BboltPut/tx=1", n: n, d: time.Since(start)}
	start = time.Now()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for i := n; i < n+boltBatch; i++ {
			if err := b.Put(key(i), value(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	batch := result{name: fmt.Sprintf("BboltPut/tx=%d", boltBatch), n: boltBatch, d: time.Since(start)}
	err = db.View(func(tx *bolt.Tx) error {
		if got := tx.Bucket(bucket).Stats().KeyN; got != n+boltBatch {
			return fmt.Errorf("%d keys, want %d", got, n+boltBatch)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range []*result{&one, &batch} {
		r.metrics = []metric{{float64(r.n) / r.d.Seconds(), "puts/s"}}
	}
	return []result{one, batch}, db.Close()
}
