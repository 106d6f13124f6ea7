package nvme

import (
	"math/rand"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// world is a test's machine: RAM, the model behind the registers, the
// controller, the queues' locks, a clock that moves 1 µs a reading and
// jumps to a wait's deadline when nothing else can happen, and the
// console.
type world struct {
	t     *testing.T
	r     *ram
	m     *model
	c     Ctrl[tenv]
	locks [MaxQueues + 1]sync.Mutex
	clock atomic.Int64
	cpu   atomic.Int32
	rmu   sync.Mutex
	rng   *rand.Rand
	lmu   sync.Mutex
	log   strings.Builder
}

// tenv is the driver's environment in the tests.
type tenv struct{ w *world }

func (e tenv) Lock(q int)    { e.w.locks[q].Lock() }
func (e tenv) Unlock(q int)  { e.w.locks[q].Unlock() }
func (e tenv) Now() int64    { return e.w.clock.Add(1000) }
func (e tenv) CPU() int      { return int(e.w.cpu.Add(1)) }
func (e tenv) Wake(*uint32)  {}
func (e tenv) Note(s string) { e.Log(s) }
func (e tenv) Log(s string) {
	e.w.lmu.Lock()
	e.w.log.WriteString(s)
	e.w.lmu.Unlock()
}
func (e tenv) LogDec(v int64) { e.Log(strconv.FormatInt(v, 10)) }

// Copy copies between the driver's pages and the test's buffers (both
// plain memory here).
func (e tenv) Copy(dst, src uintptr, n int) bool {
	copy(bytesAt(dst, n), bytesAt(src, n))
	return true
}

// Wait spins while *addr == val: it takes the interrupt when the model
// asserts it, yields to let other goroutines submit, then has the model
// complete one held command; with nothing left to happen it moves the
// clock to the deadline and reports it passed.
func (e tenv) Wait(addr *uint32, val uint32, deadline int64) bool {
	w := e.w
	for spins := 0; ; spins++ {
		if atomic.LoadUint32(addr) != val {
			return false
		}
		if w.m.irq() {
			w.c.Interrupt()
			continue
		}
		if spins < 16 {
			runtime.Gosched()
			continue
		}
		w.rmu.Lock()
		ok := w.m.release(w.rng)
		w.rmu.Unlock()
		if ok {
			spins = 0
			continue
		}
		if deadline != 0 {
			for {
				now := w.clock.Load()
				if now >= deadline || w.clock.CompareAndSwap(now, deadline) {
					return true
				}
			}
		}
		runtime.Gosched()
	}
}

func (w *world) logText() string {
	w.lmu.Lock()
	defer w.lmu.Unlock()
	return w.log.String()
}

// newWorld is a controller model with a disk of sectors 512-byte
// sectors, changed by setup before Open runs.
func newWorld(t *testing.T, sectors int, setup func(*model)) *world {
	w := &world{t: t, r: newRAM(64<<20, 1), rng: rand.New(rand.NewSource(2))}
	w.m = newModel(t, w.r, sectors)
	for i := range w.m.disk {
		w.m.disk[i] = byte(i*7 + i>>9)
	}
	if setup != nil {
		setup(w.m)
	}
	attach(t, w.m)
	copy(w.c.Name[:], "nvme0")
	return w
}

// open opens the controller with cpus CPUs, failing the test on an error.
func (w *world) open(cpus int) {
	w.t.Helper()
	if e := Open(&w.c, tenv{w}, regsBase, w.r, cpus); e != OK {
		w.t.Fatalf("Open: %v", e)
	}
	w.c.Name = [8]byte{'n', 'v', 'm', 'e', '0'}
}
