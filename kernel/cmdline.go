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
