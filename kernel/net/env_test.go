package net

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
)

// hostEnv backs a Net (and the FS holding its path names) in hosted
// tests: pages from an mmap'd arena, one mutex per environment. It is a
// value without pointers, as Env requires: it names its state by index.
type hostEnv struct{ id int }

type hostState struct {
	mu    sync.Mutex
	arena []byte
	next  int
	free  []uintptr
	pages int
	wakes int
}

var (
	envMu  sync.Mutex
	states []*hostState
)

func newEnv(t testing.TB, pages int) hostEnv {
	arena, err := unix.Mmap(-1, 0, pages*PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	envMu.Lock()
	states = append(states, &hostState{arena: arena})
	id := len(states) - 1
	envMu.Unlock()
	t.Cleanup(func() {
		envMu.Lock()
		states[id] = nil
		envMu.Unlock()
		unix.Munmap(arena)
	})
	return hostEnv{id}
}

func (e hostEnv) st() *hostState {
	envMu.Lock()
	defer envMu.Unlock()
	return states[e.id]
}

// The arena is shared by the Net and the FS, whose locks differ: it has
// a lock of its own.
var arenaMu sync.Mutex

func (e hostEnv) AllocPage() uintptr {
	arenaMu.Lock()
	defer arenaMu.Unlock()
	s := e.st()
	var a uintptr
	if n := len(s.free); n > 0 {
		a = s.free[n-1]
		s.free = s.free[:n-1]
		clear(mem(a, PageSize))
	} else {
		if s.next+PageSize > len(s.arena) {
			return 0
		}
		a = uintptr(unsafe.Pointer(&s.arena[s.next]))
		s.next += PageSize
	}
	s.pages++
	return a
}

func (e hostEnv) FreePage(a uintptr) {
	arenaMu.Lock()
	defer arenaMu.Unlock()
	s := e.st()
	b := mem(a, PageSize)
	for i := range b {
		b[i] = 0xa5 // a use after free shows
	}
	s.free = append(s.free, a)
	s.pages--
}

func (e hostEnv) Lock()      { e.st().mu.Lock() }
func (e hostEnv) Unlock()    { e.st().mu.Unlock() }
func (e hostEnv) Wake(int)   { e.st().wakes++ }
func (e hostEnv) Now() int64 { return time.Now().UnixNano() }
func (e hostEnv) UserBuf(p, n uintptr, write bool) ([]byte, bool) {
	return mem(p, int(n)), true
}

// fsEnv is the FS's environment: the same arena, its own lock.
type fsEnv struct{ hostEnv }

var fsMu sync.Mutex

func (fsEnv) Lock()   { fsMu.Lock() }
func (fsEnv) Unlock() { fsMu.Unlock() }

type testNet = Net[hostEnv]

var _ fs.Env = fsEnv{}

func unsafePointer(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
