//go:build !arm64

package gtimer

import "testing"

func TestDeadline(t *testing.T) {
	sys.freq, sys.count, sys.cval, sys.ctl = 62_500_000, 1000, 0, 0
	if Freq() != 62_500_000 {
		t.Fatal("Freq")
	}
	SetTimeout(500)
	if sys.cval != 1500 || sys.ctl != ctlEnable {
		t.Errorf("SetTimeout(500) at 1000: CVAL %d CTL %#x", sys.cval, sys.ctl)
	}
	if Fired() {
		t.Error("fired before the deadline")
	}
	sys.count = 1500
	if !Fired() {
		t.Error("not fired at the deadline")
	}
	Mask()
	if sys.ctl != ctlEnable|ctlIMask || !Fired() {
		t.Errorf("Mask: CTL %#x; the timer must keep running", sys.ctl)
	}
	Unmask()
	if sys.ctl != ctlEnable {
		t.Errorf("Unmask: CTL %#x", sys.ctl)
	}
	Stop()
	if sys.ctl != 0 || Fired() {
		t.Errorf("Stop: CTL %#x", sys.ctl)
	}
	Mask() // masking a stopped timer must not start it
	if sys.ctl&ctlEnable != 0 {
		t.Error("Mask enabled a stopped timer")
	}
	SetDeadline(1400) // in the past: fires at once
	if !Fired() || Deadline() != 1400 {
		t.Error("a past deadline must fire at once")
	}
	sys.count = ^uint64(0) - 10
	SetTimeout(100)
	if sys.cval != ^uint64(0) {
		t.Errorf("SetTimeout past the end of the count: CVAL %#x, want saturated", sys.cval)
	}
}

func TestConversions(t *testing.T) {
	for _, tc := range []struct{ ns, freq, ticks uint64 }{
		{1e9, 62_500_000, 62_500_000},
		{1, 62_500_000, 1},        // 0.0625 rounds up: never early
		{16, 62_500_000, 1},       // exactly 1
		{17, 62_500_000, 2},       // 1.0625
		{1e6, 24_000_000, 24_000}, // 1 ms on a 24 MHz board
		{1 << 63, 1e9, 1 << 63},   // large, no overflow in the product
		{^uint64(0), 62_500_000, ^uint64(0)/16 + 1},
		{^uint64(0), 2e9, ^uint64(0)}, // saturates
	} {
		if got := Ticks(tc.ns, tc.freq); got != tc.ticks {
			t.Errorf("Ticks(%d ns, %d Hz) = %d, want %d", tc.ns, tc.freq, got, tc.ticks)
		}
	}
	for _, tc := range []struct{ ticks, freq, ns uint64 }{
		{62_500_000, 62_500_000, 1e9},
		{1, 62_500_000, 16},
		{1, 24_000_000, 41}, // 41.67 rounds down
		{^uint64(0), 1e9, ^uint64(0)},
		{^uint64(0), 1, ^uint64(0)}, // saturates
	} {
		if got := Nanoseconds(tc.ticks, tc.freq); got != tc.ns {
			t.Errorf("Nanoseconds(%d, %d Hz) = %d, want %d", tc.ticks, tc.freq, got, tc.ns)
		}
	}
}
