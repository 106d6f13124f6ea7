//go:build yolk_diskapps

// Command sqlite is TestDiskSQLite's program: modernc.org/sqlite (SQLite
// translated to Go) on a file in DIR, a disk's mount. For each journal
// mode named (delete: the default rollback journal; wal: write-ahead
// log, which maps DIR/<db>-shm shared; walx: WAL in exclusive locking
// mode, which keeps the WAL index in memory instead) it creates a table,
// inserts 1,000 rows one transaction each and 10,000 in one transaction,
// queries them back, closes the database, opens it again and checks it
// once more. It prints the insert rates in Go's benchmark format, then
// "sqlite: MODE ok" per mode or "sqlite: MODE: ERROR" and exits 1.
//
//	sqlite DIR MODE...
//
// It builds only with the yolk_diskapps tag (diskAppsTag in qemu's tests):
// compiling modernc.org/sqlite takes about a minute per configuration,
// and make test's vets and hosted run would do it three times.
package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	_ "modernc.org/sqlite"
)

const (
	single = 1000  // rows inserted one transaction each
	batch  = 10000 // rows inserted in one transaction
)

func main() {
	if len(os.Args) < 3 {
		fmt.Println("usage: sqlite DIR MODE...")
		os.Exit(2)
	}
	failed := false
	for _, mode := range os.Args[2:] {
		if err := run(filepath.Join(os.Args[1], mode+".db"), mode); err != nil {
			fmt.Printf("sqlite: %s: %v\n", mode, err)
			failed = true
			continue
		}
		fmt.Printf("sqlite: %s ok\n", mode)
	}
	if failed {
		os.Exit(1)
	}
}

// open opens the database at path in mode. The pragmas run on the one
// connection in this order (the driver's _pragma parameters run sorted by
// name, which would put journal_mode before locking_mode: walx must
// have exclusive locking before its first access to the WAL, or SQLite
// maps the -shm file after all).
func open(path, mode string) (*sql.DB, error) {
	pragmas := map[string][]string{
		"delete": {"journal_mode=DELETE"},
		"wal":    {"journal_mode=WAL"},
		"walx":   {"locking_mode=EXCLUSIVE", "journal_mode=WAL"},
	}
	ps, ok := pragmas[mode]
	if !ok {
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection, kept: the pragmas hold on it
	db.SetConnMaxLifetime(0)
	for _, p := range ps {
		if _, err := db.Exec("PRAGMA " + p); err != nil {
			db.Close()
			return nil, fmt.Errorf("PRAGMA %s: %w", p, err)
		}
	}
	var jm string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&jm); err != nil {
		db.Close()
		return nil, fmt.Errorf("PRAGMA journal_mode: %w", err)
	}
	if want := map[string]string{"delete": "delete", "wal": "wal", "walx": "wal"}[mode]; jm != want {
		db.Close()
		return nil, fmt.Errorf("journal_mode is %q, want %q", jm, want)
	}
	return db, nil
}

func run(path, mode string) error {
	os.Remove(path)
	db, err := open(path, mode)
	if err != nil {
		return err
	}
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, v INTEGER NOT NULL)"); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	start := time.Now()
	for i := range single {
		if _, err := db.Exec("INSERT INTO t VALUES (?, ?, ?)", i, name(i), i*7); err != nil {
			return fmt.Errorf("insert %d: %w", i, err)
		}
	}
	report(mode, "tx=1", single, time.Since(start))
	start = time.Now()
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	st, err := tx.Prepare("INSERT INTO t VALUES (?, ?, ?)")
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	for i := single; i < single+batch; i++ {
		if _, err := st.Exec(i, name(i), i*7); err != nil {
			return fmt.Errorf("insert %d: %w", i, err)
		}
	}
	st.Close()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	report(mode, fmt.Sprintf("tx=%d", batch), batch, time.Since(start))
	if err := check(db); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if db, err = open(path, mode); err != nil {
		return fmt.Errorf("reopening: %w", err)
	}
	if err := check(db); err != nil {
		return fmt.Errorf("after reopening: %w", err)
	}
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		return fmt.Errorf("integrity_check: %q, %v", ok, err)
	}
	return db.Close()
}

func name(i int) string { return fmt.Sprintf("row-%08d-%x", i, i*2654435761) }

// check queries every row back.
func check(db *sql.DB) error {
	const n = single + batch
	var count, sum int
	if err := db.QueryRow("SELECT count(*), sum(v) FROM t").Scan(&count, &sum); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	if count != n || sum != 7*n*(n-1)/2 {
		return fmt.Errorf("%d rows summing to %d, want %d and %d", count, sum, n, 7*n*(n-1)/2)
	}
	rows, err := db.Query("SELECT id, name, v FROM t ORDER BY id")
	if err != nil {
		return fmt.Errorf("select: %w", err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var id, v int
		var s string
		if err := rows.Scan(&id, &s, &v); err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		if id != i || s != name(i) || v != i*7 {
			return fmt.Errorf("row %d is (%d, %q, %d)", i, id, s, v)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("rows: %w", err)
	}
	if i != n {
		return fmt.Errorf("%d rows read back, want %d", i, n)
	}
	return nil
}

// report prints a benchmark line: n inserts in d.
func report(mode, tx string, n int, d time.Duration) {
	fmt.Printf("BenchmarkSQLiteInsert/journal=%s/%s-%d\t%d\t%d ns/op\t%.0f inserts/s\n",
		mode, tx, runtime.GOMAXPROCS(0), n, d.Nanoseconds()/int64(n), float64(n)/d.Seconds())
}
