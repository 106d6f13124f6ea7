package qemu

import (
	"fmt"
	"strings"
)

// Cmdline encodes environment pairs and program arguments into the kernel
// command line the guest parses:
//
//	cmdline = [token { " " token }]
//	        = { env " " } "--" { " " arg }
//	env     = a token "KEY=VALUE" (KEY non-empty, without "=")
//	token   = bare | quoted
//	bare    = one or more bytes, none of them space, tab, CR, LF, '"' or '\'
//	quoted  = '"' { any byte but '"' and '\' | '\"' | '\\' } '"'
//
// The first token that is exactly "--" (bare) ends the environment; every
// token after it is an argument, even one spelled "--". A token is quoted
// when it is empty or contains a space, tab, CR, LF, '"' or '\'; inside
// quotes only '"' and '\' are escaped, each by a preceding '\'. Tokens are
// separated by exactly one space. NUL bytes cannot be passed and are refused.
func Cmdline(env, args []string) (string, error) {
	var b strings.Builder
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		if strings.ContainsAny(k, " \t\r\n\"\\") {
			return "", fmt.Errorf("environment key %q contains a space, quote or backslash", k)
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return "", fmt.Errorf("environment entry %q contains a NUL byte", kv)
		}
		b.WriteString(QuoteToken(kv))
		b.WriteByte(' ')
	}
	b.WriteString("--")
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("argument %q contains a NUL byte", a)
		}
		b.WriteByte(' ')
		b.WriteString(QuoteToken(a))
	}
	return b.String(), nil
}

// QuoteToken returns s as one command-line token (see Cmdline).
func QuoteToken(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\r\n\"\\") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// ParseCmdline is the reference decoder of Cmdline's grammar, the one the
// guest implements. It splits on runs of spaces, tabs, CRs and LFs outside
// quotes, so it also accepts hand-written command lines.
func ParseCmdline(s string) (env, args []string, err error) {
	var toks []string
	var quoted []bool
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		var tok strings.Builder
		q := s[i] == '"'
		if q {
			i++
			for {
				if i == len(s) {
					return nil, nil, fmt.Errorf("unterminated quote in %q", s)
				}
				c := s[i]
				i++
				if c == '"' {
					break
				}
				if c == '\\' && i < len(s) && (s[i] == '"' || s[i] == '\\') {
					c = s[i]
					i++
				}
				tok.WriteByte(c)
			}
			if i < len(s) && !isSpace(s[i]) {
				return nil, nil, fmt.Errorf("closing quote not followed by a space in %q", s)
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				tok.WriteByte(s[i])
				i++
			}
		}
		toks = append(toks, tok.String())
		quoted = append(quoted, q)
	}
	inArgs := false
	for j, t := range toks {
		switch {
		case inArgs:
			args = append(args, t)
		case t == "--" && !quoted[j]:
			inArgs = true
		default:
			env = append(env, t)
		}
	}
	return env, args, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
