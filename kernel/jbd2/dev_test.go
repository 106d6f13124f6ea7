package jbd2

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"
	"unsafe"

	"yolk/kernel/abi"
)

// memDev is a disk in memory with a volatile write cache: writes since
// the last flush are pending and reach the durable image at a flush. A
// crash (crashAfter operations, writes and flushes counted) drops every
// later write and flush, and powerCut keeps all, none or a seeded random
// subset of the pending ones, as a power cut with a write-back cache
// may.
type memDev struct {
	t       testing.TB
	disk    []byte
	pending []pwrite
	journal []uint64 // the journal's logical block → device block

	writes, flushes int
	ops             int // writes and flushes
	crashAfter      int // ops before the power goes; -1: never
	crashed         bool
	reads           int
	readLimit       int // >0: fail the test past this many reads
}

type pwrite struct {
	off  uint64
	data []byte
}

func newMemDev(t testing.TB, img []byte, journal []uint64) *memDev {
	return &memDev{t: t, disk: img, journal: journal, crashAfter: -1}
}

// tenv is the tests' Env: the device and the journal's map.
type tenv struct{ d *memDev }

func (e tenv) ReadAt(b []byte, off uint64) abi.Errno {
	d := e.d
	if len(b)%512 != 0 || off%512 != 0 {
		d.t.Fatalf("read of %d bytes at %d: not whole sectors", len(b), off)
	}
	if off+uint64(len(b)) > uint64(len(d.disk)) {
		d.t.Fatalf("read of %d bytes at %d past the device's %d", len(b), off, len(d.disk))
	}
	d.reads++
	if d.readLimit > 0 && d.reads > d.readLimit {
		d.t.Fatalf("more than %d reads", d.readLimit)
	}
	copy(b, d.disk[off:])
	for _, w := range d.pending {
		overlay(b, off, w)
	}
	return 0
}

func overlay(b []byte, off uint64, w pwrite) {
	lo, hi := max(off, w.off), min(off+uint64(len(b)), w.off+uint64(len(w.data)))
	if lo < hi {
		copy(b[lo-off:hi-off], w.data[lo-w.off:hi-w.off])
	}
}

func (e tenv) WriteAt(b []byte, off uint64) abi.Errno {
	d := e.d
	if len(b)%512 != 0 || off%512 != 0 {
		d.t.Fatalf("write of %d bytes at %d: not whole sectors", len(b), off)
	}
	if off+uint64(len(b)) > uint64(len(d.disk)) {
		return EIO
	}
	if d.crashed {
		return 0 // the power is off: the write goes nowhere
	}
	if d.crashAfter >= 0 && d.ops >= d.crashAfter {
		d.crashed = true
		return 0
	}
	d.writes++
	d.ops++
	d.pending = append(d.pending, pwrite{off, bytes.Clone(b)})
	return 0
}

func (e tenv) Flush() abi.Errno {
	d := e.d
	if d.crashed {
		return 0
	}
	if d.crashAfter >= 0 && d.ops >= d.crashAfter {
		d.crashed = true
		return 0
	}
	d.flushes++
	d.ops++
	for _, w := range d.pending {
		copy(d.disk[w.off:], w.data)
	}
	d.pending = d.pending[:0]
	return 0
}

func (e tenv) JournalBlock(n uint32) (uint64, bool) {
	if int(n) >= len(e.d.journal) {
		return 0, false
	}
	return e.d.journal[n], true
}

// powerCut ends the device's life: the pending writes each reach the
// disk or not, at random (seeded), in their order.
func (d *memDev) powerCut(r *rand.Rand, keep int) {
	for _, w := range d.pending {
		switch {
		case keep == 1, keep == 0 && r.Intn(2) == 0:
			copy(d.disk[w.off:], w.data)
		}
	}
	d.pending = nil
	d.crashed = true
}

// block is the device block n of size bs.
func (d *memDev) block(n uint64, bs int) []byte {
	return d.disk[n*uint64(bs) : (n+1)*uint64(bs)]
}

// makeJournal lays a fresh journal superblock (v2, the given incompat
// features, s_start 0, sequence seq) into block j[0] of img.
func makeJournal(img []byte, bs int, j []uint64, incompat uint32, seq uint32) {
	b := make([]byte, sbSize)
	be.PutUint32(b, Magic)
	be.PutUint32(b[headerBlockType:], blockSuperV2)
	be.PutUint32(b[sbBlockSize:], uint32(bs))
	be.PutUint32(b[sbMaxLen:], uint32(len(j)))
	be.PutUint32(b[sbFirst:], 1)
	be.PutUint32(b[sbSequence:], seq)
	be.PutUint32(b[sbIncompat:], incompat)
	be.PutUint32(b[sbNrUsers:], 1)
	copy(b[sbUUID:], "yolk-jbd2-test!!")
	if incompat&(FeatureCsumV2|FeatureCsumV3) != 0 {
		b[sbChecksumType] = crc32cChksum
		be.PutUint32(b[sbChecksum:], superCsum(b))
	}
	copy(img[j[0]*uint64(bs):], b)
}

// pageBuf is a block-sized buffer whose address Add takes; the slice
// keeps it alive. Make one with newPageBuf: on the heap, where it does
// not move (a goroutine's stack is copied when it grows, and the
// uintptr Add took would point at the old copy).
type pageBuf []byte

var (
	heapMu   sync.Mutex
	heapBufs []pageBuf
)

func newPageBuf(n int) pageBuf {
	b := pageBuf(make([]byte, n))
	heapMu.Lock()
	heapBufs = append(heapBufs, b) // b's array escapes: on the heap
	heapMu.Unlock()
	return b
}

func (p pageBuf) addr() uintptr { return uintptr(unsafe.Pointer(&p[0])) }
