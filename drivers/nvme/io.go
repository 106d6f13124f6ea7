package nvme

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// command is a submission queue entry (§4.2): 16 dwords; dword 0 holds
// the opcode and (set by do) the command identifier, the slot.
type command struct{ w [16]uint32 }

// statusFailed is the status of a command the controller's failure
// ended (fail): not one a controller writes (the field is 15 bits).
const statusFailed = 0xffffffff

// get takes a free slot of q, waiting while all are in use.
func (c *Ctrl[E]) get(q *queue) int {
	for {
		c.env.Lock(int(q.id))
		if q.free != 0 {
			s := bits.TrailingZeros32(q.free)
			q.free &^= 1 << s
			c.env.Unlock(int(q.id))
			return s
		}
		seq := atomic.LoadUint32(&q.freeSeq)
		c.env.Unlock(int(q.id))
		if c.env.Wait(&q.freeSeq, seq, 0) {
			c.poll(q) // before tasks run
		}
	}
}

// release gives slot s back, unless its command timed out and is still
// the controller's: then the slot is abandoned, and the command's
// completion (harvest) or the controller's failure frees it. A slot has
// one owner at a time: whoever took it, until release; the controller
// only after release, while lost.
func (c *Ctrl[E]) release(q *queue, s int) {
	c.env.Lock(int(q.id))
	kept := q.lost&(1<<s) == 0
	if kept {
		q.free |= 1 << s
		atomic.AddUint32(&q.freeSeq, 1)
	} else {
		q.abandoned |= 1 << s
	}
	c.env.Unlock(int(q.id))
	if kept {
		c.env.Wake(&q.freeSeq)
	}
}

// tryGet takes a free slot of q if there is one.
func (c *Ctrl[E]) tryGet(q *queue) (int, bool) {
	c.env.Lock(int(q.id))
	s, ok := bits.TrailingZeros32(q.free), q.free != 0
	if ok {
		q.free &^= 1 << s
	}
	c.env.Unlock(int(q.id))
	return s, ok
}

// do submits cmd in slot s of q and waits for its completion, at most
// Timeout: 0 once the controller answered (its status is q.Status[s]),
// EIO if it failed or the command timed out.
func (c *Ctrl[E]) do(q *queue, s int, cmd *command) Errno {
	if !c.submit(q, s, cmd) {
		return EIO
	}
	return c.wait(q, s, cmd)
}

// submit puts cmd in slot s on q's submission queue and rings its
// doorbell; false if the controller failed.
func (c *Ctrl[E]) submit(q *queue, s int, cmd *command) bool {
	cmd.w[0] = cmd.w[0]&0xffff | uint32(s)<<16
	qi := int(q.id)
	c.env.Lock(qi)
	if atomic.LoadUint32(&c.failed) != 0 {
		c.env.Unlock(qi)
		return false
	}
	atomic.StoreUint32(&q.Done[s], 0)
	q.sent[s] = c.env.Now()
	e := q.sq + uintptr(q.tail)*64
	for i, w := range cmd.w {
		*at[uint32](e + 4*uintptr(i)) = w
	}
	if q.tail++; q.tail == q.entries {
		q.tail = 0
	}
	q.busy |= 1 << s
	atomic.AddUint64(&c.Stats.Commands, 1)
	write32(c.sqDoorbell(q.id), uint32(q.tail))
	c.env.Unlock(qi)
	return true
}

// wait waits for slot s's command, at most Timeout after it was sent (do
// says what it returns).
func (c *Ctrl[E]) wait(q *queue, s int, cmd *command) Errno {
	deadline := q.sent[s] + c.Timeout
	for atomic.LoadUint32(&q.Done[s]) == 0 {
		now := c.env.Now()
		if now >= deadline {
			if c.timedOut(q, s, cmd) {
				break // it came back after all
			}
			return EIO
		}
		if c.env.Wait(&q.Done[s], 0, min(deadline, now+PollEvery)) {
			c.poll(q)
		}
	}
	if atomic.LoadUint32(&q.Status[s]) == statusFailed {
		c.quiesce()
		return EIO
	}
	return 0
}

// quiesce waits, in the task of a request the failure ended, until the
// disabled controller's CSTS.RDY reads 0 (its DMA has stopped: RWPhys's
// memory is the caller's again), at most CAP.TO, sleeping a millisecond
// between looks. fail itself cannot wait: it may run in the interrupt
// handler.
func (c *Ctrl[E]) quiesce() {
	for end := c.env.Now() + c.info.ReadyTO; read32(c.regs+regCSTS)&cstsRDY != 0 && c.env.Now() < end; {
		c.env.Wait(&c.idle, 0, c.env.Now()+1e6)
	}
}

// timedOut handles slot s's command that did not complete within the
// timeout: it is aborted (§5.1) and its slot kept until it comes back;
// one that does not come back within abortWait, or a lost admin
// command, fails the controller. It reports whether the command had
// completed after all.
func (c *Ctrl[E]) timedOut(q *queue, s int, cmd *command) bool {
	qi := int(q.id)
	c.env.Lock(qi)
	if atomic.LoadUint32(&q.Done[s]) != 0 {
		c.env.Unlock(qi)
		return true
	}
	q.lost |= 1 << s
	c.env.Unlock(qi)
	atomic.AddUint64(&c.Stats.Timeouts, 1)
	c.report("no completion within the timeout", cmd, 0)
	if qi == 0 {
		c.fail("an admin command timed out")
		c.quiesce()
		return false
	}
	atomic.AddUint64(&c.Stats.Aborts, 1)
	as := c.get(&c.q[0])
	var ab command
	ab.w[0] = opAbort
	ab.w[10] = uint32(s)<<16 | uint32(q.id)
	c.do(&c.q[0], as, &ab)
	c.release(&c.q[0], as)
	for end := c.env.Now() + abortWait; ; {
		c.env.Lock(qi)
		gone := q.lost&(1<<s) == 0
		seq := atomic.LoadUint32(&q.freeSeq)
		c.env.Unlock(qi)
		if gone {
			return false
		}
		now := c.env.Now()
		if now >= end {
			c.fail("an aborted command did not come back")
			c.quiesce()
			return false
		}
		if c.env.Wait(&q.freeSeq, seq, min(end, now+PollEvery)) {
			c.poll(q)
		}
	}
}

// poll harvests q without an interrupt and checks CSTS for a fatal
// status (a wait that saw nothing for PollEvery).
func (c *Ctrl[E]) poll(q *queue) {
	atomic.AddUint64(&c.Stats.Polled, 1)
	if st := read32(c.regs + regCSTS); st&cstsCFS != 0 {
		if st == 0xffffffff {
			c.fail("the controller is gone (CSTS reads all ones)")
		} else {
			c.fail("fatal status (CSTS.CFS)")
		}
		return
	}
	c.harvest(q)
}

// Interrupt is the controller's interrupt handler's work: every
// completion queue's new entries (phase bit) mark their slots done and
// wake the waiters; the completion queues' head doorbells are written,
// which drops the pin-based interrupt. A line with nothing to harvest
// checks CSTS.CFS. It reports whether anything came back.
func (c *Ctrl[E]) Interrupt() bool {
	atomic.AddUint64(&c.Stats.Interrupts, 1)
	any := false
	for i := 0; i <= int(atomic.LoadInt32(&c.nq)); i++ {
		if c.harvest(&c.q[i]) {
			any = true
		}
	}
	if !any && atomic.LoadUint32(&c.failed) == 0 && c.regs != 0 {
		if st := read32(c.regs + regCSTS); st&cstsCFS != 0 && st != 0xffffffff {
			c.fail("fatal status (CSTS.CFS)")
		}
	}
	return any
}

// harvest takes q's new completion entries; it reports whether there
// were any.
func (c *Ctrl[E]) harvest(q *queue) bool {
	qi := int(q.id)
	c.env.Lock(qi)
	if q.cq == 0 || atomic.LoadUint32(&c.failed) != 0 {
		c.env.Unlock(qi)
		return false
	}
	var done, freed uint32
	n := 0
	for {
		e := q.cq + uintptr(q.head)*16
		w3 := atomic.LoadUint32(at[uint32](e + 12))
		if w3>>16&1 != q.phase {
			break
		}
		dw0 := atomic.LoadUint32(at[uint32](e))
		if q.head++; q.head == q.entries {
			q.head, q.phase = 0, q.phase^1
		}
		n++
		s := w3 & 0xffff
		if s >= uint32(q.slots) || q.busy&(1<<s) == 0 {
			atomic.AddUint64(&c.Stats.Stray, 1)
			continue
		}
		q.busy &^= 1 << s
		if q.lost&(1<<s) != 0 {
			// A timed-out command back: its slot is free if its owner
			// let it go, else the owner (in timedOut) frees it.
			q.lost &^= 1 << s
			if q.abandoned&(1<<s) != 0 {
				q.abandoned &^= 1 << s
				q.free |= 1 << s
			}
			freed |= 1 << s
			atomic.AddUint64(&c.Stats.Late, 1)
			continue
		}
		atomic.StoreUint32(&q.Result[s], dw0)
		atomic.StoreUint32(&q.Status[s], w3>>17)
		atomic.StoreUint32(&q.Done[s], 1)
		done |= 1 << s
	}
	if n > 0 {
		write32(c.cqDoorbell(q.id), uint32(q.head))
	}
	if freed != 0 {
		atomic.AddUint32(&q.freeSeq, 1)
	}
	c.env.Unlock(qi)
	for m := done; m != 0; m &= m - 1 {
		c.env.Wake(&q.Done[bits.TrailingZeros32(m)])
	}
	if freed != 0 {
		c.env.Wake(&q.freeSeq)
	}
	return n > 0
}

// fail fails the controller: it is disabled (CC.EN cleared: it drops its
// queues and stops its DMA), every command in flight ends in EIO and its
// slot comes back, and every later request ends in EIO at once.
func (c *Ctrl[E]) fail(why string) {
	if !atomic.CompareAndSwapUint32(&c.failed, 0, 1) {
		return
	}
	c.env.Lock(0) // the console's line whole
	c.logName()
	c.env.Log(": controller failed: ")
	c.env.Log(why)
	c.env.Log("; every request now ends in EIO\n")
	c.env.Unlock(0)
	write32(c.regs+regCC, 0)
	for i := 0; i <= int(atomic.LoadInt32(&c.nq)); i++ {
		q := &c.q[i]
		c.env.Lock(i)
		done := q.busy &^ q.lost
		q.free |= q.abandoned // lost and let go; a lost slot's owner frees it itself
		for m := done; m != 0; m &= m - 1 {
			s := bits.TrailingZeros32(m)
			atomic.StoreUint32(&q.Status[s], statusFailed)
			atomic.StoreUint32(&q.Done[s], 1)
		}
		q.busy, q.lost, q.abandoned = 0, 0, 0
		atomic.AddUint32(&q.freeSeq, 1)
		c.env.Unlock(i)
		for m := done; m != 0; m &= m - 1 {
			c.env.Wake(&q.Done[bits.TrailingZeros32(m)])
		}
		c.env.Wake(&q.freeSeq)
	}
}

func (c *Ctrl[E]) logName() {
	n := 0
	for n < len(c.Name) && c.Name[n] != 0 {
		n++
	}
	if n == 0 {
		c.env.Note("nvme")
		return
	}
	c.env.Note(unsafe.String(&c.Name[0], n))
}

// report prints one line about command cmd: what happened, and the
// status if st is not 0.
func (c *Ctrl[E]) report(what string, cmd *command, st uint32) {
	c.env.Lock(0) // the line whole: the admin queue's lock is held briefly, never around a report
	c.logName()
	c.env.Log(": ")
	c.env.Log(what)
	c.env.Log(" (opcode ")
	c.env.LogDec(int64(cmd.w[0] & 0xff))
	c.env.Log(", namespace ")
	c.env.LogDec(int64(cmd.w[1]))
	c.env.Log(", LBA ")
	c.env.LogDec(int64(uint64(cmd.w[10]) | uint64(cmd.w[11])<<32))
	if st != 0 {
		c.env.Log(", status type ")
		c.env.LogDec(int64(st >> 8 & 7))
		c.env.Log(" code ")
		c.env.LogDec(int64(st & 0xff))
	}
	c.env.Log("): EIO\n")
	c.env.Unlock(0)
}
