package epoll

import (
	"encoding/binary"
	"strconv"
	"testing"
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
	return f.ready, f.seq, !f.gone
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
	if len(evs) != 2 || evs[0] != [2]uint64{unix.EPOLLIN, 2} || evs[1] != [2]uint64{unix.EPOLLOUT, 3} {
		t.Errorf("scan: %v, want the newest watch first", evs)
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
	if d := datas(); len(d) != 3 || d[0] != 12 || d[1] != 11 || d[2] != 10 {
		t.Errorf("first scan: %v, want 12 11 10", d)
	}
	if polls != 4 {
		t.Errorf("%d polls, want 4: a watch without a counter is never polled", polls)
	}
	if d := datas(); len(d) != 1 || d[0] != 10 {
		t.Errorf("second scan: %v, want only the level-triggered 10", d)
	}
	tfiles[1].seq++
	tfiles[2].seq++
	if d := datas(); len(d) != 2 || d[0] != 11 || d[1] != 10 {
		t.Errorf("after a change: %v, want 11 10 (the one-shot waits for a mod)", d)
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
