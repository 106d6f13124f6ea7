package kernel

import (
	"sync/atomic"
	"unsafe"
	"yolk/kernel/procfs"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/sched"
)

// Console input: bytes the host writes to the serial port, read from the
// console descriptors (0, 1, 2) like a terminal or pipe. The UART's receive
// interrupt (conin_$GOARCH.go: on amd64 ISA IRQ 4 through the I/O APIC, on
// arm64 the PL011's SPI through the GIC, to the boot CPU) moves them into a
// ring; a read takes what is there or blocks until something
// or the end of input arrives. No polling.
//
// A byte stream has no end of file, so the host frames it (qemu's
// stdin encoder, yolk run): 0xFF is an escape; 0xFF 0x00 is a literal
// 0xFF, 0xFF 0x01 the end of input (reads return 0 from then on); 0xFF
// before any other byte stands for that byte. When the ring is full the
// kernel turns the receive interrupt off and leaves the bytes in the UART,
// whose FIFO stops QEMU reading more: nothing is dropped; a read that makes
// room turns it back on.

const (
	conInSize  = 4096
	conEsc     = 0xFF
	conEscByte = 0x00
	conEscEOF  = 0x01
)

var conIn struct {
	lock    sched.TWALock
	buf     [conInSize]byte
	r, w    uint32 // read and write counts; w-r bytes are in buf
	esc     bool   // the last byte was the escape
	eof     bool
	stalled bool   // ring full: the receive interrupt is off
	seq     uint32 // atomic: bumped when data or the end arrives (readers block on it)
	wq      sched.WaitQueue

	irqs, waits uint64 // statistics (atomic)
}

// conInReceive takes what the UART received (the receive interrupt); it
// reports whether readers have something new.
func conInReceive() bool {
	atomic.AddUint64(&conIn.irqs, 1)
	conIn.lock.Lock()
	got := conInDrain()
	conIn.lock.Unlock()
	return got
}

// conInDrain moves received bytes into the ring until the UART is empty or
// the ring full; conIn.lock is held. It reports whether readers have
// something new.
func conInDrain() bool {
	seq := conIn.seq
	for conIn.w-conIn.r < conInSize {
		c, ok := conRxGet()
		if !ok {
			break
		}
		switch {
		case conIn.esc:
			conIn.esc = false
			if c == conEscEOF {
				conIn.eof = true
				atomic.AddUint32(&conIn.seq, 1)
				continue
			}
			if c == conEscByte {
				c = conEsc
			}
		case c == conEsc:
			conIn.esc = true
			continue
		}
		if conIn.eof {
			continue // nothing after the end
		}
		conIn.buf[conIn.w%conInSize] = c
		conIn.w++
		atomic.AddUint32(&conIn.seq, 1)
	}
	if full := conIn.w-conIn.r == conInSize; full != conIn.stalled {
		conIn.stalled = full
		conRxEnable(!full)
	}
	return conIn.seq != seq
}

// consoleRead reads console input into the user buffer [p, p+n): what is
// there (at most 512 bytes a call), 0 at the end of input; while there is
// neither it blocks if wait, else returns 0 (readv's later buffers: data
// was read, and Linux's n_tty_read returns it).
func consoleRead(p, n uintptr, wait bool) (uintptr, abi.Errno) {
	if n == 0 {
		return 0, 0
	}
	if !mm.UserW(p, n) {
		return 0, abi.EFAULT
	}
	var tmp [512]byte
	for {
		conIn.lock.Lock()
		k := uint32(0)
		for conIn.r != conIn.w && uintptr(k) < n && int(k) < len(tmp) {
			tmp[k] = conIn.buf[conIn.r%conInSize]
			conIn.r++
			k++
		}
		if k > 0 && conIn.stalled {
			conInDrain() // room again: take what waits in the UART
		}
		eof, seq := conIn.eof, conIn.seq
		conIn.lock.Unlock()
		if k > 0 {
			// The buffer was checked before the wait; another
			// thread may have unmapped it meanwhile.
			if mm.CopyOut(p, tmp[:k]) != 0 {
				return 0, abi.EFAULT
			}
			return uintptr(k), 0
		}
		if eof || !wait {
			return 0, 0
		}
		atomic.AddUint64(&conIn.waits, 1)
		if blockIntr(&conIn.wq, 0, uintptr(unsafe.Pointer(&conIn.seq)), seq, 0) == sched.WakeSignal {
			return 0, errRestartSys // as Linux's n_tty_read
		}
	}
}

// consoleOps: the console descriptors (0, 1, 2 and their dups): input
// from the serial port as above, output to it. A readv's later buffers
// take what is there (data was read, as Linux's n_tty_read returns).
var consoleOps = fileOps{
	dupOK: true,
	read: func(o ofile, u *uio) (uintptr, abi.Errno) {
		return u.each(func(p, n uintptr, first bool) (uintptr, abi.Errno) { return consoleRead(p, n, first) })
	},
	write: func(o ofile, u *uio) (uintptr, abi.Errno) { return u.each(consoleWriteUser) },
	// The console's node lives on /dev, a tmpfs (Linux's devtmpfs).
	statfs: func(o ofile, st *unix.Statfs_t) abi.Errno { return abi.Errno(vfs.StatfsPath(fs.AtCWD, devDir[:4], st)) },
}

// consoleWriteUser writes the program's n bytes at p to the console,
// through a bounce buffer: the console lock is never held across the
// program's memory.
func consoleWriteUser(p, n uintptr, _ bool) (uintptr, abi.Errno) {
	var buf [512]byte
	done := uintptr(0)
	for done < n {
		c := min(n-done, uintptr(len(buf)))
		if mm.CopyIn(buf[:c], p+done) != 0 {
			return partial(done, abi.EFAULT)
		}
		consoleWrite(buf[:c])
		done += c
	}
	return n, 0
}

func consoleProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	d.Kind, d.MntID = procfs.FDConsole, procMntDev
}
