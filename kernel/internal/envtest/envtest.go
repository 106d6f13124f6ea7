// Package envtest is what the hosted tests of kernel/fs and kernel/net
// make their Env types of. Those must be values without pointers, so
// they name their state by index (Handle); their pages (pages.Supplier)
// come from an mmap'd arena (Arena), memory the collector does not
// manage, as the kernel's frames are. A freed page is poisoned, so that a
// use after free shows.
//
// For hosted tests only: it allocates, takes a sync.Mutex and uses the
// testing package, so no image may link it.
package envtest

import (
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/internal/pages"
)

// Handle names a test's state of type S by index.
type Handle[S any] struct{ id int }

var (
	handlesMu sync.Mutex
	handles   []any
)

// NewHandle names s until t ends.
func NewHandle[S any](t testing.TB, s *S) Handle[S] {
	handlesMu.Lock()
	handles = append(handles, s)
	id := len(handles) - 1
	handlesMu.Unlock()
	t.Cleanup(func() {
		handlesMu.Lock()
		handles[id] = nil
		handlesMu.Unlock()
	})
	return Handle[S]{id}
}

// Get is the state h names.
func (h Handle[S]) Get() *S {
	handlesMu.Lock()
	defer handlesMu.Unlock()
	return handles[h.id].(*S)
}

// Env is what the packages' test environments share: pages, a lock
// (Lock, Unlock) and the test's state of type S (State).
type Env[S any] struct {
	Arena
	Mutex
	state Handle[S]
}

// NewEnv makes an Env with an arena of n pages and state s, until t ends.
func NewEnv[S any](t testing.TB, n int, s *S) Env[S] {
	return Env[S]{New(t, n), NewMutex(t), NewHandle(t, s)}
}

// State is the test's state.
func (e Env[S]) State() *S { return e.state.Get() }

// Mutex is a sync.Mutex named by a Handle.
type Mutex struct{ h Handle[sync.Mutex] }

// NewMutex makes a Mutex, until t ends.
func NewMutex(t testing.TB) Mutex { return Mutex{NewHandle(t, new(sync.Mutex))} }

func (m Mutex) Lock()   { m.h.Get().Lock() }
func (m Mutex) Unlock() { m.h.Get().Unlock() }

// Arena supplies pages. Its methods may be called from any goroutine (an
// FS and a Net whose locks differ can share one).
type Arena struct{ h Handle[state] }

type state struct {
	mu    sync.Mutex
	mem   []byte
	next  int
	free  []uintptr
	inUse int
	limit int // AllocPage fails beyond this many pages in use (0: the arena's size)
}

// New makes an arena of n pages, unmapped when t ends.
func New(t testing.TB, n int) Arena {
	m, err := unix.Mmap(-1, 0, n*pages.Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	// Registered after the unmapping, so forgotten before it (cleanups
	// run last first): nothing reaches the arena while it goes.
	return Arena{NewHandle(t, &state{mem: m})}
}

func (a Arena) AllocPage() uintptr {
	s := a.h.Get()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit > 0 && s.inUse >= s.limit {
		return 0
	}
	var p uintptr
	if n := len(s.free); n > 0 {
		p = s.free[n-1]
		s.free = s.free[:n-1]
		clear(mem(p))
	} else {
		if s.next+pages.Size > len(s.mem) {
			return 0
		}
		p = uintptr(unsafe.Pointer(&s.mem[s.next]))
		s.next += pages.Size
	}
	s.inUse++
	return p
}

func (a Arena) FreePage(p uintptr) {
	s := a.h.Get()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := mem(p)
	for i := range b {
		b[i] = 0xa5
	}
	s.free = append(s.free, p)
	s.inUse--
}

// InUse is the number of pages allocated and not freed.
func (a Arena) InUse() int {
	s := a.h.Get()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse
}

// SetLimit makes AllocPage fail while n pages are in use; 0 lifts the
// limit.
func (a Arena) SetLimit(n int) {
	s := a.h.Get()
	s.mu.Lock()
	s.limit = n
	s.mu.Unlock()
}

func mem(p uintptr) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), pages.Size)
}

var _ pages.Supplier = Arena{}
