package cqs

import "sync/atomic"

// SegmentSize is the number of cells per segment of the infinite array. The
// paper settles on 64 after minimal tuning; so do we. A segment of the
// waiter queue costs SegmentSize pointer-sized cells plus a 32-byte header
// (544 bytes on 64-bit targets).
const SegmentSize = 64

// pointerUnit is the increment of the reference count kept in the upper half
// of segment.cleanedAndPointers; the lower half counts cancelled cells.
const pointerUnit = 1 << 16

// A segment is one node of the linked list that emulates an infinite array
// of cells: segment id holds cells [id*SegmentSize, (id+1)*SegmentSize).
// Segments are appended at the tail only. A segment whose every cell is
// cancelled and which neither end of the array references is logically
// removed and unlinked from the list in O(1) (under no contention), so a
// stream of cancelled waiters does not keep memory alive.
type segment[C any] struct {
	id   int64
	next atomic.Pointer[segment[C]]
	prev atomic.Pointer[segment[C]]
	// cancelled cells (low 16 bits) + pointerUnit × references from the
	// ends of the array (head/tail) that currently point here.
	cleanedAndPointers atomic.Int32
	cells              [SegmentSize]C
}

func newSegment[C any](id int64, prev *segment[C], pointers int32) *segment[C] {
	s := &segment[C]{id: id}
	s.prev.Store(prev)
	s.cleanedAndPointers.Store(pointers * pointerUnit)
	return s
}

func (s *segment[C]) isTail() bool { return s.next.Load() == nil }

// removed reports whether s is logically removed: all cells cancelled, no
// end of the array points to it, and it is not the physical tail (the tail
// is removed once a successor has been appended).
func (s *segment[C]) removed() bool {
	return s.cleanedAndPointers.Load() == SegmentSize && !s.isTail()
}

// tryIncPointers registers one more reference from an end of the array; it
// fails if the segment is already removed.
func (s *segment[C]) tryIncPointers() bool {
	for {
		v := s.cleanedAndPointers.Load()
		if v == SegmentSize && !s.isTail() {
			return false
		}
		if s.cleanedAndPointers.CompareAndSwap(v, v+pointerUnit) {
			return true
		}
	}
}

// decPointers drops one reference and reports whether that made s removed.
func (s *segment[C]) decPointers() bool {
	return s.cleanedAndPointers.Add(-pointerUnit) == SegmentSize && !s.isTail()
}

// onCancelledCell records one more cancelled cell and unlinks the segment
// when that was the last live one.
func (s *segment[C]) onCancelledCell() {
	if s.cleanedAndPointers.Add(1) == SegmentSize {
		s.remove()
	}
}

// remove unlinks a logically removed segment: it links its nearest live
// neighbours to each other. Stores may race with other removals; each
// remover re-checks that both neighbours are still alive after linking and
// retries otherwise, so no live segment is ever skipped for good.
func (s *segment[C]) remove() {
	if s.isTail() {
		return // removed later, when a successor is appended (findSegment)
	}
	for {
		prev := s.aliveLeft()
		next := s.aliveRight()
		for {
			p := next.prev.Load()
			if p == nil || next.prev.CompareAndSwap(p, prev) {
				break // nil: the resume end has passed, keep it cut
			}
		}
		if prev != nil {
			prev.next.Store(next)
		}
		if next.removed() {
			continue
		}
		if prev != nil && prev.removed() {
			continue
		}
		return
	}
}

func (s *segment[C]) aliveLeft() *segment[C] {
	cur := s.prev.Load()
	for cur != nil && cur.removed() {
		cur = cur.prev.Load()
	}
	return cur
}

func (s *segment[C]) aliveRight() *segment[C] {
	cur := s.next.Load()
	for cur.removed() {
		n := cur.next.Load()
		if n == nil {
			return cur
		}
		cur = n
	}
	return cur
}

// findSegment returns the first live segment with id >= id, walking from
// start and appending fresh segments at the tail as needed. If it returns a
// segment with a larger id, every segment in between was removed, i.e. all
// their cells were cancelled.
func findSegment[C any](start *segment[C], id int64) *segment[C] {
	cur := start
	for cur.id < id || cur.removed() {
		next := cur.next.Load()
		if next == nil {
			n := newSegment(cur.id+1, cur, 0)
			if !cur.next.CompareAndSwap(nil, n) {
				continue
			}
			segmentsCreated.Add(1)
			if cur.removed() { // cur stopped being the tail: remove it now
				cur.remove()
			}
			next = n
		}
		cur = next
	}
	return cur
}

// moveForward advances end to `to` unless it is already at or beyond it. It
// fails if `to` was removed meanwhile.
func moveForward[C any](end *atomic.Pointer[segment[C]], to *segment[C]) bool {
	for {
		cur := end.Load()
		if cur.id >= to.id {
			return true
		}
		if !to.tryIncPointers() {
			return false
		}
		if end.CompareAndSwap(cur, to) {
			if cur.decPointers() {
				cur.remove()
			}
			return true
		}
		if to.decPointers() {
			to.remove()
		}
	}
}

// findAndMoveForward finds the segment for id (or the first live one after
// it) starting from start and moves end forward to it.
func findAndMoveForward[C any](end *atomic.Pointer[segment[C]], start *segment[C], id int64) *segment[C] {
	for {
		s := findSegment(start, id)
		if moveForward(end, s) {
			return s
		}
	}
}

// segmentsCreated counts segments appended to any array since the process
// started (tests compare it with the number of segments still reachable).
var segmentsCreated atomic.Int64

// An array is the infinite array of cells with two ends: the one that
// claims cells for insertion (Suspend, Put) and the one that claims them
// for removal (Resume, Take). Each end is a Fetch-and-Add counter plus a
// pointer to the segment where it last worked.
type array[C any] struct {
	enqIdx atomic.Int64
	tail   atomic.Pointer[segment[C]]
	deqIdx atomic.Int64
	head   atomic.Pointer[segment[C]]
}

func (a *array[C]) init() {
	s := newSegment[C](0, nil, 2)
	a.head.Store(s)
	a.tail.Store(s)
}

// claimEnq reserves the next insertion cell.
func (a *array[C]) claimEnq() (*segment[C], int64) {
	start := a.tail.Load()
	i := a.enqIdx.Add(1) - 1
	// The insertion cell is not cancelled yet, so its segment is live and
	// findSegment returns exactly segment i/SegmentSize.
	return findAndMoveForward(&a.tail, start, i/SegmentSize), i
}

// claimDeq reserves the next removal cell. The returned segment has a
// larger id than i/SegmentSize if cell i lies in a removed segment.
func (a *array[C]) claimDeq() (*segment[C], int64) {
	start := a.head.Load()
	i := a.deqIdx.Add(1) - 1
	s := findAndMoveForward(&a.head, start, i/SegmentSize)
	// Cells before the removal end are done with; let them be collected.
	s.prev.Store(nil)
	return s, i
}

// skipDeqTo moves the removal counter up to idx if it is lower (used to skip
// removed segments full of cancelled cells in one step).
func (a *array[C]) skipDeqTo(idx int64) {
	for {
		cur := a.deqIdx.Load()
		if cur >= idx || a.deqIdx.CompareAndSwap(cur, idx) {
			return
		}
	}
}
