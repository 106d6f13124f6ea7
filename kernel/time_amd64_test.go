package kernel

import (
	"testing"

	"yolk/drivers/clock"
	"yolk/kernel/tsc"
)

func TestLeaf15Hz(t *testing.T) {
	for _, c := range []struct {
		den, num, crystal uint32
		want              uint64
	}{
		{2, 176, 24_000_000, 2_112_000_000}, // a 24 MHz crystal, ratio 88
		{2, 200, 25_000_000, 2_500_000_000},
		{1, 100, 19_200_000, 1_920_000_000},
		{2, 176, 0, 0}, // ratio without the crystal: measure instead
		{0, 0, 0, 0},   // leaf absent
		{0, 176, 24_000_000, 0},
	} {
		if got := tsc.Leaf15Hz(c.den, c.num, c.crystal, 0); got != c.want {
			t.Errorf("Leaf15Hz(%d, %d, %d) = %d, want %d", c.den, c.num, c.crystal, got, c.want)
		}
	}
}

// TestTSCToNs: kvmclock's wall-clock record names a TSC value that may be
// before the clock's start (wallInit).
func TestTSCToNs(t *testing.T) {
	clock.SetHz(2_000_000_000)
	b := clock.Base()
	for _, c := range []struct {
		tsc  uint64
		want int64
	}{{b, 0}, {b + 2000, 1000}, {b - 2000, -1000}, {b - 4e9, -2e9}, {b + 6e9, 3e9}} {
		if got := tscToNs(c.tsc); got != c.want {
			t.Errorf("tscToNs(base%+d) = %d, want %d", int64(c.tsc-b), got, c.want)
		}
	}
}
