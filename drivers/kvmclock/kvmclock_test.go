//go:build amd64

package kvmclock

import "testing"

// timeScale is the host's side: the (shift, mul) pair KVM computes for a
// counter of baseHz so that ns = ((ticks << shift) * mul) >> 32 (the
// procedure of kvm_get_time_scale in Linux's arch/x86/kvm/x86.c).
func timeScale(scaledHz, baseHz uint64) (int8, uint32) {
	shift := int8(0)
	tps64 := baseHz
	scaled64 := scaledHz
	for tps64 > scaled64*2 || tps64&0xffffffff00000000 != 0 {
		tps64 >>= 1
		shift--
	}
	tps32 := uint32(tps64)
	for uint64(tps32) <= scaled64 || scaled64&0xffffffff00000000 != 0 {
		if scaled64&0xffffffff00000000 != 0 || tps32&0x80000000 != 0 {
			scaled64 >>= 1
		} else {
			tps32 <<= 1
		}
		shift++
	}
	return shift, uint32((scaled64 << 32) / uint64(tps32))
}

func TestHzInvertsTheHostScale(t *testing.T) {
	for _, f := range []uint64{25e6, 100e6, 999_999_999, 1e9, 1_500_000_001, 2_095_078_000, 3_600_000_000, 5_200_000_000} {
		shift, mul := timeScale(1e9, f)
		got := Hz(mul, shift)
		diff := int64(got) - int64(f)
		if diff < 0 {
			diff = -diff
		}
		// mul has 32 bits of precision: 1 part in 2^31 at worst.
		if float64(diff) > float64(f)/(1<<30) {
			t.Errorf("%d Hz: scale (shift %d, mul %#x) decodes to %d Hz", f, shift, mul, got)
		}
	}
}

func TestHzRejectsAnEmptyRecord(t *testing.T) {
	if Hz(0, 0) != 0 || Hz(1, 40) != 0 {
		t.Fatal("an unset or corrupt scale decoded to a frequency")
	}
}

func TestWallAt(t *testing.T) {
	// Host booted at 2026-12-02 03:00:00.5 UTC, 90 s of system time later.
	if got, want := WallAt(1796180400, 5e8, 90e9), int64(1796180400)*1e9+5e8+90e9; got != want {
		t.Errorf("WallAt = %d, want %d", got, want)
	}
	if ns, _ := Wall(); ns != 0 {
		t.Errorf("Wall before TSCHz = %d, want 0", ns)
	}
}
