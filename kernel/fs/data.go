package fs

import "golang.org/x/sys/unix"

// File data: page i of a file is direct[i] for i < nDirect, then an entry
// of the indirect page, then of a page the double-indirect page names. A
// zero entry is a hole and reads as zeroes.

// fill returns *p, first allocating a page into it when alloc is set.
func (f *FS[E]) fill(ip *inode, p *uintptr, alloc bool) (uintptr, Errno) {
	if *p != 0 || !alloc {
		return *p, 0
	}
	a, e := f.allocPage()
	if e != 0 {
		return 0, e
	}
	*p = a
	ip.pages++
	return a, 0
}

// block returns the address of data page i of ip (0: a hole), allocating
// it and the index pages on the way when alloc is set.
func (f *FS[E]) block(ip *inode, i int64, alloc bool) (uintptr, Errno) {
	if i < nDirect {
		return f.fill(ip, &ip.direct[i], alloc)
	}
	i -= nDirect
	if i < ptrsPerPage {
		t, e := f.fill(ip, &ip.ind, alloc)
		if t == 0 {
			return 0, e
		}
		return f.fill(ip, word(t+uintptr(i)*8), alloc)
	}
	i -= ptrsPerPage
	if i >= ptrsPerPage*ptrsPerPage {
		return 0, unix.EFBIG
	}
	t, e := f.fill(ip, &ip.dind, alloc)
	if t == 0 {
		return 0, e
	}
	t, e = f.fill(ip, word(t+uintptr(i/ptrsPerPage)*8), alloc)
	if t == 0 {
		return 0, e
	}
	return f.fill(ip, word(t+uintptr(i%ptrsPerPage)*8), alloc)
}

// readAt copies from ip at off into b and returns the count (short at the
// end of the file).
func (f *FS[E]) readAt(ip *inode, b []byte, off int64) int {
	if off >= ip.size {
		return 0
	}
	if rest := ip.size - off; int64(len(b)) > rest {
		b = b[:rest]
	}
	n := 0
	for n < len(b) {
		o := off + int64(n)
		in := int(o % PageSize)
		a, _ := f.block(ip, o/PageSize, false)
		var c int
		if a == 0 {
			c = len(b) - n
			if c > PageSize-in {
				c = PageSize - in
			}
			clear(b[n : n+c])
		} else {
			c = copy(b[n:], mem(a+uintptr(in), PageSize-in))
		}
		n += c
	}
	return n
}

// writeAt copies b into ip at off, growing it. A write that runs out of
// space stops short and reports the bytes written, or the error if none.
func (f *FS[E]) writeAt(ip *inode, b []byte, off int64) (int, Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	if off >= MaxFileSize {
		return 0, unix.EFBIG
	}
	if int64(len(b)) > MaxFileSize-off {
		b = b[:MaxFileSize-off]
	}
	n := 0
	var err Errno
	for n < len(b) {
		o := off + int64(n)
		in := int(o % PageSize)
		a, e := f.block(ip, o/PageSize, true)
		if e != 0 {
			err = e
			break
		}
		n += copy(mem(a+uintptr(in), PageSize-in), b[n:])
	}
	if end := off + int64(n); end > ip.size {
		ip.size = end
	}
	if n > 0 {
		now := f.env.Now()
		ip.mtime, ip.ctime = now, now
		return n, 0
	}
	return 0, err
}

// truncate sets ip's size: pages past the end are freed and the tail of
// the last page zeroed, so growing again reads zeroes.
func (f *FS[E]) truncate(ip *inode, size int64) {
	if size < ip.size && ip.maps > 0 {
		// Mapped: the pages stay (a mapping may reach them) and are
		// zeroed past the new end; the kernel takes them from the
		// mappings (TakeCut, ZeroPast), MapRef frees them once unmapped.
		ip.cut, f.cuts = true, true
		ip.cutEnd = max(ip.cutEnd, ip.size)
		for o := size; o < ip.size; o = (o/PageSize + 1) * PageSize {
			if a, _ := f.block(ip, o/PageSize, false); a != 0 {
				clear(mem(a+uintptr(o%PageSize), PageSize-int(o%PageSize)))
			}
		}
	} else if size < ip.size {
		if in := size % PageSize; in != 0 {
			if a, _ := f.block(ip, size/PageSize, false); a != 0 {
				clear(mem(a+uintptr(in), PageSize-int(in)))
			}
		}
		f.truncPages(ip, (size+PageSize-1)/PageSize)
	}
	ip.size = size
	now := f.env.Now()
	ip.mtime, ip.ctime = now, now
}

// truncPages frees data pages from page from on, and index pages left
// without entries.
func (f *FS[E]) truncPages(ip *inode, from int64) {
	for i := from; i < nDirect; i++ {
		f.release(ip, &ip.direct[i])
	}
	from -= nDirect
	if from < 0 {
		from = 0
	}
	if ip.ind != 0 {
		f.freeTable(ip, ip.ind, from)
		if from == 0 {
			f.release(ip, &ip.ind)
		}
	}
	from -= ptrsPerPage
	if from < 0 {
		from = 0
	}
	if ip.dind != 0 {
		for j := from / ptrsPerPage; j < ptrsPerPage; j++ {
			p := word(ip.dind + uintptr(j)*8)
			if *p == 0 {
				continue
			}
			first := from - j*ptrsPerPage
			if first < 0 {
				first = 0
			}
			f.freeTable(ip, *p, first)
			if first == 0 {
				f.release(ip, p)
			}
		}
		if from == 0 {
			f.release(ip, &ip.dind)
		}
	}
}

// freeTable frees the pages an index page names from entry from on.
func (f *FS[E]) freeTable(ip *inode, t uintptr, from int64) {
	for j := from; j < ptrsPerPage; j++ {
		f.release(ip, word(t+uintptr(j)*8))
	}
}

func (f *FS[E]) release(ip *inode, p *uintptr) {
	if *p != 0 {
		f.freePage(*p)
		*p = 0
		ip.pages--
	}
}
