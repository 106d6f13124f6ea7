package net

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"yolk/kernel/fs"
	"yolk/kernel/internal/envtest"
)

// hostEnv backs a Net (and the FS holding its path names) in hosted
// tests: an envtest environment that counts wake-ups.
type hostEnv struct{ envtest.Env[hostState] }

type hostState struct{ wakes, notified int }

func newEnv(t testing.TB, pages int) hostEnv {
	return hostEnv{envtest.NewEnv(t, pages, new(hostState))}
}

func (e hostEnv) Wake(int)                        { e.State().wakes++ }
func (e hostEnv) NotifyService()                  { e.State().notified++ }
func (e hostEnv) Now() int64                      { return time.Now().UnixNano() }
func (e hostEnv) CopyIn(b []byte, p uintptr) int  { return copy(b, mem(p, len(b))) }
func (e hostEnv) CopyOut(p uintptr, b []byte) int { return copy(mem(p, len(b)), b) }

// fsEnv is the FS's environment: the same arena (whose lock is its own),
// its own lock.
type fsEnv struct{ hostEnv }

var fsMu sync.Mutex

func (fsEnv) Lock()   { fsMu.Lock() }
func (fsEnv) Unlock() { fsMu.Unlock() }

type testNet = Net[hostEnv]

var _ fs.Env = fsEnv{}

func unsafePointer(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// kbuf is b as the service's buffer (Service's Iov).
func kbuf(b []byte) *Iov { return &Iov{One: b, Len: len(b)} }
