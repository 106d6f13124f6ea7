package abi

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSysName checks the split tables against x/sys/unix's numbers: below
// sysCommon from this architecture's table, from it on from the shared one.
func TestSysName(t *testing.T) {
	for _, c := range []struct {
		nr   uintptr
		name string
	}{
		{unix.SYS_READ, "read"}, {unix.SYS_WRITE, "write"}, {unix.SYS_CLONE, "clone"},
		{unix.SYS_FUTEX, "futex"}, {unix.SYS_EPOLL_PWAIT, "epoll_pwait"},
		{unix.SYS_PIDFD_OPEN, "pidfd_open"}, {unix.SYS_CLONE3, "clone3"},
		{unix.SYS_FCHMODAT2, "fchmodat2"}, {1 << 20, "?"}, {SysStats, "?"},
	} {
		if got := SysName(c.nr); got != c.name {
			t.Errorf("SysName(%d) = %q, want %q", c.nr, got, c.name)
		}
	}
	if sysCommon > unix.SYS_PIDFD_SEND_SIGNAL {
		t.Errorf("sysCommon = %d: the unified table starts at pidfd_send_signal (%d)", sysCommon, unix.SYS_PIDFD_SEND_SIGNAL)
	}
}
