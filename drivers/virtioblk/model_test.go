package virtioblk

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"yolk/drivers/virtio"
	"yolk/drivers/virtioblk/blkmodel"
)

// The driver against package blkmodel's device: a virtio-mmio block
// device in plain memory whose goroutine serves the rings on a byte-slice
// disk.

type model struct {
	*blkmodel.Device
	k  Disk[tenv]
	mu sync.Mutex // the driver's lock (its Env's)
}

type tenv struct{ m *model }

func (e tenv) Lock()   { e.m.mu.Lock() }
func (e tenv) Unlock() { e.m.mu.Unlock() }
func (e tenv) Wait(addr *uint32, val uint32, deadline int64) bool {
	for atomic.LoadUint32(addr) == val {
		if deadline != 0 && e.Now() >= deadline {
			return true
		}
		time.Sleep(20 * time.Microsecond)
	}
	return false
}
func (tenv) Wake(*uint32) {}
func (tenv) Now() int64   { return time.Now().UnixNano() }
func (tenv) Log(string)   {}
func (tenv) Note(string)  {}
func (tenv) LogDec(int64) {}
func (tenv) Copy(dst, src uintptr, n int) bool {
	copy(unsafe.Slice(at[byte](dst), n), unsafe.Slice(at[byte](src), n))
	return true
}

// newModel opens a disk of sectors sectors offering features (and
// VERSION_1), with the configuration's fields set by cfg.
func newModel(t testing.TB, sectors uint64, features uint32, cfg map[uint32]uint32) *model {
	m := &model{Device: blkmodel.New(sectors, features, cfg)}
	m.Errorf = t.Errorf
	dev, e := virtio.OpenMMIO(m.Base())
	if e != virtio.OK {
		t.Fatalf("OpenMMIO: %v", e)
	}
	if e := Open(&m.k, tenv{m}, dev, m.Device); e != virtio.OK {
		t.Fatalf("Open: %v", e)
	}
	copy(m.k.Name[:], "vda")
	m.Serve(func() { m.k.Interrupt() })
	t.Cleanup(m.Stop)
	return m
}

// seen is the request types the device took.
func (m *model) seen() []uint32 {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	return append([]uint32(nil), m.Seen...)
}

// set changes the device's knobs.
func (m *model) set(f func(d *blkmodel.Device)) {
	m.Mu.Lock()
	f(m.Device)
	m.Mu.Unlock()
}
