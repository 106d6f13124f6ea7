package main

// File data: sequential reads and writes of 1 MiB, random 4 KiB reads
// and writes with O_DIRECT at queue depth 1 and 32.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	mib      = 1 << 20
	page     = 4096
	dataName = "data"
	dataMiB  = 32 // DIR/data's size when this program makes it
)

// alignedBuf is n bytes of anonymous memory, page-aligned as O_DIRECT
// wants.
func alignedBuf(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

// dataFile returns DIR/data's path and size, making it (dataMiB of
// pseudo-random bytes, fsynced) when the image did not bring it.
func dataFile(dir string) (string, int64, error) {
	p := filepath.Join(dir, dataName)
	if st, err := os.Stat(p); err == nil && st.Size() >= mib {
		return p, st.Size() &^ (page - 1), nil
	}
	fmt.Printf("diskbench: %s missing: writing %d MiB\n", p, dataMiB)
	f, err := os.Create(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	b := make([]byte, mib)
	r := rand.New(rand.NewPCG(1, 2))
	for range dataMiB {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if _, err := f.Write(b); err != nil {
			return "", 0, err
		}
	}
	return p, dataMiB * mib, f.Sync()
}

// seqRead reads DIR/data from start to end in 1 MiB reads twice: cold
// (nothing of it cached yet in this boot) and warm.
func seqRead(dir string) ([]result, error) {
	p, size, err := dataFile(dir)
	if err != nil {
		return nil, err
	}
	b, err := alignedBuf(mib)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(b)
	var rs []result
	for _, name := range []string{"cold", "warm"} {
		if !want("SeqRead/" + name) {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		var n int64
		for n < size {
			k, err := f.Read(b)
			n += int64(k)
			if err != nil || k == 0 {
				f.Close()
				return nil, fmt.Errorf("read at %d of %d: %v", n, size, err)
			}
		}
		d := time.Since(start)
		f.Close()
		rs = append(rs, result{name: "SeqRead/" + name, n: int(size / mib), d: d, bytes: mib})
	}
	return rs, nil
}

// seqWrite writes -seq MiB to a new file in 1 MiB writes (fewer, at
// least 4, once the budget has passed) and fsyncs it: the time to the
// fsync's return.
func seqWrite(dir string) ([]result, error) {
	if !want("SeqWrite") {
		return nil, nil
	}
	b, err := alignedBuf(mib)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(b)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	p := filepath.Join(dir, "seq")
	start := time.Now()
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < *seqMiB && (n < 4 || time.Since(start) < *budget) {
		if _, err := f.Write(b); err != nil {
			f.Close()
			return nil, err
		}
		n++
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	d := time.Since(start)
	if err := f.Close(); err != nil {
		return nil, err
	}
	return []result{{name: "SeqWrite", n: n, d: d, bytes: mib}}, nil
}

func randRead(dir string) ([]result, error)  { return randIO(dir, false) }
func randWrite(dir string) ([]result, error) { return randIO(dir, true) }

// randIO reads or writes 4 KiB at random 4 KiB-aligned offsets of
// DIR/data opened with O_DIRECT, at queue depth 1 and 32.
func randIO(dir string, write bool) ([]result, error) {
	p, size, err := dataFile(dir)
	if err != nil {
		return nil, err
	}
	mode := os.O_RDONLY
	name := "RandRead4K"
	if write {
		mode, name = os.O_RDWR, "RandWrite4K"
	}
	f, err := os.OpenFile(p, mode|unix.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks := uint64(size / page)
	var rs []result
	for _, qd := range []int{1, 32} {
		if !want(fmt.Sprintf("%s/qd=%d", name, qd)) {
			continue
		}
		bufs := make([][]byte, qd)
		for i := range bufs {
			if bufs[i], err = alignedBuf(page); err != nil {
				return nil, err
			}
			for j := range bufs[i] {
				bufs[i][j] = byte(i + j)
			}
		}
		rngs := make([]*rand.Rand, qd)
		for i := range rngs {
			rngs[i] = rand.New(rand.NewPCG(uint64(qd), uint64(i)))
		}
		n, d, err := parallel(qd, 200, 20000, func(w int) error {
			off := int64(rngs[w].Uint64N(blocks)) * page
			var k int
			var err error
			if write {
				k, err = f.WriteAt(bufs[w], off)
			} else {
				k, err = f.ReadAt(bufs[w], off)
			}
			if err == nil && k != page {
				err = fmt.Errorf("%d bytes at %d", k, off)
			}
			return err
		})
		for _, b := range bufs {
			unix.Munmap(b)
		}
		if err != nil {
			return nil, fmt.Errorf("queue depth %d: %w", qd, err)
		}
		rs = append(rs, result{name: fmt.Sprintf("%s/qd=%d", name, qd), n: n, d: d, bytes: page,
			metrics: []metric{{float64(n) / d.Seconds(), "IOPS"}}})
	}
	return rs, nil
}

// parallel runs op on qd goroutines (op's argument: the goroutine's
// index) until min operations are done and the budget has passed, or
// max are: the operations done and the time they took. A goroutine
// that finds the count done gives its claim back.
func parallel(qd, min, max int, op func(w int) error) (int, time.Duration, error) {
	var next atomic.Int64
	var stop atomic.Bool
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(*budget)
	for w := range qd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := next.Add(1)
				if i > int64(max) || (i > int64(min) && time.Now().After(deadline)) {
					stop.Store(true)
					next.Add(-1)
					return
				}
				if err := op(w); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return int(next.Load()), time.Since(start), firstErr
}
