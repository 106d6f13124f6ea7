package main

// Durability and metadata: fsync latency, files created and deleted.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// fsyncLatency appends 4 KiB to a new file and fsyncs it (the file
// grows: a metadata change each time), then overwrites 4 KiB in place
// and fdatasyncs it (a database's commit on a file it made large enough);
// the p50 and p99 of the syncs alone, ns/op of write and sync together.
func fsyncLatency(dir string) ([]result, error) {
	b := make([]byte, page)
	for i := range b {
		b[i] = byte(i)
	}
	var rs []result
	for _, kind := range []string{"append4K", "overwrite4K"} {
		if !want("Fsync/" + kind) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, "fsync-"+kind), os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if kind == "overwrite4K" {
			// The block to overwrite, written and synced before the clock.
			if _, err := f.Write(b); err != nil {
				f.Close()
				return nil, err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return nil, err
			}
		}
		var lat []time.Duration
		start := time.Now()
		for len(lat) < 2000 && (len(lat) < 100 || time.Since(start) < *budget) {
			b[0] = byte(len(lat))
			var err error
			if kind == "append4K" {
				_, err = f.Write(b)
			} else {
				_, err = f.WriteAt(b, 0)
			}
			if err != nil {
				f.Close()
				return nil, err
			}
			t := time.Now()
			if kind == "append4K" {
				err = f.Sync()
			} else {
				err = fdatasync(f)
			}
			if err != nil {
				f.Close()
				return nil, err
			}
			lat = append(lat, time.Since(t))
		}
		d := time.Since(start)
		if err := f.Close(); err != nil {
			return nil, err
		}
		slices.Sort(lat)
		pct := func(p int) float64 { return float64(lat[(len(lat)-1)*p/100].Nanoseconds()) }
		rs = append(rs, result{name: "Fsync/" + kind, n: len(lat), d: d,
			metrics: []metric{{pct(50), "p50-ns"}, {pct(99), "p99-ns"}}})
	}
	return rs, nil
}

// createDelete creates empty files in a new directory (open with O_CREAT
// and O_EXCL, close) until the budget's half has passed, then deletes
// them all: ns/op is one file's create and delete together.
func createDelete(dir string) ([]result, error) {
	if !want("CreateDelete") {
		return nil, nil
	}
	d := filepath.Join(dir, "cd")
	if err := os.Mkdir(d, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	n := 0
	for n < 20000 && (n < 100 || time.Since(start) < *budget/2) {
		f, err := os.OpenFile(filepath.Join(d, fmt.Sprintf("f%06d", n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		n++
	}
	created := time.Since(start)
	for i := range n {
		if err := os.Remove(filepath.Join(d, fmt.Sprintf("f%06d", i))); err != nil {
			return nil, err
		}
	}
	all := time.Since(start)
	if err := os.Remove(d); err != nil {
		return nil, err
	}
	return []result{{name: "CreateDelete", n: n, d: all, metrics: []metric{
		{float64(n) / all.Seconds(), "files/s"},
		{float64(created.Nanoseconds()) / float64(n), "create-ns"},
		{float64((all - created).Nanoseconds()) / float64(n), "delete-ns"}}}}, nil
}
