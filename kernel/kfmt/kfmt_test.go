package kfmt

import (
	"fmt"
	"math"
	"testing"
)

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		v      uint64
		digits int
	}{{0, 0}, {0, 1}, {0, 16}, {0xabc, 2}, {0xabc, 8}, {math.MaxUint64, 4}, {1, 20}} {
		var b [18]byte
		want := fmt.Sprintf("0x%0*x", min(max(c.digits, 1), 16), c.v)
		if got := string(Hex(&b, c.v, c.digits)); got != want {
			t.Errorf("Hex(%#x, %d) = %q, want %q", c.v, c.digits, got, want)
		}
	}
	for _, v := range []int64{0, 7, -7, 1234567890, math.MaxInt64, math.MinInt64} {
		var b [21]byte
		if got := string(Dec(&b, v)); got != fmt.Sprint(v) {
			t.Errorf("Dec(%d) = %q", v, got)
		}
	}
}
