package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/conin"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/procfs"
	"yolk/sched"
)

// Console input is package conin's ring (kernel/conin): the UART's
// receive interrupt (conin_$GOARCH.go: on amd64 ISA IRQ 4 through the I/O
// APIC, on arm64 the PL011's SPI through the GIC, to the boot CPU) fills
// it; a read takes what is there or blocks until something or the end of
// input arrives.
var conIn conin.In[uartIn]

// uartIn is conin's environment: the UART (conRxGet, conRxEnable) and
// the ring's lock.
type uartIn struct{}

var conInLock sched.TWALock

func (uartIn) Lock()             { conInLock.Lock() }
func (uartIn) Unlock()           { conInLock.Unlock() }
func (uartIn) Get() (byte, bool) { return conRxGet() }
func (uartIn) Enable(on bool)    { conRxEnable(on) }

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
		k, eof, seq := conIn.Take(tmp[:min(n, uintptr(len(tmp)))])
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
		atomic.AddUint64(&conIn.Waits, 1)
		if blockIntr(&conIn.WQ, 0, uintptr(unsafe.Pointer(&conIn.Seq)), seq, 0) == sched.WakeSignal {
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
