package kernel

import "yolk/sched"

// The command line: the kernel options, the environment and the arguments
// of the program, from the boot loader (amd64) or the device tree (arm64).
//
// Command line grammar (written by the host tool): whitespace-separated
// tokens, a token may be double-quoted with \" and \\ escapes. Tokens
// "yolk.NAME=VALUE" are kernel options; other NAME=VALUE tokens before a
// lone "--" are environment variables; everything else, and everything after
// "--", is an argument.

const (
	maxArgs = 64
	maxEnv  = 64
)

var (
	cmdBuf [4096]byte // tokens, NUL-terminated, unquoted
	argOff [maxArgs]int
	envOff [maxEnv]int
	nargs  int
	nenv   int
	// gomemlimitOff is set if the command line set GOMEMLIMIT.
	gomemlimitOff = -1
	// homeSet: the command line set HOME.
	homeSet bool
)

const argv0 = "yolk"

func parseCmdline(p uintptr) {
	n := 0
	put := func(c byte) bool {
		if n >= len(cmdBuf) {
			return false
		}
		cmdBuf[n] = c
		n++
		return true
	}
	// argv[0]
	argOff[0] = 0
	for i := 0; i < len(argv0); i++ {
		put(argv0[i])
	}
	put(0)
	nargs = 1
	if p == 0 {
		return
	}
	s := at[[4096]byte](p)
	afterDashes := false
	i := cmdlineStart(s)
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
		tok := cmdBuf[start : n-1]
		switch {
		case !afterDashes && string(tok) == "--":
			afterDashes = true
			n = start
		case hasPrefix(tok, mmioDeviceKey):
			// QEMU microvm appends these after everything else,
			// after a "--" too: never the program's.
			mmioDeviceOption(tok[len(mmioDeviceKey):])
			n = start
		case !afterDashes && hasPrefix(tok, "yolk."):
			kernelOption(tok[5:])
			n = start
		case !afterDashes && isEnv(tok):
			if hasPrefix(tok, "GOMEMLIMIT=") {
				gomemlimitOff = start
			}
			if hasPrefix(tok, "HOME=") {
				homeSet = true
			}
			if nenv < maxEnv {
				envOff[nenv] = start
				nenv++
			}
		default:
			if nargs < maxArgs {
				argOff[nargs] = start
				nargs++
			}
		}
	}
}

// cmdStartMark starts the command line proper when a boot loader puts its
// own options in front of it (the Raspberry Pi firmware writes Linux's
// into /chosen/bootargs before cmdline.txt's line): parsing begins after
// the mark; a line without one is read whole.
const cmdStartMark = "yolk.start"

// cmdlineStart is the offset just after cmdStartMark in s (a whole token),
// or 0.
func cmdlineStart(s *[4096]byte) int {
	for i := 0; i+len(cmdStartMark) <= len(s) && s[i] != 0; i++ {
		if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != '\n' {
			continue
		}
		if string(s[i:i+len(cmdStartMark)]) != cmdStartMark {
			continue
		}
		if j := i + len(cmdStartMark); j == len(s) || s[j] == 0 || s[j] == ' ' || s[j] == '\t' || s[j] == '\n' {
			return j
		}
	}
	return 0
}

func hasPrefix(b []byte, p string) bool {
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

func kernelOption(opt []byte) {
	switch string(opt) {
	case "strace=1":
		strace = true
	case "vdso=0":
		vdsoOff = true
	case "syscallstats=1":
		syscallStats = true
	case "readyq=locked":
		sched.UseLockedReadyQueue()
	default:
		if v, ok := cutPrefix(opt, "idlepoll="); ok {
			sched.IdlePoll = int64(atoiBytes(v)) * 1000
		}
		if v, ok := cutPrefix(opt, "net="); ok {
			netOption(v)
		}
		if v, ok := cutPrefix(opt, "share="); ok {
			shareOption(v)
		}
		if v, ok := cutPrefix(opt, "exe="); ok && len(v) > 1 && v[0] == '/' && len(v) < len(exePath) {
			exeLen = copy(exePath[:], v)
		}
		if v, ok := cutPrefix(opt, "cwd="); ok && len(v) < len(cwdPath) {
			cwdLen = copy(cwdPath[:], v)
		}
	}
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if !hasPrefix(b, p) {
		return nil, false
	}
	return b[len(p):], true
}

// atoiBytes is the decimal value of b (0 if b is not a number).
func atoiBytes(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func cstr(off int) []byte {
	e := off
	for cmdBuf[e] != 0 {
		e++
	}
	return cmdBuf[off:e]
}

// initrdOption finds "yolk.initrd=0xADDR,SIZE" on the command line at p.
func initrdOption(p uintptr) (addr, size uintptr) {
	s := at[[4096]byte](p)
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

// netConf is the network address yolk.net=ADDR/PREFIX,GATEWAY[,DNS] gave
// (IPv4, dotted quads; prefix 1 to 32), for the network service
// (SysNICInfo); prefix 0: none (yolk.net=dhcp, or no option: the service
// asks DHCP), or a malformed option (reported).
var netConf struct {
	addr, gw, dns [4]byte
	prefix        int
}

// netConfBad: a yolk.net option was malformed (and ignored).
var netConfBad bool

func netOption(v []byte) {
	if string(v) == "dhcp" {
		netConf.prefix = 0
		return
	}
	var c struct {
		addr, gw, dns [4]byte
		prefix        int
	}
	rest, ok := parseIPv4(v, &c.addr)
	if ok && len(rest) > 1 && rest[0] == '/' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' && i < 4 {
			c.prefix = c.prefix*10 + int(rest[i]-'0')
			i++
		}
		rest = rest[i:]
		ok = i > 1 && c.prefix >= 1 && c.prefix <= 32
	} else {
		ok = false
	}
	if ok && len(rest) > 1 && rest[0] == ',' {
		rest, ok = parseIPv4(rest[1:], &c.gw)
	} else {
		ok = false
	}
	if ok && len(rest) > 1 && rest[0] == ',' {
		rest, ok = parseIPv4(rest[1:], &c.dns)
	}
	if !ok || len(rest) != 0 {
		netConfBad = true // reported by virtioInit (the console may not print yet)
		return
	}
	netConf = c
	etcDNS = c.dns // resolv.conf's nameserver
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

// mmioDevices are those entries (base, IRQ), at most len of them.
var (
	mmioDevices  [8]struct{ base, irq uint64 }
	nmmioDevices int
)

func mmioDeviceOption(v []byte) {
	size, rest := parseNum(v)
	if len(rest) > 0 && (rest[0]|0x20 == 'k') {
		size <<= 10
		rest = rest[1:]
	}
	if size == 0 || len(rest) == 0 || rest[0] != '@' {
		return
	}
	base, rest := parseNum(rest[1:])
	if base == 0 || len(rest) == 0 || rest[0] != ':' {
		return
	}
	irq, rest := parseNum(rest[1:])
	if len(rest) > 0 && rest[0] != ':' { // ":ID" may follow
		return
	}
	if nmmioDevices < len(mmioDevices) {
		mmioDevices[nmmioDevices].base, mmioDevices[nmmioDevices].irq = base, irq
		nmmioDevices++
	}
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
