package nvme

import "sync/atomic"

// Sector is the unit of RW's and RWPhys's addresses (512 bytes, as
// virtio-blk's), whatever the namespace's logical block size.
const Sector = 512

// ioQueue is the I/O queue of the current CPU (queues are shared when
// there are fewer than CPUs).
func (c *Ctrl[E]) ioQueue() *queue {
	return &c.q[1+c.env.CPU()%int(atomic.LoadInt32(&c.nq))]
}

// check validates a transfer of n bytes at sector on namespace ns.
func (c *Ctrl[E]) check(ns int, sector uint64, n int, write bool) (*Namespace, Errno) {
	if ns < 0 || ns >= c.nns {
		return nil, ENODEV
	}
	if atomic.LoadUint32(&c.failed) != 0 {
		return nil, EIO
	}
	nsp := &c.ns[ns]
	if write && nsp.ReadOnly {
		return nil, EROFS
	}
	bs := int(nsp.BlockSize)
	if n < 0 || n%bs != 0 || sector%uint64(bs/Sector) != 0 || sector > nsp.Sectors || uint64(n/Sector) > nsp.Sectors-sector {
		return nil, EINVAL
	}
	return nsp, 0
}

// rwCommand is a Read or Write of n bytes at sector (§6.9, §6.15).
func rwCommand(cmd *command, nsp *Namespace, sector uint64, n int, write bool) {
	op := uint32(OpRead)
	if write {
		op = OpWrite
	}
	lba := sector / uint64(nsp.BlockSize/Sector)
	cmd.w[0] = op
	cmd.w[1] = nsp.ID
	cmd.w[10], cmd.w[11] = uint32(lba), uint32(lba>>32)
	cmd.w[12] = uint32(n/int(nsp.BlockSize)) - 1
}

// Batch is how many commands one RW call has in flight at once at most
// (as many slots as are free, the first waited for): a transfer of up
// to Batch*MaxTransfer bytes goes to the controller together.
const Batch = 8

// RW reads (write false) or writes n bytes at sector of namespace ns
// (an index into Namespaces) from or to the memory at addr, copied
// through the slots' bounce pages with the environment's Copy, in
// commands of at most MaxTransfer bytes, up to Batch of them sent before
// the first is waited for. n is a multiple of the logical block size.
// Errors: EINVAL for a misaligned or out-of-range transfer, EROFS for a
// write to a read-only namespace, ENODEV for no such namespace, EFAULT
// if the memory faulted, EIO (an error status, a timeout, a failed
// controller).
func (c *Ctrl[E]) RW(ns int, sector uint64, addr uintptr, n int, write bool) Errno {
	nsp, e := c.check(ns, sector, n, write)
	if e != 0 {
		return e
	}
	q := c.ioQueue()
	var cmds [Batch]command
	var slots, lens [Batch]int
	var addrs [Batch]uintptr
	for n > 0 {
		k, err := 0, Errno(0)
		for ; k < Batch && n > 0; k++ {
			// Only the first slot is waited for: a call holding slots
			// never waits for another's.
			s, ok := 0, true
			if k == 0 {
				s = c.get(q)
			} else if s, ok = c.tryGet(q); !ok {
				break
			}
			cnt := min(n, int(c.info.MaxTransfer))
			if write && !c.copySlot(q, s, addr, cnt, true) {
				c.release(q, s)
				err = EFAULT
				break
			}
			cmd := &cmds[k]
			*cmd = command{}
			rwCommand(cmd, nsp, sector, cnt, write)
			setPRP(cmd, q.prp[s], q.prpPhys[s], &q.dataPhys[s], 0, cnt)
			if !c.submit(q, s, cmd) {
				c.release(q, s)
				err = EIO
				break
			}
			slots[k], lens[k], addrs[k] = s, cnt, addr
			sector += uint64(cnt / Sector)
			addr += uintptr(cnt)
			n -= cnt
		}
		for j := 0; j < k; j++ {
			s := slots[j]
			e := c.result(q, s, &cmds[j], c.wait(q, s, &cmds[j]))
			if e == 0 && !write && !c.copySlot(q, s, addrs[j], lens[j], false) {
				e = EFAULT
			}
			c.release(q, s)
			if err == 0 {
				err = e
			}
		}
		if err != 0 {
			return err
		}
	}
	return 0
}

// RWPhys is RW straight between the device and the physically
// contiguous kernel memory at phys (4-byte aligned, any offset in its
// page): no copy, the PRP entries name the memory's pages. The memory
// must stay the caller's until RWPhys returns; a command that times out
// is aborted and, if it does not come back, the controller is disabled
// before RWPhys returns, so no DMA reaches the memory after.
func (c *Ctrl[E]) RWPhys(ns int, sector uint64, phys uint64, n int, write bool) Errno {
	nsp, e := c.check(ns, sector, n, write)
	if e != 0 {
		return e
	}
	if phys&3 != 0 {
		return EINVAL
	}
	q := c.ioQueue()
	bs := int(nsp.BlockSize)
	for n > 0 {
		lim := min(int(c.info.MaxDirect), (prpEntries+1)*pageSize-int(phys&(pageSize-1)))
		cnt := min(n, lim&^(bs-1))
		s := c.get(q)
		var cmd command
		rwCommand(&cmd, nsp, sector, cnt, write)
		setPRP(&cmd, q.prp[s], q.prpPhys[s], nil, phys, cnt)
		e := c.result(q, s, &cmd, c.do(q, s, &cmd))
		c.release(q, s)
		if e != 0 {
			return e
		}
		sector += uint64(cnt / Sector)
		phys += uint64(cnt)
		n -= cnt
	}
	return 0
}

// Flush makes the writes namespace ns completed durable (§6.8): only a
// controller with a volatile write cache (VWC) needs it; without one it
// returns at once.
func (c *Ctrl[E]) Flush(ns int) Errno {
	if ns < 0 || ns >= c.nns {
		return ENODEV
	}
	if atomic.LoadUint32(&c.failed) != 0 {
		return EIO
	}
	if !c.info.VWC {
		return 0
	}
	q := c.ioQueue()
	s := c.get(q)
	var cmd command
	cmd.w[0] = OpFlush
	cmd.w[1] = c.ns[ns].ID
	e := c.result(q, s, &cmd, c.do(q, s, &cmd))
	c.release(q, s)
	return e
}

// Discard deallocates count sectors from sector of namespace ns
// (Dataset Management with AD, §6.7), where ONCS offers it (else
// EOPNOTSUPP); both multiples of the block size.
func (c *Ctrl[E]) Discard(ns int, sector, count uint64) Errno {
	if c.info.ONCS&4 == 0 {
		return EOPNOTSUPP
	}
	nsp, e := c.check(ns, sector, 0, true)
	if e != 0 {
		return e
	}
	bs := uint64(nsp.BlockSize / Sector)
	if count%bs != 0 || count > nsp.Sectors-sector {
		return EINVAL
	}
	q := c.ioQueue()
	for count > 0 {
		blocks := min(count/bs, 1<<31)
		s := c.get(q)
		r := q.data[s][0]
		*at[uint32](r) = 0 // context attributes
		*at[uint32](r + 4) = uint32(blocks)
		*at[uint64](r + 8) = sector / bs
		var cmd command
		cmd.w[0] = OpDSM
		cmd.w[1] = nsp.ID
		cmd.w[6], cmd.w[7] = uint32(q.dataPhys[s][0]), uint32(q.dataPhys[s][0]>>32)
		cmd.w[10] = 0      // one range
		cmd.w[11] = 1 << 2 // AD: deallocate
		e := c.result(q, s, &cmd, c.do(q, s, &cmd))
		c.release(q, s)
		if e != 0 {
			return e
		}
		sector += blocks * bs
		count -= blocks * bs
	}
	return 0
}

// result turns slot s's completion into an errno, with a line on the
// console for an error status.
func (c *Ctrl[E]) result(q *queue, s int, cmd *command, e Errno) Errno {
	if e != 0 {
		return e
	}
	st := atomic.LoadUint32(&q.Status[s]) & 0x7ff // SCT and SC
	if st == 0 {
		return 0
	}
	atomic.AddUint64(&c.Stats.Errors, 1)
	c.report("error status", cmd, st)
	if st == scInvalidOp {
		return EOPNOTSUPP
	}
	return EIO
}

// copySlot copies n bytes between addr and slot s's bounce pages (in:
// into the pages).
func (c *Ctrl[E]) copySlot(q *queue, s int, addr uintptr, n int, in bool) bool {
	for i := 0; n > 0; i++ {
		cnt := min(n, pageSize)
		ok := false
		if in {
			ok = c.env.Copy(q.data[s][i], addr, cnt)
		} else {
			ok = c.env.Copy(addr, q.data[s][i], cnt)
		}
		if !ok {
			return false
		}
		addr += uintptr(cnt)
		n -= cnt
	}
	return true
}

// setPRP fills cmd's data pointer (§4.3) for n bytes: in the pages
// pages (from their start) if it is not nil, else in the physically
// contiguous memory at base (any 4-byte aligned offset). PRP1 is the
// first byte; PRP2 the second page when there are two, else the list
// page (list, listPhys) holding the second and later pages' addresses.
func setPRP(cmd *command, list uintptr, listPhys uint64, pages *[DataPages]uint64, base uint64, n int) {
	off := base & (pageSize - 1)
	np := int((off + uint64(n) + pageSize - 1) / pageSize)
	prp1, prp2 := pageOf(pages, base, 0)+off, uint64(0)
	switch {
	case np == 2:
		prp2 = pageOf(pages, base, 1)
	case np > 2:
		for i := 1; i < np; i++ {
			*at[uint64](list + 8*uintptr(i-1)) = pageOf(pages, base, i)
		}
		prp2 = listPhys
	}
	cmd.w[6], cmd.w[7] = uint32(prp1), uint32(prp1>>32)
	cmd.w[8], cmd.w[9] = uint32(prp2), uint32(prp2>>32)
}

// pageOf is the i-th page's address: pages[i], or the i-th page from
// base's.
func pageOf(pages *[DataPages]uint64, base uint64, i int) uint64 {
	if pages != nil {
		return pages[i]
	}
	return base&^(pageSize-1) + uint64(i)*pageSize
}
