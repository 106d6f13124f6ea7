package calllog

import (
	"strings"
	"testing"
)

// hostEnv prints into out.
type hostEnv struct{}

var out strings.Builder

func (hostEnv) Acquire()                 {}
func (hostEnv) Release()                 {}
func (hostEnv) Log(s string)             { out.WriteString("yolk: " + s) }
func (hostEnv) Print(s string)           { out.WriteString(s) }
func (hostEnv) Dec(v int64)              { out.WriteString(strings.Repeat("#", int(v%8))) }
func (hostEnv) Hex(v uint64, digits int) { out.WriteString("0x") }
func (hostEnv) TimerIRQs(cpu int) uint64 { return 0 }

// An unimplemented call is counted each time and logged once, by name;
// numbers beyond the table share its last bit.
func TestENOSYSOnce(t *testing.T) {
	out.Reset()
	n := Unimplemented()
	ENOSYS[hostEnv](163)
	ENOSYS[hostEnv](163)
	ENOSYS[hostEnv](100000)
	ENOSYS[hostEnv](100001)
	if got := Unimplemented() - n; got != 4 {
		t.Errorf("counted %d, want 4", got)
	}
	if c := strings.Count(out.String(), "not implemented: ENOSYS\n"); c != 2 {
		t.Errorf("logged %d times, want 2:\n%s", c, out.String())
	}
}

func TestCount(t *testing.T) {
	Stats = false
	Count(1)
	if count[1] != 0 {
		t.Errorf("counted without yolk.syscallstats")
	}
	Stats = true
	defer func() { Stats = false }()
	Count(1)
	Count(1 << 20) // beyond the table: not counted by number
	if count[1] != 1 {
		t.Errorf("count %d, want 1", count[1])
	}
	c := Calls()
	Entered()
	if Calls() != c+1 {
		t.Errorf("Entered did not count")
	}
}
