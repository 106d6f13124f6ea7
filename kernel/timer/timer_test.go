package timer

import (
	"math"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/sched"
)

// Hosted tests of what runs without the kernel: expiry's arithmetic and
// its signals (the table's lock and the CPU clocks need a kernel task),
// the clock IDs, the conversions.

// hostEnv records the signals sent; pending says whether they are still
// pending.
type hostEnv struct{}

var (
	sent    []int
	posix   []bool
	pending bool
)

func (hostEnv) Now() int64                 { return 0 }
func (hostEnv) WallBase() int64            { return 0 }
func (hostEnv) Monotonic() int64           { return 0 }
func (hostEnv) Pending(slot, sig int) bool { return pending }
func (hostEnv) Discard(slot, sig int)      { pending = false }
func (hostEnv) Target(sig int) *sched.Task { return sched.TaskAt(3) }
func (hostEnv) Send(t *sched.Task, sig int, p bool) {
	sent, posix = append(sent, t.Index()), append(posix, p)
	pending = true
}

func TestExpireOverruns(t *testing.T) {
	sent, posix, pending = nil, nil, false
	x := new(Timers[hostEnv])
	x.t[5] = ptimer{clock: onMono, notify: sigevSignal, signo: uint8(unix.SIGALRM), value: 100, interval: 10, sigval: 7}
	x.high = 6
	x.expire(5, 135) // 110, 120, 130 passed unseen: value 140, three overruns
	p := &x.t[5]
	if p.value != 140 || p.overrun != 3 || !p.pending || p.ptask != 3 || x.sigTimer[3] != 6 {
		t.Fatalf("after the first expiry: %+v, sigTimer %d", *p, x.sigTimer[3])
	}
	if len(sent) != 1 || sent[0] != 3 || !posix[0] {
		t.Fatalf("sent %v (posix %v), want one SI_TIMER signal to slot 3", sent, posix)
	}
	x.expire(5, 140) // its signal still pending: one more overrun, no signal
	if p.value != 150 || p.overrun != 4 || len(sent) != 1 {
		t.Fatalf("with the signal pending: %+v, sent %v", *p, sent)
	}
	if x.Fired() != 2 || x.Overruns() != 4 {
		t.Errorf("counters: fired %d, overruns %d; want 2, 4", x.Fired(), x.Overruns())
	}
	p.interval = math.MaxInt64 - 1 // a huge interval saturates instead of wrapping
	p.value = 200
	pending = false
	p.pending = false
	x.expire(5, 1<<62)
	if p.value != math.MaxInt64 || p.overrun != 0 {
		t.Errorf("huge interval: %+v", *p)
	}
}

func TestExpireOneShotItimer(t *testing.T) {
	sent, posix, pending = nil, nil, false
	x := new(Timers[hostEnv])
	p := x.itimer(unix.ITIMER_REAL)
	p.value = 50
	x.expire(itimerAt, 60)
	if p.value != 0 || len(sent) != 1 || posix[0] || p.pending {
		t.Errorf("ITIMER_REAL: %+v, sent %v posix %v", *p, sent, posix)
	}
}

func TestClockOf(t *testing.T) {
	for _, c := range []struct {
		id    int32
		clock uint8
		err   abi.Errno
	}{
		{unix.CLOCK_REALTIME, onReal, 0},
		{unix.CLOCK_TAI, onReal, 0},
		{unix.CLOCK_MONOTONIC, onMono, 0},
		{unix.CLOCK_BOOTTIME, onMono, 0},
		{unix.CLOCK_MONOTONIC_RAW, 0, abi.EOPNOTSUPP},
		{unix.CLOCK_PROCESS_CPUTIME_ID, onProcessCPU, 0},
		{^(0<<3)&^7 | 3, 0, abi.EOPNOTSUPP}, // a clock on a descriptor
		{^(5 << 3) &^ 7, 0, abi.EINVAL},     // process 5's: not this process
		{^(1 << 3) &^ 7, onProcessCPU, 0},   // process 1's: this one
		{99, 0, abi.EINVAL},
	} {
		clock, _, err := clockOf(c.id)
		if clock != c.clock || err != c.err {
			t.Errorf("clockOf(%d) = %d, %v; want %d, %v", c.id, clock, err, c.clock, c.err)
		}
	}
}

func TestConversions(t *testing.T) {
	if got := tsNanos(timespec{2, 5}); got != 2e9+5 {
		t.Errorf("tsNanos = %d", got)
	}
	if got := tsNanos(timespec{1<<32 + 1, 0}); got != 1<<62 {
		t.Errorf("tsNanos of a huge time = %d", got)
	}
	if got := nanosTv(1_500_002_000); got != (timespec{1, 500002}) {
		t.Errorf("nanosTv = %v", got)
	}
	if validTimeval(timespec{0, 1e6}) || !validTimespec(timespec{0, 1e6}) {
		t.Errorf("validTimeval/validTimespec")
	}
	if satAdd(math.MaxInt64-1, 5) != math.MaxInt64 || satAdd(1, 2) != 3 {
		t.Errorf("satAdd")
	}
}
