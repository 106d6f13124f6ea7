package kernel

import (
	"yolk/kernel/mm"
	"yolk/sched"
)

// The command line and the Linux-style initial stack of the first task.
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

// Initial stack: an 8 MiB lazily backed mapping, like Linux's main-thread
// stack; the runtime uses its top 64 KiB as g0's stack.
const (
	stackTop  = 0x7fffffff0000
	stackSize = 8 << 20

	atNull        = 0
	atPagesz      = 6
	atClktck      = 17
	atHwcap       = 16
	atSecure      = 23
	atRandom      = 25
	atSysinfoEhdr = 33
)

func buildInitStack() uintptr {
	if _, err := vm.Map(stackTop-stackSize, stackSize, mm.ProtRead|mm.ProtWrite, true); err != 0 {
		outOfMemory()
	}
	sp := uintptr(stackTop)
	pushStr := func(parts ...[]byte) uintptr {
		n := 1
		for _, p := range parts {
			n += len(p)
		}
		sp -= uintptr(n)
		b := bytesAt(sp, n)
		k := 0
		for _, p := range parts {
			k += copy(b[k:], p)
		}
		b[k] = 0
		return sp
	}
	var argv [maxArgs]uintptr
	var envp [maxEnv + 2]uintptr
	for i := 0; i < nargs; i++ {
		argv[i] = pushStr(cstr(argOff[i]))
	}
	ne := 0
	for i := 0; i < nenv; i++ {
		envp[ne] = pushStr(cstr(envOff[i]))
		ne++
	}
	if !homeSet {
		envp[ne] = pushStr([]byte("HOME=/")) // as Linux gives init
		ne++
	}
	if gomemlimitOff < 0 {
		// Tell the runtime how much RAM there is, so the collector and the
		// scavenger keep the heap inside it (Linux would have swap or the
		// OOM killer; we have neither).
		var num [20]byte
		v := uint64(mm.ReadStats().FramesFree) * mm.PageSize / 4 * 3
		i := len(num)
		for {
			i--
			num[i] = byte('0' + v%10)
			v /= 10
			if v == 0 {
				break
			}
		}
		envp[ne] = pushStr([]byte("GOMEMLIMIT="), num[i:])
		ne++
	}
	sp -= 16
	rnd := sp
	*at[uint64](rnd), *at[uint64](rnd + 8) = random64(), random64()
	sp &^= 15

	auxv := [...]uintptr{
		atPagesz, mm.PageSize,
		atClktck, 100,
		atHwcap, hwcap(),
		atSecure, 0,
		atRandom, rnd,
		atSysinfoEhdr, vdsoInit(),
		atNull, 0,
	}
	words := 1 + nargs + 1 + ne + 1 + len(auxv)
	if words%2 != 0 {
		sp -= 8
	}
	sp -= uintptr(words) * 8
	w := sp
	put := func(v uintptr) {
		*at[uintptr](w) = v
		w += 8
	}
	put(uintptr(nargs))
	for i := 0; i < nargs; i++ {
		put(argv[i])
	}
	put(0)
	for i := 0; i < ne; i++ {
		put(envp[i])
	}
	put(0)
	for _, v := range auxv {
		put(v)
	}
	return sp
}
