package procfs

// out writes a file's text into the caller's buffer: what does not fit is
// counted, not written, so a renderer returns the file's whole length.
// No append (which could grow the slice on the heap) and no strconv
// (whose appends the compiler cannot prove stay in place): numbers are
// formatted into small arrays on the stack.
type out struct {
	b []byte
	n int
}

func (o *out) str(s string) {
	if o.n < len(o.b) {
		copy(o.b[o.n:], s)
	}
	o.n += len(s)
}

func (o *out) bytes(p []byte) {
	if o.n < len(o.b) {
		copy(o.b[o.n:], p)
	}
	o.n += len(p)
}

func (o *out) ch(c byte) {
	if o.n < len(o.b) {
		o.b[o.n] = c
	}
	o.n++
}

// spaces writes k spaces (none if k <= 0).
func (o *out) spaces(k int) {
	for ; k > 0; k-- {
		o.ch(' ')
	}
}

// digits formats v in base 10 into d, returning the first digit's index.
func digits(d *[20]byte, v uint64) int {
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return i
		}
	}
}

// dec writes v ("%llu").
func (o *out) dec(v uint64) {
	var d [20]byte
	i := digits(&d, v)
	o.bytes(d[i:])
}

// decw writes v right-aligned in width columns ("%8lu").
func (o *out) decw(v uint64, width int) {
	var d [20]byte
	i := digits(&d, v)
	o.spaces(width - (len(d) - i))
	o.bytes(d[i:])
}

// decl writes v left-aligned in width columns ("%-20lu").
func (o *out) decl(v uint64, width int) {
	var d [20]byte
	i := digits(&d, v)
	o.bytes(d[i:])
	o.spaces(width - (len(d) - i))
}

// sdec writes a signed v ("%lld").
func (o *out) sdec(v int64) {
	if v < 0 {
		o.ch('-')
		o.dec(uint64(-v))
		return
	}
	o.dec(uint64(v))
}

// strl writes s left-aligned in width columns ("%-25s").
func (o *out) strl(s string, width int) {
	o.str(s)
	o.spaces(width - len(s))
}

// bytesl writes p left-aligned in width columns ("%-15s").
func (o *out) bytesl(p []byte, width int) {
	o.bytes(p)
	o.spaces(width - len(p))
}

const hexDigits = "0123456789abcdef"

// hex writes v in lower-case hexadecimal, zero-padded to width ("%08lx").
func (o *out) hex(v uint64, width int) { o.hexd(v, width, hexDigits) }

// hexUpper writes v in upper-case hexadecimal, zero-padded ("%08X").
func (o *out) hexUpper(v uint64, width int) { o.hexd(v, width, "0123456789ABCDEF") }

func (o *out) hexd(v uint64, width int, digits string) {
	var d [16]byte
	i := len(d)
	for {
		i--
		d[i] = digits[v&15]
		v >>= 4
		if v == 0 {
			break
		}
	}
	for k := len(d) - i; k < width; k++ {
		o.ch('0')
	}
	o.bytes(d[i:])
}

// oct writes v in octal ("%o").
func (o *out) oct(v uint64) {
	var d [22]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v&7)
		v >>= 3
		if v == 0 {
			break
		}
	}
	o.bytes(d[i:])
}

// centi writes v/100 with two decimals ("%lu.%02lu").
func (o *out) centi(v uint64) {
	o.dec(v / 100)
	o.ch('.')
	o.ch(byte('0' + v/10%10))
	o.ch(byte('0' + v%10))
}

// ticks converts nanoseconds to USER_HZ (100) ticks, as nsec_to_clock_t.
func ticks(ns uint64) uint64 { return ns / 10_000_000 }

// escaped writes a path as Linux's seq_path and mangle do for mounts and
// maps: space, tab, newline and backslash as octal escapes (\040).
func (o *out) escaped(p []byte, esc string) {
	for _, c := range p {
		special := false
		for i := 0; i < len(esc); i++ {
			if esc[i] == c {
				special = true
			}
		}
		if special {
			o.ch('\\')
			o.ch(byte('0' + c>>6))
			o.ch(byte('0' + c>>3&7))
			o.ch(byte('0' + c&7))
			continue
		}
		o.ch(c)
	}
}
