package calllog

import (
	"strconv"
	"strings"
	"testing"

	"yolk/kernel/abi"
)

// hostEnv prints into out.
type hostEnv struct{}

var out strings.Builder

func (hostEnv) Acquire()                 {}
func (hostEnv) Release()                 {}
func (hostEnv) Log(s string)             { out.WriteString("yolk: " + s) }
func (hostEnv) Print(s string)           { out.WriteString(s) }
func (hostEnv) Dec(v int64)              { out.WriteString(strconv.FormatInt(v, 10)) }
func (hostEnv) Hex(v uint64, digits int) { out.WriteString("0x") }
func (hostEnv) TimerIRQs(cpu int) uint64 { return 0 }
func (hostEnv) TimerArms(cpu int) uint64 { return 0 }

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
	Took(1, 1500)
	Took(1, -1) // a clock that stepped back: not counted
	if cpuNS[1] != 1500 {
		t.Errorf("CPU time %d ns, want 1500", cpuNS[1])
	}
	c := Calls()
	Entered()
	if Calls() != c+1 {
		t.Errorf("Entered did not count")
	}
}

// The report gives each number's count and the CPU time its calls took,
// in all and a call.
func TestPrintStats(t *testing.T) {
	Stats = true
	defer func() { Stats = false }()
	count, cpuNS = [len(count)]uint64{}, [len(cpuNS)]uint64{}
	out.Reset()
	Count(0)
	Count(0)
	Took(0, 3000)
	Count(privateBase + 0x20)
	Took(privateBase+0x20, 7)
	PrintStats[hostEnv]()
	for _, want := range []string{
		"yolk: syscalls: " + abi.SysName(0) + " 2 cpu-us 3 ns/call 1500\n",
		"yolk: syscalls: yolk 0x 1 cpu-us 0 ns/call 7\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
