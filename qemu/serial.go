package qemu

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// Serial-protocol lines the runner reacts to.
const (
	exitPrefix  = "yolk: exit "
	framePrefix = "yolk:   at 0x" // followed by exactly 16 hex digits
	frameLen    = len(framePrefix) + 16
)

// ParseExitLine reports the status N of a line "yolk: exit N" (N decimal,
// 0-255, no sign or leading zeros beyond "0"; a trailing CR is ignored).
func ParseExitLine(line string) (int, bool) {
	line = strings.TrimSuffix(line, "\r")
	s, ok := strings.CutPrefix(line, exitPrefix)
	if !ok || s == "" || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 || s[0] == '+' {
		return 0, false
	}
	return n, true
}

// parseFrameLine returns the pc of a backtrace line
// "yolk:   at 0x0000000000456789".
func parseFrameLine(line string) (uint64, bool) {
	line = strings.TrimSuffix(line, "\r")
	if len(line) != frameLen || !strings.HasPrefix(line, framePrefix) {
		return 0, false
	}
	pc, err := strconv.ParseUint(line[len(framePrefix):], 16, 64)
	return pc, err == nil
}

// serialStream copies the guest's serial output to out as it arrives, with
// two changes: each backtrace line gets the symbolized frame appended, and
// every complete line is passed to onLine as written. Bytes of a line that cannot be a
// backtrace line are written at once, even before its newline arrives.
type serialStream struct {
	out       io.Writer
	symbolize func(pc uint64, first bool) string // "" when unknown
	onLine    func(line string)                  // each line as written, without "\n"; may end in "\r"

	line    []byte // the current, incomplete line
	emitted int    // bytes of line already written to out
	frame   int    // index of the next backtrace frame in the current run
	err     error  // first error writing to out
}

func (s *serialStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			s.flushPartial()
			break
		}
		s.line = append(s.line, p[:i]...)
		s.endLine(true)
		p = p[i+1:]
	}
	return n, nil // the guest's output is never refused
}

// Close writes out an unterminated last line.
func (s *serialStream) Close() error {
	if len(s.line) > 0 {
		s.endLine(false)
	}
	return s.err
}

func (s *serialStream) write(b []byte) {
	if s.err == nil && len(b) > 0 {
		_, s.err = s.out.Write(b)
	}
}

func (s *serialStream) endLine(newline bool) {
	line := string(s.line)
	if pc, ok := parseFrameLine(line); ok && s.emitted == 0 {
		body, cr := strings.CutSuffix(line, "\r")
		if s.symbolize != nil {
			if sym := s.symbolize(pc, s.frame == 0); sym != "" {
				body += " " + sym
			}
		}
		if line = body; cr {
			line += "\r"
		}
		s.write([]byte(line))
		s.frame++
	} else {
		s.write(s.line[s.emitted:])
		s.frame = 0
	}
	if newline {
		s.write([]byte{'\n'})
	}
	if s.onLine != nil {
		s.onLine(line)
	}
	s.line = s.line[:0]
	s.emitted = 0
}

// flushPartial writes the unwritten part of the current line unless the
// line may still turn out to be a backtrace line.
func (s *serialStream) flushPartial() {
	if s.emitted == 0 && mayBeFrameLine(s.line) {
		return
	}
	s.write(s.line[s.emitted:])
	s.emitted = len(s.line)
}

func mayBeFrameLine(b []byte) bool {
	if len(b) <= len(framePrefix) {
		return strings.HasPrefix(framePrefix, string(b))
	}
	if !bytes.HasPrefix(b, []byte(framePrefix)) || len(b) > frameLen+1 {
		return false
	}
	for i, c := range b[len(framePrefix):] {
		isHex := '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
		if !isHex && !(c == '\r' && len(framePrefix)+i == frameLen) {
			return false
		}
	}
	return true
}
