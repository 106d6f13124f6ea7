package kernel

import (
	"testing"

	"yolk/kernel/abi"
	"yolk/kernel/signal"
)

// TestRestartRule is Linux's table (x86 handle_signal and
// arch_do_signal_or_restart, arm64 do_signal): what a program sees of a
// call that ended with each restart code, with a handler (with and without
// SA_RESTART) and with none.
func TestRestartRule(t *testing.T) {
	const again = abi.Errno(1 << 20) // "made again" in the table
	for _, c := range []struct {
		err                       abi.Errno
		restart, noRestart, noHnd abi.Errno
	}{
		{errRestartSys, again, abi.EINTR, again},
		{errRestartNoIntr, again, again, again},
		{errRestartNoHand, abi.EINTR, abi.EINTR, again},
		{errRestartBlock, abi.EINTR, abi.EINTR, again},
		{abi.EAGAIN, 0, 0, 0},
		{abi.EINTR, 0, 0, 0},
		{0, 0, 0, 0},
	} {
		for _, k := range []struct {
			handled bool
			flags   uint64
			want    abi.Errno
		}{
			{true, signal.SaRestart | signal.SaSiginfo, c.restart},
			{true, signal.SaSiginfo, c.noRestart},
			{false, signal.SaRestart, c.noHnd},
		} {
			a, e := restartRule(c.err, k.handled, k.flags)
			got := e
			if a {
				got = again
			}
			if got != k.want {
				t.Errorf("restartRule(%d, handled %v, flags %#x) = %v, %d; want %d (%d: made again)", c.err, k.handled, k.flags, a, e, k.want, again)
			}
		}
	}
}
