package virtioblk

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"yolk/drivers/virtio"
)

// The requests: a slot taken, the data copied into its pages (a write),
// the chain header → data → status added and the device notified, the
// wait for the answer (at most Timeout), the data copied out (a read),
// the slot given back; and the interrupt's harvest.

// get takes a free slot, waiting for one while all are in flight.
func (k *Disk[E]) get() int {
	for {
		k.env.Lock()
		if k.free != 0 {
			s := bits.TrailingZeros32(k.free)
			k.free &^= 1 << s
			k.env.Unlock()
			return s
		}
		seq := atomic.LoadUint32(&k.freeSeq)
		k.env.Unlock()
		k.env.Wait(&k.freeSeq, seq, 0)
	}
}

// tryGet takes a free slot if there is one now, else -1.
func (k *Disk[E]) tryGet() int {
	k.env.Lock()
	defer k.env.Unlock()
	if k.free == 0 {
		return -1
	}
	s := bits.TrailingZeros32(k.free)
	k.free &^= 1 << s
	return s
}

// put gives slot s back; the lock is held.
func (k *Disk[E]) put(s int) {
	k.free |= 1 << s
	atomic.AddUint32(&k.freeSeq, 1)
}

// Pipe is how many requests one RW keeps in flight: the first slot is
// waited for, the others taken only when free at once (a caller never
// waits for a slot while it holds one).
const Pipe = 8

// RW reads (write false) or writes n bytes at sector from or to the
// memory at addr (copied through the environment's Copy), in requests
// of at most MaxTransfer bytes, up to Pipe of them in flight, answered
// in order. n is a multiple of the logical block size. Errors: EINVAL for a misaligned
// or out-of-range transfer, EROFS for a write to a read-only disk,
// EFAULT if the memory faulted, EIO (a device error, a timeout, a
// broken queue), EOPNOTSUPP (the device said UNSUPP).
func (k *Disk[E]) RW(sector uint64, addr uintptr, n int, write bool) Errno {
	bs := int(k.info.BlockSize)
	if n < 0 || n%bs != 0 || sector%uint64(bs/Sector) != 0 || sector > k.info.Sectors || uint64(n/Sector) > k.info.Sectors-sector {
		return EINVAL
	}
	if write && k.info.ReadOnly {
		return EROFS
	}
	typ := uint32(TIn)
	if write {
		typ = TOut
	}
	// The requests in flight, oldest at head; after an error no more
	// are sent and those in flight are waited for.
	var fl [Pipe]struct {
		s      int
		addr   uintptr
		n      int
		sector uint64
	}
	head, cnt := 0, 0
	var err Errno
	for {
		for n > 0 && err == 0 && cnt < Pipe {
			s := -1
			if cnt == 0 {
				s = k.get()
			} else if s = k.tryGet(); s < 0 {
				break
			}
			c := min(n, int(k.info.MaxTransfer))
			if write && !k.copySlot(s, addr, c, true) {
				k.release(s)
				err = EFAULT
				break
			}
			// Only the first request waits for room in the queue: the
			// others' room comes from those in flight, waited for below.
			if e := k.send(s, typ, sector, c, cnt == 0); e != 0 {
				k.release(s)
				if e != errNoRoom {
					err = e
				}
				break
			}
			r := &fl[(head+cnt)%Pipe]
			r.s, r.addr, r.n, r.sector = s, addr, c, sector
			cnt++
			sector += uint64(c / Sector)
			addr += uintptr(c)
			n -= c
		}
		if cnt == 0 {
			return err
		}
		r := &fl[head]
		e := k.wait(r.s, typ, r.sector)
		if e == 0 && !write && err == 0 && !k.copySlot(r.s, r.addr, r.n, false) {
			e = EFAULT
		}
		k.release(r.s)
		if err == 0 {
			err = e
		}
		head = (head + 1) % Pipe
		cnt--
	}
}

// copySlot copies n bytes between addr and slot s's pages (in: into the
// pages).
func (k *Disk[E]) copySlot(s int, addr uintptr, n int, in bool) bool {
	for i := 0; n > 0; i++ {
		c := min(n, pageSize)
		ok := false
		if in {
			ok = k.env.Copy(k.data[s][i], addr, c)
		} else {
			ok = k.env.Copy(addr, k.data[s][i], c)
		}
		if !ok {
			return false
		}
		addr += uintptr(c)
		n -= c
	}
	return true
}

// release frees slot s unless its request was lost to a timeout (then
// the device's answer frees it: Interrupt).
func (k *Disk[E]) release(s int) {
	k.env.Lock()
	kept := k.lost&(1<<s) == 0
	if kept {
		k.put(s)
	}
	k.env.Unlock()
	if kept {
		k.env.Wake(&k.freeSeq)
	}
}

// Flush asks the device to make every write it completed durable
// (VIRTIO_BLK_T_FLUSH); without FLUSH the device has no volatile cache
// to flush (§5.2.6.2): nothing to do.
func (k *Disk[E]) Flush() Errno {
	if !k.info.Flush {
		return 0
	}
	s := k.get()
	e := k.do(s, TFlush, 0, 0)
	k.release(s)
	return e
}

// Discard tells the device count sectors from sector are unused
// (VIRTIO_BLK_T_DISCARD); zeroes writes zeroes there
// (VIRTIO_BLK_T_WRITE_ZEROES). EOPNOTSUPP where the device offers
// neither.
func (k *Disk[E]) Discard(sector, count uint64, zeroes bool) Errno {
	typ, max := uint32(TDiscard), uint64(k.info.MaxDiscard)
	if zeroes {
		typ, max = TWriteZeroes, uint64(k.info.MaxZeroes)
	}
	if max == 0 {
		return EOPNOTSUPP
	}
	bs := uint64(k.info.BlockSize / Sector)
	if sector%bs != 0 || count%bs != 0 || sector > k.info.Sectors || count > k.info.Sectors-sector {
		return EINVAL
	}
	if k.info.ReadOnly {
		return EROFS
	}
	max &^= bs - 1
	for count > 0 {
		c := min(count, max)
		s := k.get()
		r := k.hdr + uintptr(s)*slotHdr + hdrRange
		*at[uint64](r) = sector
		*at[uint32](r + 8) = uint32(c)
		*at[uint32](r + 12) = 0 // flags: unmap allowed for discard, not asked for write-zeroes
		e := k.do(s, typ, 0, 0)
		k.release(s)
		if e != 0 {
			return e
		}
		sector += c
		count -= c
	}
	return 0
}

// do sends slot s's request (type typ at sector, n data bytes in its
// pages) and waits for its answer, at most Timeout.
func (k *Disk[E]) do(s int, typ uint32, sector uint64, n int) Errno {
	if e := k.send(s, typ, sector, n, true); e != 0 {
		return e
	}
	return k.wait(s, typ, sector)
}

// errNoRoom is send's answer when the queue is full and it may not wait.
const errNoRoom = Errno(1<<16 - 1)

// send puts slot s's request on the queue and notifies the device,
// waiting for room in the queue while it is full (block), else
// errNoRoom.
func (k *Disk[E]) send(s int, typ uint32, sector uint64, n int, block bool) Errno {
	h := k.hdr + uintptr(s)*slotHdr
	hp := k.hdrPhys + uint64(s)*slotHdr
	*at[uint32](h) = typ
	*at[uint32](h + 4) = 0
	*at[uint64](h + 8) = sector
	*at[uint8](h + hdrStatus) = 0xff // the device writes it
	var b [2 + DataPages]virtio.Buffer
	b[0] = virtio.Buffer{Addr: hp, Len: 16}
	nb := 1
	if typ == TDiscard || typ == TWriteZeroes {
		b[1] = virtio.Buffer{Addr: hp + hdrRange, Len: 16}
		nb = 2
	}
	nb += k.segments(b[nb:], s, n)
	out := nb
	if typ == TIn {
		out = 1
	}
	b[nb] = virtio.Buffer{Addr: hp + hdrStatus, Len: 1}
	nb++

	for {
		k.env.Lock()
		seq := atomic.LoadUint32(&k.freeSeq)
		head, e := k.q.Add(b[:nb], out)
		if e == virtio.OK {
			atomic.StoreUint32(&k.Done[s], 0)
			k.slotOf[head] = uint8(s)
			k.busy |= 1 << s
			k.Stats.Requests++
			k.dev.Kick(&k.q)
			k.env.Unlock()
			break
		}
		if e == virtio.ErrFull {
			k.Stats.QueueFull++
		}
		k.env.Unlock()
		if e != virtio.ErrFull {
			return EIO // broken: nothing will come back
		}
		if !block {
			return errNoRoom
		}
		k.env.Wait(&k.freeSeq, seq, 0)
	}
	return 0
}

// wait waits for slot s's answer, at most Timeout, and reads its status.
func (k *Disk[E]) wait(s int, typ uint32, sector uint64) Errno {
	h := k.hdr + uintptr(s)*slotHdr
	deadline := k.env.Now() + k.Timeout
	for atomic.LoadUint32(&k.Done[s]) == 0 {
		if k.env.Wait(&k.Done[s], 0, deadline) && k.env.Now() >= deadline {
			k.env.Lock()
			if atomic.LoadUint32(&k.Done[s]) != 0 {
				k.env.Unlock()
				break
			}
			k.lost |= 1 << s
			k.Stats.Timeouts++
			k.env.Unlock()
			k.report("no answer within the timeout (request type ", typ, sector)
			return EIO
		}
	}
	if atomic.LoadUint32(&k.Len[s]) == 0 {
		k.Stats.Errors++
		return EIO // the queue broke
	}
	switch *at[uint8](h + hdrStatus) {
	case SOK:
		return 0
	case SUnsupp:
		return EOPNOTSUPP
	}
	k.Stats.Errors++
	return EIO
}

// report prints one line about a failed request.
func (k *Disk[E]) report(what string, typ uint32, sector uint64) {
	k.env.Lock() // one line, whole
	k.env.Note("virtio-blk ")
	n := 0
	for n < len(k.Name) && k.Name[n] != 0 {
		n++
	}
	k.env.Log(unsafe.String(&k.Name[0], n))
	k.env.Log(": ")
	k.env.Log(what)
	k.env.LogDec(int64(typ))
	k.env.Log(", sector ")
	k.env.LogDec(int64(sector))
	k.env.Log("): EIO\n")
	k.env.Unlock()
}

// segments fills b with slot s's first n data bytes, pages that follow
// each other physically merged into one segment up to segLen, and
// returns how many it used.
func (k *Disk[E]) segments(b []virtio.Buffer, s, n int) int {
	nb := 0
	for i := 0; n > 0; i++ {
		c := uint32(min(n, pageSize))
		p := k.dataPhys[s][i]
		if nb > 0 && b[nb-1].Addr+uint64(b[nb-1].Len) == p && b[nb-1].Len+c <= k.segLen {
			b[nb-1].Len += c
		} else {
			b[nb] = virtio.Buffer{Addr: p, Len: c}
			nb++
		}
		n -= int(c)
	}
	return nb
}

// Interrupt is the device's interrupt handler's work: it acknowledges
// the interrupt, marks every answered request done and wakes its waiter;
// a request that timed out gets its slot back. A broken queue answers
// every request the device still has, with nothing (EIO). It reports
// whether anything came back.
func (k *Disk[E]) Interrupt() bool {
	k.env.Lock()
	k.dev.Interrupt()
	k.Stats.Interrupts++
	var mask, freed uint32
	for {
		head, l, ok := k.q.Next()
		if !ok {
			break
		}
		s := k.slotOf[head]
		if k.lost&(1<<s) != 0 {
			k.lost &^= 1 << s
			k.Stats.Late++
			k.put(int(s))
			freed |= 1 << s
		} else {
			atomic.StoreUint32(&k.Len[s], l)
			atomic.StoreUint32(&k.Done[s], 1)
			mask |= 1 << s
		}
	}
	k.busy &^= mask | freed
	if k.q.Broken() {
		for s := range k.Done {
			if k.busy&(1<<s) != 0 && k.lost&(1<<s) == 0 {
				atomic.StoreUint32(&k.Len[s], 0)
				atomic.StoreUint32(&k.Done[s], 1)
				mask |= 1 << s
			}
		}
		k.busy = 0
	}
	if mask|freed != 0 {
		atomic.AddUint32(&k.freeSeq, 1)
	}
	k.env.Unlock()
	for s := 0; s < Slots; s++ {
		if mask&(1<<s) != 0 {
			k.env.Wake(&k.Done[s])
		}
	}
	if mask|freed != 0 {
		k.env.Wake(&k.freeSeq)
	}
	return mask|freed != 0
}
