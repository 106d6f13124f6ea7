package kernel

import (
	"yolk/drivers/uart16550"
)

var (
	com1    = uart16550.UART{Base: uart16550.COM1}
	conLock spinlock
	// conCol is the column of the last byte written (0 after a newline), so
	// kernel messages can start on a fresh line.
	conCol int
)

func consoleInit() { com1.Init() }

func putc(c byte) {
	if c == '\n' {
		conCol = 0
	} else {
		conCol++
	}
	com1.Put(c)
}

// consoleWrite writes user bytes (the write system call on fd 1 and 2).
func consoleWrite(p []byte) {
	conLock.Lock()
	for _, c := range p {
		putc(c)
	}
	conLock.Unlock()
}

// kprint and friends write kernel messages without allocating.
func kprint(s string) {
	for i := 0; i < len(s); i++ {
		putc(s[i])
	}
}

// knewline starts a fresh line unless the cursor is at one.
func knewline() {
	if conCol != 0 {
		putc('\n')
	}
}

func kprintHex(v uint64, digits int) {
	const hex = "0123456789abcdef"
	var buf [16]byte
	if digits > 16 {
		digits = 16
	}
	for i := 15; i >= 0; i-- {
		buf[i] = hex[v&15]
		v >>= 4
	}
	// digits is the minimum width: only leading zeros beyond it go.
	start := 0
	for start < 16-digits && buf[start] == '0' {
		start++
	}
	kprint("0x")
	for i := start; i < 16; i++ {
		putc(buf[i])
	}
}

func kprintDec(v int64) {
	var buf [20]byte
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		putc('-')
	}
	for ; i < len(buf); i++ {
		putc(buf[i])
	}
}

// klog prints "yolk: " + s on a fresh line; callers add values and "\n".
func klog(s string) {
	knewline()
	kprint("yolk: ")
	kprint(s)
}
