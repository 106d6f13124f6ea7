// Package kfmt writes numbers as the kernel's console lines show them,
// into the caller's buffer: hexadecimal with a minimum width, decimal.
//
// It may not allocate or reach anything of the kernel (kernel context,
// interrupts included).
package kfmt

// Hex writes v as "0x" and at least digits hexadecimal digits (at most
// 16; leading zeros beyond them dropped) into buf and returns them.
func Hex(buf *[18]byte, v uint64, digits int) []byte {
	const hex = "0123456789abcdef"
	digits = min(max(digits, 1), 16)
	i := len(buf)
	for v != 0 || len(buf)-i < digits {
		i--
		buf[i] = hex[v&15]
		v >>= 4
	}
	i -= 2
	buf[i], buf[i+1] = '0', 'x'
	return buf[i:]
}

// Dec writes v in decimal (a '-' before a negative one) into buf and
// returns it.
func Dec(buf *[21]byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	d := Decimal((*[20]byte)(buf[1:]), u)
	if v >= 0 {
		return d
	}
	i := len(buf) - len(d) - 1
	buf[i] = '-'
	return buf[i:]
}

// Decimal writes u in decimal at the end of buf and returns those digits.
func Decimal(buf *[20]byte, u uint64) []byte {
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			return buf[i:]
		}
	}
}
