package fs

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"yolk/kernel/internal/envtest"
)

// hostEnv backs an FS in hosted tests: an envtest environment, with a
// condition variable on its lock for pipe waits.
type hostEnv struct{ envtest.Env[hostState] }

type hostState struct {
	cond  *sync.Cond
	pages envtest.Arena
	wakes atomic.Int64
}

func (e hostEnv) Now() int64 { return time.Now().UnixNano() }
func (e hostEnv) Wake(int)   { s := e.State(); s.wakes.Add(1); s.cond.Broadcast() }

type testFS = FS[hostEnv]

// newFS makes an FS with an arena of arenaPages pages and a file-data
// limit of maxPages.
func newFS(t testing.TB, arenaPages int, maxPages int64) (*testFS, *hostState) {
	s := new(hostState)
	e := hostEnv{envtest.NewEnv(t, arenaPages, s)}
	s.cond, s.pages = sync.NewCond(e.Mutex), e.Arena
	f := new(testFS)
	f.Init(e, maxPages)
	return f, s
}

// block waits, as the kernel would, until a pipe's state changes.
func (s *hostState) block(addr uintptr, val uint32) {
	s.cond.L.Lock()
	for atomic.LoadUint32(word32(addr)) == val {
		s.cond.Wait()
	}
	s.cond.L.Unlock()
}

func word32(a uintptr) *uint32 { return (*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
