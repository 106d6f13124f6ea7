package ces

import "sync/atomic"

// Cond is a condition variable bound to a Mutex. It must not be copied
// after first use.
//
// Signal and Broadcast never wake a goroutine only to have it block again on
// the mutex: a signalled waiter is moved straight onto L's queue if L is
// locked, and becomes L's owner if L is free. In the common pattern of
// signalling while holding L, the waiter is resumed by L's Unlock like any
// other queued Lock, on the unlocking goroutine's processor.
type Cond struct {
	// L is held while observing or changing the condition.
	L *Mutex

	_     noCopy
	state atomic.Uint32 // guardBit only; guards q
	q     queue
}

// NewCond returns a Cond bound to l.
func NewCond(l *Mutex) *Cond { return &Cond{L: l} }

// Wait atomically unlocks c.L and suspends the calling goroutine. Wait
// returns with c.L locked, after a Signal or Broadcast has chosen this
// goroutine and c.L has been handed to it. The caller must hold c.L. As
// with sync.Cond, the condition should be re-checked in a loop.
func (c *Cond) Wait() {
	w := getWaiter()
	c.guard()
	c.q.push(w)
	c.unguard()
	// Release L. The next owner is only made runnable, not exchanged: this
	// goroutine parks at once, so the new owner, sitting in this P's
	// runnext slot, is what this P runs next anyway.
	if next := c.L.l.release(); next != nil {
		dispatch(next)
	}
	w.park()
	putWaiter(w)
}

// Signal chooses the longest-waiting goroutine, if any, and moves it to
// c.L: onto L's queue if L is locked (the usual case, when the caller
// holds L), or, if L is free, it becomes L's owner and runs next on this
// processor while the caller moves to the global run queue.
func (c *Cond) Signal() {
	c.guard()
	w := c.q.pop()
	c.unguard()
	if w == nil {
		return
	}
	if c.L.l.acquireOrEnqueue(w) {
		exchange(w)
	}
}

// Broadcast moves all waiting goroutines, in waiting order, to c.L as
// Signal does for one.
func (c *Cond) Broadcast() {
	c.guard()
	list := c.q.take()
	c.unguard()
	if owner := c.L.l.enqueueList(list); owner != nil {
		exchange(owner)
	}
}

func (c *Cond) guard()   { guard32(&c.state) }
func (c *Cond) unguard() { c.state.Store(0) }

// noCopy makes go vet's copylocks check report copies.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
