// Package epoll is the core of the kernel's epoll instances: their
// watches, in a fixed pool (Table), each instance's a list whose head is
// in its descriptor; adding, changing and removing a watch (Ctl); and the
// readiness scan epoll_wait makes (Scan). The kernel keeps the calls'
// argument checks, the descriptor table and its lock, the kinds' readiness
// (Env.Poll through its table of file kinds) and the blocking.
//
// A watch names the descriptor and, for an open file or a socket, its
// handle and identity (the watch dies with the open file, as Linux's);
// its readiness comes from a change counter (a pipe's, a socket's, an
// eventfd's) and a poll of the current state. Edge-triggered watches
// (EPOLLET) report when the counter moved since they last did,
// level-triggered ones whenever the state is ready.
//
// A scan polls only the watches that may have something to report, as
// Linux's ready list: those added or changed since, those whose counter
// moved (the kind calls Changed with the counter's address after moving
// it: the counters hash to buckets marked in a bitmap without a lock,
// and the scan moves each marked bucket's watches onto their instance's
// ready list), and the level-triggered ones that reported last time. So
// a server's thousands of idle connections cost nothing per epoll_wait.
// Every change of a file's readiness moves its counter: edge-triggered
// watches rely on that as well.
//
// Kernel-context Go: nothing here allocates, blocks or stores a Go
// pointer; the watches name each other and the counters by index and
// address. Every call is made with the kernel's descriptor lock held. It
// reaches the kernel only through its type parameter (Env), whose zero
// value it uses: in the kernel an empty struct.
package epoll

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/internal/bitmap"
)

// Env is what the kernel supplies. Its zero value is used: it must be a
// type without state of its own (an empty struct).
type Env interface {
	// Head is epoll instance ep's list of watches, in its descriptor:
	// 1 + its first watch, 0 if none.
	Head(ep int32) *int32
	// Poll is the readiness of the file w watches now, by its kind
	// (w.Kind), and its counter's value; seq is the counter's value
	// the scan read, which a kind that has no poll returns (with no
	// events, ok). ok false: the open file or socket w watches is gone.
	Poll(w *Watch, seq uint32) (ready, seq2 uint32, ok bool)
	// Notify: a watch was added or changed and may be ready now: the
	// epoll waits should look.
	Notify()
}

// NumWatches is the pool's size: as many as descriptors.
const NumWatches = 16384

const words = (NumWatches + 63) / 64

// Watch is one descriptor an epoll instance watches. FD, H, ID and Kind
// are what the kernel's kinds poll by.
type Watch struct {
	ep      int32 // 1 + the epoll descriptor holding it; 0: free
	next    int32 // 1 + the next watch of that epoll, 0 at the end
	prev    int32 // 1 + the previous one, 0 at the head
	fdNext  int32 // 1 + the next watch of the same descriptor (any epoll), 0 at the end
	FD      int32 // the descriptor watched
	H       int32 // an open file's or socket's handle, -1 for a kind without one (the descriptor itself)
	ID      uint64
	Kind    uint32  // the descriptor's kind when added: whose poll
	seqAddr uintptr // the counter that changes with its readiness; 0: never ready
	seen    uint32  // *seqAddr when last polled
	fresh   bool    // not polled since added or modified
	queued  bool    // on its instance's ready list
	events  uint32  // the events asked for, EPOLLHUP and EPOLLERR included
	data    uint64
	bNext   int32 // 1 + the next watch whose counter is in the same bucket
	rNext   int32 // 1 + the next watch on the ready list, 0 at the end
	rPrev   int32 // 1 + the previous one, 0 at the head
}

// Target is what Ctl watches: the descriptor, its kind, its handle and
// identity (H -1 and ID 0 for a kind without a handle) and the counter
// that changes with its readiness (0: never ready).
type Target struct {
	FD   int32
	H    int32
	ID   uint64
	Kind uint32
	Seq  uintptr
}

// Table is the watches of all epoll instances. The zero value is ready.
// Besides each instance's list (doubly linked: a watch leaves it at
// once) the watches of each descriptor are a list (byFD: Ctl and Closed
// find a descriptor's watches without walking an instance's), and the
// watches taken are a bitmap (a free one is found in a few words): no
// call costs in proportion to the watches there are.
type Table[E Env] struct {
	watches [NumWatches]Watch
	byFD    [NumWatches]int32 // 1 + the first watch of descriptor fd, 0: none
	taken   [words]uint64
	summary [(words + 63) / 64]uint64

	bucket    [NumWatches]int32 // 1 + the first watch whose counter hashes to b
	ready     [NumWatches]int32 // per epoll descriptor: 1 + the first queued watch
	readyTail [NumWatches]int32 // and the last
	changed   [words]uint64     // the buckets whose counters moved (Changed)
	csummary  [(words + 63) / 64]uint64
}

// bucketOf is the bucket of the counter at addr (Fibonacci hashing).
func bucketOf(addr uintptr) int {
	const bits = 14 // log2(NumWatches)
	return int(uint64(addr>>2) * 0x9E3779B97F4A7C15 >> (64 - bits))
}

const _ = uint(1<<14-NumWatches) + uint(NumWatches-1<<14) // bucketOf's bits

// Changed records that the counter at addr moved (0: none): the watches
// on it are polled at the next scan of their instance. Any context, no
// lock: the kind calls it after moving the counter and before waking the
// waits.
func (t *Table[E]) Changed(addr uintptr) {
	if addr == 0 {
		return
	}
	b := bucketOf(addr)
	atomic.OrUint64(&t.changed[b/64], 1<<(b%64))
	atomic.OrUint64(&t.csummary[b/64/64], 1<<(b/64%64))
}

// drain moves the watches of every bucket Changed marked onto their
// instances' ready lists.
func (t *Table[E]) drain() {
	for i := range t.csummary {
		if atomic.LoadUint64(&t.csummary[i]) == 0 {
			continue // a load, not a swap, for what is usually nothing
		}
		for sw := atomic.SwapUint64(&t.csummary[i], 0); sw != 0; sw &= sw - 1 {
			k := i*64 + bits.TrailingZeros64(sw)
			for cw := atomic.SwapUint64(&t.changed[k], 0); cw != 0; cw &= cw - 1 {
				for j := t.bucket[k*64+bits.TrailingZeros64(cw)]; j != 0; j = t.watches[j-1].bNext {
					t.enqueue(&t.watches[j-1])
				}
			}
		}
	}
}

// enqueue puts w at the tail of its instance's ready list, unless it is
// on it or can never report.
func (t *Table[E]) enqueue(w *Watch) {
	if w.queued || w.seqAddr == 0 || w.events&user == 0 {
		return
	}
	ep, id := w.ep-1, t.id(w)
	w.queued, w.rNext, w.rPrev = true, 0, t.readyTail[ep]
	if w.rPrev != 0 {
		t.watches[w.rPrev-1].rNext = id
	} else {
		t.ready[ep] = id
	}
	t.readyTail[ep] = id
}

// dequeue takes w off its instance's ready list.
func (t *Table[E]) dequeue(w *Watch) {
	if !w.queued {
		return
	}
	ep := w.ep - 1
	if w.rPrev != 0 {
		t.watches[w.rPrev-1].rNext = w.rNext
	} else {
		t.ready[ep] = w.rNext
	}
	if w.rNext != 0 {
		t.watches[w.rNext-1].rPrev = w.rPrev
	} else {
		t.readyTail[ep] = w.rPrev
	}
	w.queued, w.rNext, w.rPrev = false, 0, 0
}

// user are the event bits a watch reports; a one-shot watch that fired
// keeps only the others.
const user = unix.EPOLLIN | unix.EPOLLPRI | unix.EPOLLOUT | unix.EPOLLERR | unix.EPOLLHUP |
	unix.EPOLLRDNORM | unix.EPOLLRDBAND | unix.EPOLLWRNORM | unix.EPOLLWRBAND | unix.EPOLLMSG | unix.EPOLLRDHUP

// id is 1 + w's index in watches, as lists name it.
func (t *Table[E]) id(w *Watch) int32 {
	return int32(1 + (uintptr(unsafe.Pointer(w))-uintptr(unsafe.Pointer(&t.watches[0])))/unsafe.Sizeof(Watch{}))
}

// unwatch takes w off its epoll's list and its descriptor's and frees
// it.
func (t *Table[E]) unwatch(w *Watch) {
	var env E
	if w.prev != 0 {
		t.watches[w.prev-1].next = w.next
	} else {
		*env.Head(w.ep - 1) = w.next
	}
	if w.next != 0 {
		t.watches[w.next-1].prev = w.prev
	}
	t.free(w)
}

// free takes w off its descriptor's list, its bucket's and its ready
// list and frees it (its epoll's list is the caller's).
func (t *Table[E]) free(w *Watch) {
	i := t.id(w)
	for p := &t.byFD[w.FD]; *p != 0; p = &t.watches[*p-1].fdNext {
		if *p == i {
			*p = w.fdNext
			break
		}
	}
	if w.seqAddr != 0 {
		for p := &t.bucket[bucketOf(w.seqAddr)]; *p != 0; p = &t.watches[*p-1].bNext {
			if *p == i {
				*p = w.bNext
				break
			}
		}
	}
	t.dequeue(w)
	bitmap.Clear(t.taken[:], t.summary[:], int(i-1))
	*w = Watch{}
}

// Ctl is epoll_ctl's op on epoll instance ep for c, once the kernel has
// checked both descriptors (EBADF), whether c can be polled (EPERM) and
// whether ep is another epoll instance (EINVAL): then the op (EEXIST,
// ENOENT, ENOMEM, EINVAL). events and data are the event's, for
// EPOLL_CTL_ADD and EPOLL_CTL_MOD.
func (t *Table[E]) Ctl(ep int32, op int, c Target, events uint32, data uint64) abi.Errno {
	var env E
	var w *Watch
	for i := t.byFD[c.FD]; i != 0; i = t.watches[i-1].fdNext {
		if x := &t.watches[i-1]; x.ep == ep+1 && x.H == c.H && x.ID == c.ID {
			w = x
			break
		}
	}
	switch op {
	case unix.EPOLL_CTL_ADD, unix.EPOLL_CTL_MOD:
		if op == unix.EPOLL_CTL_ADD && w != nil {
			return abi.EEXIST
		}
		if w == nil {
			if op == unix.EPOLL_CTL_MOD {
				return abi.ENOENT
			}
			if w = t.newWatch(); w == nil {
				return abi.ENOMEM
			}
			head, id := env.Head(ep), t.id(w)
			*w = Watch{ep: ep + 1, next: *head, fdNext: t.byFD[c.FD], FD: c.FD, H: c.H, ID: c.ID, seqAddr: c.Seq, Kind: c.Kind}
			if *head != 0 {
				t.watches[*head-1].prev = id
			}
			*head = id
			t.byFD[c.FD] = id
			if c.Seq != 0 {
				b := &t.bucket[bucketOf(c.Seq)]
				w.bNext, *b = *b, id
			}
			bitmap.Set(t.taken[:], t.summary[:], int(id-1))
		}
		w.events = events | unix.EPOLLHUP | unix.EPOLLERR
		w.data = data
		w.fresh = true
		t.enqueue(w)
		env.Notify() // it may be ready now: a waiter should look
	case unix.EPOLL_CTL_DEL:
		if w == nil {
			return abi.ENOENT
		}
		t.unwatch(w)
	default:
		return abi.EINVAL
	}
	return 0
}

// newWatch is a free watch, nil if none is left even after dropping the
// watches of closed files.
func (t *Table[E]) newWatch() *Watch {
	var env E
	for pass := 0; pass < 2; pass++ {
		if i := bitmap.Lowest(t.taken[:], t.summary[:], 0, NumWatches); i >= 0 {
			return &t.watches[i]
		}
		for i := range t.watches {
			if w := &t.watches[i]; w.ep != 0 && w.H >= 0 {
				// Is the open file or socket w watches still there?
				if _, _, ok := env.Poll(w, 0); !ok {
					t.unwatch(w)
				}
			}
		}
	}
	return nil
}

// pollWatch is the events w reports now (0: none), and false if the
// open file it watches is gone.
func (t *Table[E]) pollWatch(w *Watch) (uint32, bool) {
	var env E
	if w.seqAddr == 0 || w.events&user == 0 {
		return 0, true
	}
	seq := atomic.LoadUint32((*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&w.seqAddr))))
	if w.events&unix.EPOLLET != 0 && !w.fresh && seq == w.seen {
		return 0, true // edge-triggered: nothing happened since it last looked
	}
	ready, seq, ok := env.Poll(w, seq)
	if !ok {
		return 0, false
	}
	w.seen, w.fresh = seq, false
	ev := ready & w.events & user
	if ev != 0 && w.events&unix.EPOLLONESHOT != 0 {
		w.events &^= user // until EPOLL_CTL_MOD
	}
	return ev, true
}

// Scan polls epoll instance ep's watches that may report (its ready
// list, in its order, once the changed buckets are drained onto it) and
// writes the ready ones' events as struct epoll_event records of size
// bytes into out, the events' bits at 0 and their data at dataOff, up to
// limit records; a watch whose open file went is dropped. A
// level-triggered watch that reported stays queued, at the tail (the
// next scan polls it again, and those behind it get their turn); the
// others leave the list until their counter moves or Ctl changes them.
// It returns the records written.
func (t *Table[E]) Scan(ep int32, out []byte, limit, size, dataOff int) int {
	t.drain()
	n := 0
	last := t.readyTail[ep]
	for i := t.ready[ep]; i != 0 && n < limit; {
		w := &t.watches[i-1]
		next, end := w.rNext, i == last
		ev, ok := t.pollWatch(w)
		switch {
		case !ok:
			t.unwatch(w)
		case ev == 0 || w.events&(unix.EPOLLET|unix.EPOLLONESHOT) != 0:
			t.dequeue(w)
		default:
			t.dequeue(w)
			t.enqueue(w)
		}
		if ev != 0 {
			e := out[n*size:]
			binary.LittleEndian.PutUint32(e, ev)
			binary.LittleEndian.PutUint64(e[dataOff:], w.data)
			n++
		}
		if end {
			break
		}
		i = next
	}
	return n
}

// Release frees the watches of epoll instance ep, which is closing.
func (t *Table[E]) Release(ep int32) {
	var env E
	for i := *env.Head(ep); i != 0; {
		w := &t.watches[i-1]
		i = w.next
		t.free(w)
	}
}

// Closed drops the watches on descriptor fd, which is closing, if it is
// of a kind without a handle (eventfd, the console); those on an open
// file go when the open file does (Poll notices).
func (t *Table[E]) Closed(fd int32) {
	for i := t.byFD[fd]; i != 0; {
		w := &t.watches[i-1]
		i = w.fdNext
		if w.H < 0 {
			t.unwatch(w)
		}
	}
}
