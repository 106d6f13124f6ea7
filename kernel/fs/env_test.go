package fs

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hostEnv backs an FS in hosted tests: pages from an mmap'd arena (memory
// the collector does not manage, as the kernel's frames), a mutex, and a
// condition variable for pipe waits. It is a value without pointers, as
// Env requires: it names its state by index.
type hostEnv struct{ id int }

type hostState struct {
	mu        sync.Mutex
	cond      *sync.Cond
	arena     []byte
	next      int
	free      []uintptr
	allocated int
	limit     int // AllocPage fails beyond this many pages (0: arena size)
	wakes     atomic.Int64
}

var (
	envMu  sync.Mutex
	states []*hostState
)

func (e hostEnv) st() *hostState {
	envMu.Lock()
	defer envMu.Unlock()
	return states[e.id]
}

func (e hostEnv) AllocPage() uintptr {
	s := e.st()
	if s.limit > 0 && s.allocated >= s.limit {
		return 0
	}
	var a uintptr
	if n := len(s.free); n > 0 {
		a = s.free[n-1]
		s.free = s.free[:n-1]
		clear(mem(a, PageSize))
	} else {
		if s.next+PageSize > len(s.arena) {
			return 0
		}
		a = uintptr(unsafePointer(&s.arena[s.next]))
		s.next += PageSize
	}
	s.allocated++
	return a
}

func (e hostEnv) FreePage(a uintptr) {
	s := e.st()
	// Poison it: a use after free shows.
	b := mem(a, PageSize)
	for i := range b {
		b[i] = 0xa5
	}
	s.free = append(s.free, a)
	s.allocated--
}

func (e hostEnv) Now() int64 { return time.Now().UnixNano() }
func (e hostEnv) Lock()      { e.st().mu.Lock() }
func (e hostEnv) Unlock()    { e.st().mu.Unlock() }
func (e hostEnv) Wake(int)   { s := e.st(); s.wakes.Add(1); s.cond.Broadcast() }

type testFS = FS[hostEnv]

// newFS makes an FS with an arena of arenaPages pages and a file-data
// limit of maxPages.
func newFS(t testing.TB, arenaPages int, maxPages int64) (*testFS, *hostState) {
	arena, err := unix.Mmap(-1, 0, arenaPages*PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	s := &hostState{arena: arena}
	s.cond = sync.NewCond(&s.mu)
	envMu.Lock()
	states = append(states, s)
	id := len(states) - 1
	envMu.Unlock()
	f := new(testFS)
	f.Init(hostEnv{id}, maxPages)
	t.Cleanup(func() {
		// Nothing may stay mapped while the arena goes.
		envMu.Lock()
		states[id] = nil
		envMu.Unlock()
		unix.Munmap(arena)
	})
	return f, s
}

// block waits, as the kernel would, until a pipe's state changes.
func (s *hostState) block(addr uintptr, val uint32) {
	s.mu.Lock()
	for atomic.LoadUint32(word32(addr)) == val {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

func unsafePointer(p *byte) unsafe.Pointer { return unsafe.Pointer(p) }

func word32(a uintptr) *uint32 { return (*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
