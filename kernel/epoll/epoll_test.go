package epoll

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// The test's kernel: the epoll descriptors' list heads, and files of two
// kinds: kindFile has a handle, a change counter and a readiness, and can
// go (gone); kindNone has no poll.
const (
	kindFile = 1 + iota
	kindNone
)

type testFile struct {
	seq   uint32
	ready uint32
	gone  bool
}

var (
	heads    [NumWatches]int32
	tfiles   [8]testFile
	notifies int
	polls    int
)

type testEnv struct{}

func (testEnv) Head(ep int32) *int32 { return &heads[ep] }
func (testEnv) Notify()              { notifies++ }
func (testEnv) Poll(w *Watch, seq uint32) (uint32, uint32, bool) {
	polls++
	if w.Kind != kindFile {
		return 0, seq, true
	}
	f := &tfiles[w.H]
	return atomic.LoadUint32(&f.ready), atomic.LoadUint32(&f.seq), !f.gone
}

type testTable = Table[testEnv]

func reset() *testTable {
	heads, tfiles, notifies, polls = [NumWatches]int32{}, [8]testFile{}, 0, 0
	return new(testTable)
}

// target is a kindFile watch of descriptor fd on test file h.
func target(fd, h int32) Target {
	return Target{FD: fd, H: h, ID: uint64(100 + h), Kind: kindFile, Seq: uintptr(unsafe.Pointer(&tfiles[h].seq))}
}

// change moves test file h's counter, as a kind does (and tells the
// table).
func change(tb *testTable, h int) {
	tfiles[h].seq++
	tb.Changed(uintptr(unsafe.Pointer(&tfiles[h].seq)))
}

// scan is Scan's events of ep as (events, data) pairs, with amd64's
// layout.
func scan(t *testTable, ep int32) [][2]uint64 {
	var out [16 * 12]byte
	n := t.Scan(ep, out[:], 16, 12, 4)
	var evs [][2]uint64
	for i := 0; i < n; i++ {
		e := out[i*12:]
		evs = append(evs, [2]uint64{uint64(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint64(e[4:])})
	}
	return evs
}

func wantErr(t *testing.T, what string, got, want abi.Errno) {
	t.Helper()
	if got != want {
		t.Errorf("%s: errno %d, want %d", what, got, want)
	}
}

// TestCtl: EEXIST, ENOENT, EINVAL, a watch's identity (descriptor, handle
// and identity), Notify on every add and change, Release and Closed.
func TestCtl(t *testing.T) {
	tb := reset()
	const ep = 5
	wantErr(t, "add", tb.Ctl(ep, unix.EPOLL_CTL_ADD, target(7, 1), unix.EPOLLIN, 1), 0)
	wantErr(t, "add again", tb.Ctl(ep, unix.EPOLL_CTL_ADD, target(7, 1), unix.EPOLLIN, 1), abi.EEXIST)
	other := target(7, 2) // the descriptor now names another open file
	wantErr(t, "mod of another file", tb.Ctl(ep, unix.EPOLL_CTL_MOD, other, unix.EPOLLIN, 1), abi.ENOENT)
	wantErr(t, "add of another file", tb.Ctl(ep, unix.EPOLL_CTL_ADD, other, unix.EPOLLIN, 2), 0)
	wantErr(t, "mod", tb.Ctl(ep, unix.EPOLL_CTL_MOD, target(7, 1), unix.EPOLLOUT, 3), 0)
	wantErr(t, "bad op", tb.Ctl(ep, 99, target(7, 1), 0, 0), abi.EINVAL)
	if notifies != 3 {
		t.Errorf("%d notifies, want 3 (two adds, a mod)", notifies)
	}
	tfiles[1].ready, tfiles[2].ready = unix.EPOLLOUT, unix.EPOLLIN
	evs := scan(tb, ep)
	if len(evs) != 2 || evs[0] != [2]uint64{unix.EPOLLOUT, 3} || evs[1] != [2]uint64{unix.EPOLLIN, 2} {
		t.Errorf("scan: %v, want the ready list's order: the watch queued first (its mod keeps its place) first", evs)
	}
	wantErr(t, "del", tb.Ctl(ep, unix.EPOLL_CTL_DEL, other, 0, 0), 0)
	wantErr(t, "del again", tb.Ctl(ep, unix.EPOLL_CTL_DEL, other, 0, 0), abi.ENOENT)
	if evs := scan(tb, ep); len(evs) != 1 || evs[0][1] != 3 {
		t.Errorf("after del: %v", evs)
	}

	// A descriptor without a handle goes with its descriptor (Closed);
	// the others' watches stay.
	none := Target{FD: 9, H: -1, Kind: kindNone, Seq: uintptr(unsafe.Pointer(&tfiles[3].seq))}
	wantErr(t, "add eventfd-like", tb.Ctl(ep, unix.EPOLL_CTL_ADD, none, unix.EPOLLIN, 4), 0)
	tb.Closed(7) // has a handle: not dropped here
	tb.Closed(9)
	wantErr(t, "del closed", tb.Ctl(ep, unix.EPOLL_CTL_DEL, none, 0, 0), abi.ENOENT)
	wantErr(t, "mod of the open file after Closed", tb.Ctl(ep, unix.EPOLL_CTL_MOD, target(7, 1), unix.EPOLLOUT, 3), 0)

	// Release frees the instance's watches for others.
	tb.Release(ep)
	heads[ep] = 0 // the kernel's new descriptor starts empty
	for i := 0; i < NumWatches; i++ {
		wantErr(t, "fill", tb.Ctl(6, unix.EPOLL_CTL_ADD, Target{FD: int32(i), H: -1, Kind: kindNone}, unix.EPOLLIN, 0), 0)
	}
	wantErr(t, "full", tb.Ctl(6, unix.EPOLL_CTL_ADD, Target{FD: 1, H: 5, ID: 1, Kind: kindNone}, unix.EPOLLIN, 0), abi.ENOMEM)
}

// TestFullPrunesGone: with the pool full, a new watch takes the place of
// one whose open file went.
func TestFullPrunesGone(t *testing.T) {
	tb := reset()
	wantErr(t, "add", tb.Ctl(1, unix.EPOLL_CTL_ADD, target(3, 1), unix.EPOLLIN, 0), 0)
	for i := 1; i < NumWatches; i++ {
		wantErr(t, "fill", tb.Ctl(2, unix.EPOLL_CTL_ADD, Target{FD: int32(10 + i%100), H: -1, ID: uint64(i), Kind: kindNone}, unix.EPOLLIN, 0), 0)
	}
	wantErr(t, "full", tb.Ctl(2, unix.EPOLL_CTL_ADD, Target{FD: 5, H: -1, Kind: kindNone}, unix.EPOLLIN, 0), abi.ENOMEM)
	tfiles[1].gone = true
	wantErr(t, "after the file went", tb.Ctl(2, unix.EPOLL_CTL_ADD, Target{FD: 5, H: -1, Kind: kindNone}, unix.EPOLLIN, 0), 0)
	if heads[1] != 0 {
		t.Errorf("epoll 1's list still names watch %d", heads[1])
	}
}

// TestTriggers: level-triggered watches report while ready, edge-triggered
// ones when the counter moved, one-shot ones once until EPOLL_CTL_MOD; a
// watch without a counter is never polled, one asking for no events
// reports none; a watch whose file went is dropped by the scan.
func TestTriggers(t *testing.T) {
	tb := reset()
	const ep = 1
	wantErr(t, "level", tb.Ctl(ep, unix.EPOLL_CTL_ADD, target(10, 0), unix.EPOLLIN, 10), 0)
	wantErr(t, "edge", tb.Ctl(ep, unix.EPOLL_CTL_ADD, target(11, 1), unix.EPOLLIN|unix.EPOLLET, 11), 0)
	wantErr(t, "oneshot", tb.Ctl(ep, unix.EPOLL_CTL_ADD, target(12, 2), unix.EPOLLIN|unix.EPOLLONESHOT, 12), 0)
	wantErr(t, "no counter", tb.Ctl(ep, unix.EPOLL_CTL_ADD, Target{FD: 13, H: 3, Kind: kindFile}, unix.EPOLLIN, 13), 0)
	wantErr(t, "no events", tb.Ctl(ep, unix.EPOLL_CTL_ADD, target(14, 4), 0, 14), 0) // EPOLLHUP, EPOLLERR only
	for i := range 5 {
		tfiles[i].ready = unix.EPOLLIN | unix.EPOLLOUT
	}
	datas := func() []uint64 {
		var d []uint64
		for _, e := range scan(tb, ep) {
			if e[0] != unix.EPOLLIN {
				t.Errorf("events %#x of watch %d, want EPOLLIN only", e[0], e[1])
			}
			d = append(d, e[1])
		}
		return d
	}
	if d := datas(); len(d) != 3 || d[0] != 10 || d[1] != 11 || d[2] != 12 {
		t.Errorf("first scan: %v, want 10 11 12", d)
	}
	if polls != 4 {
		t.Errorf("%d polls, want 4: a watch without a counter is never polled", polls)
	}
	if d := datas(); len(d) != 1 || d[0] != 10 {
		t.Errorf("second scan: %v, want only the level-triggered 10", d)
	}
	change(tb, 1)
	change(tb, 2)
	if d := datas(); len(d) != 2 || d[0] != 10 || d[1] != 11 {
		t.Errorf("after a change: %v, want 10 11 (the one-shot waits for a mod)", d)
	}
	wantErr(t, "rearm", tb.Ctl(ep, unix.EPOLL_CTL_MOD, target(12, 2), unix.EPOLLIN|unix.EPOLLONESHOT, 12), 0)
	tfiles[0].gone = true
	if d := datas(); len(d) != 1 || d[0] != 12 {
		t.Errorf("after rearming and 10's file going: %v, want 12", d)
	}
	wantErr(t, "10 dropped", tb.Ctl(ep, unix.EPOLL_CTL_DEL, target(10, 0), 0, 0), abi.ENOENT)
}

// BenchmarkCtl is EPOLL_CTL_ADD and EPOLL_CTL_DEL of one descriptor, and
// the close of a descriptor without a handle (Closed), on the runtime's
// one epoll instance while it watches idle others (a server's idle
// connections): each used to walk the instance's list or the pool.
func BenchmarkCtl(b *testing.B) {
	for _, idle := range []int{0, 10000} {
		b.Run("idle="+strconv.Itoa(idle), func(b *testing.B) {
			tb := reset()
			for i := 0; i < idle; i++ {
				if e := tb.Ctl(1, unix.EPOLL_CTL_ADD, Target{FD: int32(10 + i), H: 0, ID: uint64(i), Kind: kindNone}, unix.EPOLLIN|unix.EPOLLET, 0); e != 0 {
					b.Fatal(e)
				}
			}
			for b.Loop() {
				c := Target{FD: 5, H: -1, Kind: kindNone}
				if e := tb.Ctl(1, unix.EPOLL_CTL_ADD, c, unix.EPOLLIN, 0); e != 0 {
					b.Fatal(e)
				}
				if e := tb.Ctl(1, unix.EPOLL_CTL_DEL, c, 0, 0); e != 0 {
					b.Fatal(e)
				}
				tb.Ctl(1, unix.EPOLL_CTL_ADD, c, unix.EPOLLIN, 0)
				tb.Closed(5)
			}
		})
	}
}

// TestReadyList: a scan polls only the watches that may report — added or
// changed since, whose counter moved, or level-triggered and ready last
// time — whatever the number of idle ones; a change moves the watches of
// every instance on the counter; a level-triggered watch that reported
// goes behind the others, so a small limit serves them all in turn.
func TestReadyList(t *testing.T) {
	tb := reset()
	// 2,000 idle edge-triggered watches on one instance (a server's idle
	// connections: the same few test files, as far as polls go).
	for i := 0; i < 2000; i++ {
		wantErr(t, "idle", tb.Ctl(1, unix.EPOLL_CTL_ADD, Target{FD: int32(100 + i), H: 7, ID: uint64(i), Kind: kindFile, Seq: uintptr(unsafe.Pointer(&tfiles[7].seq))}, unix.EPOLLIN|unix.EPOLLET, 0), 0)
	}
	if evs := scan(tb, 1); len(evs) != 0 || polls != 2000 {
		t.Fatalf("first scan: %v events, %d polls; want none of 2000 fresh watches", len(evs), polls)
	}
	polls = 0
	if evs := scan(tb, 1); len(evs) != 0 || polls != 0 {
		t.Errorf("idle scan: %d events, %d polls; want 0 and 0", len(evs), polls)
	}

	// One file watched by two instances, edge-triggered: a change
	// reaches both, whichever scans first.
	wantErr(t, "a", tb.Ctl(2, unix.EPOLL_CTL_ADD, target(20, 1), unix.EPOLLIN|unix.EPOLLET, 21), 0)
	wantErr(t, "b", tb.Ctl(3, unix.EPOLL_CTL_ADD, target(30, 1), unix.EPOLLIN|unix.EPOLLET, 31), 0)
	scan(tb, 2)
	scan(tb, 3)
	tfiles[1].ready = unix.EPOLLIN
	change(tb, 1)
	polls = 0
	if evs := scan(tb, 2); len(evs) != 1 || evs[0][1] != 21 || polls != 1 {
		t.Errorf("instance 2 after the change: %v, %d polls; want watch 21, one poll", evs, polls)
	}
	if evs := scan(tb, 3); len(evs) != 1 || evs[0][1] != 31 {
		t.Errorf("instance 3 after instance 2 drained the change: %v, want watch 31", evs)
	}
	if evs := scan(tb, 3); len(evs) != 0 {
		t.Errorf("instance 3 again: %v, want nothing (edge-triggered)", evs)
	}

	// Three level-triggered watches ready, a limit of 2: the third is
	// not starved.
	for h := int32(2); h < 5; h++ {
		tfiles[h].ready = unix.EPOLLIN
		wantErr(t, "level", tb.Ctl(4, unix.EPOLL_CTL_ADD, target(40+h, h), unix.EPOLLIN, uint64(h)), 0)
	}
	var out [2 * 12]byte
	seen := map[uint64]int{}
	for range 3 {
		n := tb.Scan(4, out[:], 2, 12, 4)
		for i := 0; i < n; i++ {
			seen[binary.LittleEndian.Uint64(out[i*12+4:])]++
		}
	}
	if seen[2] != 2 || seen[3] != 2 || seen[4] != 2 {
		t.Errorf("three scans of 2 over three ready watches: %v, want each twice", seen)
	}

	// Not ready any more: off the list; ready again once changed.
	tfiles[3].ready = 0
	change(tb, 3)
	scan(tb, 4)
	polls = 0
	tfiles[2].ready, tfiles[4].ready = 0, 0
	change(tb, 2)
	change(tb, 4)
	scan(tb, 4)
	if evs := scan(tb, 4); len(evs) != 0 || polls != 2 {
		t.Errorf("nothing ready: %v, %d polls; want none, and only the two changed polled", evs, polls)
	}
	tfiles[3].ready = unix.EPOLLIN
	change(tb, 3)
	if evs := scan(tb, 4); len(evs) != 1 || evs[0][1] != 3 {
		t.Errorf("3 ready again: %v", evs)
	}

	// A deleted or released watch leaves its bucket and the ready list.
	wantErr(t, "del", tb.Ctl(4, unix.EPOLL_CTL_DEL, target(43, 3), 0, 0), 0)
	change(tb, 3)
	if evs := scan(tb, 4); len(evs) != 0 {
		t.Errorf("after del: %v", evs)
	}
	tb.Release(4)
	heads[4] = 0
	if tb.ready[4] != 0 || tb.readyTail[4] != 0 {
		t.Errorf("released instance's ready list %d..%d, want empty", tb.ready[4], tb.readyTail[4])
	}
}

// BenchmarkScan is an epoll_wait's scan after one of its watches
// changed, with 0 or 10,000 idle ones beside it (a server's idle
// connections): each scan used to poll every watch.
func BenchmarkScan(b *testing.B) {
	for _, idle := range []int{0, 10000} {
		b.Run("idle="+strconv.Itoa(idle), func(b *testing.B) {
			tb := reset()
			for i := 0; i < idle; i++ {
				tb.Ctl(1, unix.EPOLL_CTL_ADD, Target{FD: int32(10 + i), H: 7, ID: uint64(i), Kind: kindFile, Seq: uintptr(unsafe.Pointer(&tfiles[7].seq))}, unix.EPOLLIN|unix.EPOLLET, 0)
			}
			tb.Ctl(1, unix.EPOLL_CTL_ADD, target(5, 1), unix.EPOLLIN|unix.EPOLLET, 1)
			tfiles[1].ready = unix.EPOLLIN
			var out [16 * 12]byte
			tb.Scan(1, out[:], 16, 12, 4)
			for b.Loop() {
				change(tb, 1)
				if tb.Scan(1, out[:], 16, 12, 4) != 1 {
					b.Fatal("the changed watch did not report")
				}
			}
		})
	}
}

// TestChangedConcurrent: kinds call Changed from any CPU, without the
// lock, while epoll_wait scans under it. Four writers each move their
// file's counter 20,000 times (making it ready, then Changed) and wait
// for the scanner, which scans without pause, to have seen each change:
// one it never sees is a lost wake-up (the bucket's mark must be set
// after the counter moves and be cleared before the scan polls). No scan
// may poll one of the 1,000 idle watches beside them.
func TestChangedConcurrent(t *testing.T) {
	const writers, rounds, idle = 4, 20000, 1000
	tb := reset()
	for h := int32(0); h < writers; h++ {
		wantErr(t, "add", tb.Ctl(1, unix.EPOLL_CTL_ADD, target(h, h), unix.EPOLLIN|unix.EPOLLET, uint64(h)), 0)
	}
	// The idle watches' file: one whose counter shares no bucket with a
	// writer's.
	quiet := int32(writers)
	for ; quiet < int32(len(tfiles)); quiet++ {
		b, clash := bucketOf(uintptr(unsafe.Pointer(&tfiles[quiet].seq))), false
		for h := 0; h < writers; h++ {
			clash = clash || b == bucketOf(uintptr(unsafe.Pointer(&tfiles[h].seq)))
		}
		if !clash {
			break
		}
	}
	for i := int32(0); i < idle; i++ {
		wantErr(t, "idle", tb.Ctl(1, unix.EPOLL_CTL_ADD, Target{FD: 100 + i, H: quiet, ID: uint64(i), Kind: kindFile, Seq: uintptr(unsafe.Pointer(&tfiles[quiet].seq))}, unix.EPOLLIN|unix.EPOLLET, 1000), 0)
	}
	scan(tb, 1)
	polls = 0
	var seen [writers]atomic.Uint32 // the scanner's view of each counter
	var lost atomic.Bool
	var wg sync.WaitGroup
	for h := 0; h < writers; h++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := &tfiles[h]
			for r := uint32(1); r <= rounds && !lost.Load(); r++ {
				atomic.StoreUint32(&f.ready, unix.EPOLLIN)
				atomic.AddUint32(&f.seq, 1)
				tb.Changed(uintptr(unsafe.Pointer(&f.seq)))
				for start := time.Now(); seen[h].Load() < r; {
					if time.Since(start) > 5*time.Second {
						t.Errorf("file %d: change %d never seen by a scan in 5s (the scanner saw %d): a lost wake-up", h, r, seen[h].Load())
						lost.Store(true)
						return
					}
					runtime.Gosched()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var out [16 * 12]byte
	for scanning := true; scanning; {
		select {
		case <-done:
			scanning = false
		default:
		}
		n := tb.Scan(1, out[:], 16, 12, 4)
		for i := 0; i < n; i++ {
			if d := binary.LittleEndian.Uint64(out[i*12+4:]); d >= writers && !lost.Swap(true) {
				t.Errorf("an idle watch (data %d) reported", d)
			}
		}
		for h := range writers {
			seen[h].Store(tb.watches[h].seen) // the h-th added: the lowest free then
		}
	}
	if polls > writers*rounds+writers {
		t.Errorf("%d polls for %d changes: idle watches were polled", polls, writers*rounds)
	}
}
