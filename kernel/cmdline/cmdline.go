// Package cmdline reads the command line the host tool writes: the
// kernel options, the environment and the arguments of the program, from
// the boot loader (amd64) or the device tree (arm64); and the values of
// the options it knows the syntax of (yolk.net, yolk.initrd, QEMU
// microvm's virtio_mmio.device entries). What an option means is the
// kernel's: it is handed the tokens through Env.
//
// Command line grammar: whitespace-separated tokens, a token may be
// double-quoted with \" and \\ escapes. Tokens "yolk.NAME=VALUE" are
// kernel options; other NAME=VALUE tokens before a lone "--" are
// environment variables; everything else, and everything after "--", is
// an argument.
//
// Kernel-context Go, and more: it runs at boot, before the Go runtime
// exists, so it may not allocate, store a Go pointer into memory, hold an
// interface value or a func variable, or call the runtime; it reaches the
// kernel only through its type parameter (Env). It reads the line from a
// kernel buffer the kernel hands it (the kernel makes that of the
// loader's address). kernel/kcontext_test.go checks it on a built image;
// the hosted tests run it as it is.
package cmdline

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	// Arg is called for each argument, argv[0] first, and Env for each
	// environment variable (tok): each is the NUL-terminated token at
	// offset off of the buffer Parse writes.
	Arg(off int)
	Env(off int, tok []byte)
	// Option is called for each kernel option "yolk.NAME=VALUE" before
	// "--", with NAME=VALUE.
	Option(opt []byte)
	// MMIODevice is called for each virtio_mmio.device entry that
	// parses.
	MMIODevice(base, irq uint64)
}

// Argv0 is the program's argv[0].
const Argv0 = "yolk"

// Parse reads the command line in s (nil: none) into buf, tokens
// unquoted and NUL-terminated, argv[0] first, and hands each to E.
func Parse[E Env](s *[4096]byte, buf *[4096]byte) {
	var e E
	n := 0
	put := func(c byte) bool {
		if n >= len(buf) {
			return false
		}
		buf[n] = c
		n++
		return true
	}
	// argv[0]
	for i := 0; i < len(Argv0); i++ {
		put(Argv0[i])
	}
	put(0)
	e.Arg(0)
	if s == nil {
		return
	}
	afterDashes := false
	i := start(s)
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
		if i >= len(s) || s[i] == 0 {
			return
		}
		start := n
		quoted := false
		for i < len(s) && s[i] != 0 {
			c := s[i]
			if c == '"' {
				quoted = !quoted
				i++
				continue
			}
			if quoted && c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
				i++
				c = s[i]
			} else if !quoted && (c == ' ' || c == '\t' || c == '\n') {
				break
			}
			put(c)
			i++
		}
		if !put(0) {
			return
		}
		tok := buf[start : n-1]
		switch {
		case !afterDashes && string(tok) == "--":
			afterDashes = true
			n = start
		case HasPrefix(tok, mmioDeviceKey):
			// QEMU microvm appends these after everything else,
			// after a "--" too: never the program's.
			if base, irq, ok := mmioDevice(tok[len(mmioDeviceKey):]); ok {
				e.MMIODevice(base, irq)
			}
			n = start
		case !afterDashes && HasPrefix(tok, "yolk."):
			e.Option(tok[5:])
			n = start
		case !afterDashes && isEnv(tok):
			e.Env(start, tok)
		default:
			e.Arg(start)
		}
	}
}

// startMark starts the command line proper when a boot loader puts its
// own options in front of it (the Raspberry Pi firmware writes Linux's
// into /chosen/bootargs before cmdline.txt's line): parsing begins after
// the mark; a line without one is read whole.
const startMark = "yolk.start"

// start is the offset just after startMark in s (a whole token), or 0.
func start(s *[4096]byte) int {
	for i := 0; i+len(startMark) <= len(s) && s[i] != 0; i++ {
		if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != '\n' {
			continue
		}
		if string(s[i:i+len(startMark)]) != startMark {
			continue
		}
		if j := i + len(startMark); j == len(s) || s[j] == 0 || s[j] == ' ' || s[j] == '\t' || s[j] == '\n' {
			return j
		}
	}
	return 0
}

// HasPrefix reports whether b starts with p.
func HasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}

// isEnv reports whether tok looks like NAME=VALUE.
func isEnv(tok []byte) bool {
	for i, c := range tok {
		switch {
		case c == '=':
			return i > 0
		case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return false
}

// CutPrefix is b without its prefix p, if it has it.
func CutPrefix(b []byte, p string) ([]byte, bool) {
	if !HasPrefix(b, p) {
		return nil, false
	}
	return b[len(p):], true
}

// Atoi is the decimal value of b (0 if b is not a number).
func Atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// Initrd finds "yolk.initrd=0xADDR,SIZE" on the command line s.
func Initrd(s *[4096]byte) (addr, size uintptr) {
	const key = "yolk.initrd="
	for i := 0; i+len(key) < len(s) && s[i] != 0; i++ {
		if (i > 0 && s[i-1] != ' ') || string(s[i:i+len(key)]) != key {
			continue
		}
		j := i + len(key)
		if j+2 < len(s) && s[j] == '0' && s[j+1] == 'x' {
			j += 2
		}
		for ; j < len(s); j++ {
			d := hexDigit(s[j])
			if d < 0 {
				break
			}
			addr = addr<<4 | uintptr(d)
		}
		if j >= len(s) || s[j] != ',' {
			return 0, 0
		}
		for j++; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
			size = size*10 + uintptr(s[j]-'0')
		}
		return addr, size
	}
	return 0, 0
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Net is the network address yolk.net=ADDR/PREFIX,GATEWAY[,DNS] gives
// (IPv4, dotted quads; prefix 1 to 32).
type Net struct {
	Addr, GW, DNS [4]byte
	Prefix        int
}

// ParseNet parses yolk.net's value v other than "dhcp"; ok is false if
// it is malformed.
func ParseNet(v []byte) (c Net, ok bool) {
	rest, ok := parseIPv4(v, &c.Addr)
	if ok && len(rest) > 1 && rest[0] == '/' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' && i < 4 {
			c.Prefix = c.Prefix*10 + int(rest[i]-'0')
			i++
		}
		rest = rest[i:]
		ok = i > 1 && c.Prefix >= 1 && c.Prefix <= 32
	} else {
		ok = false
	}
	if ok && len(rest) > 1 && rest[0] == ',' {
		rest, ok = parseIPv4(rest[1:], &c.GW)
	} else {
		ok = false
	}
	if ok && len(rest) > 1 && rest[0] == ',' {
		rest, ok = parseIPv4(rest[1:], &c.DNS)
	}
	return c, ok && len(rest) == 0
}

// parseIPv4 parses a dotted quad at the start of b into a and returns the
// rest of b.
func parseIPv4(b []byte, a *[4]byte) ([]byte, bool) {
	i := 0
	for k := 0; k < 4; k++ {
		if k > 0 {
			if i >= len(b) || b[i] != '.' {
				return b, false
			}
			i++
		}
		v, digits := 0, 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && digits < 3 {
			v = v*10 + int(b[i]-'0')
			i++
			digits++
		}
		if digits == 0 || v > 255 {
			return b, false
		}
		a[k] = byte(v)
	}
	return b[i:], true
}

// mmioDeviceKey starts the entries QEMU microvm appends to the command
// line for each virtio-mmio transport with a device behind it (Linux's
// syntax, SIZE@BASE:IRQ, such as "virtio_mmio.device=512@0xfeb00e00:12").
const mmioDeviceKey = "virtio_mmio.device="

// mmioDevice parses such an entry's value.
func mmioDevice(v []byte) (base, irq uint64, ok bool) {
	size, rest := parseNum(v)
	if len(rest) > 0 && (rest[0]|0x20 == 'k') {
		size <<= 10
		rest = rest[1:]
	}
	if size == 0 || len(rest) == 0 || rest[0] != '@' {
		return 0, 0, false
	}
	base, rest = parseNum(rest[1:])
	if base == 0 || len(rest) == 0 || rest[0] != ':' {
		return 0, 0, false
	}
	irq, rest = parseNum(rest[1:])
	if len(rest) > 0 && rest[0] != ':' { // ":ID" may follow
		return 0, 0, false
	}
	return base, irq, true
}

// parseNum parses a decimal or 0x-prefixed hexadecimal number at the start
// of b and returns it and the rest (0 and b if there is none).
func parseNum(b []byte) (uint64, []byte) {
	v, i := uint64(0), 0
	if len(b) > 2 && b[0] == '0' && b[1]|0x20 == 'x' {
		for i = 2; i < len(b) && i < 18 && hexDigit(b[i]) >= 0; i++ {
			v = v<<4 | uint64(hexDigit(b[i]))
		}
		if i == 2 {
			return 0, b
		}
		return v, b[i:]
	}
	for ; i < len(b) && i < 19 && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + uint64(b[i]-'0')
	}
	return v, b[i:]
}
