package qemu

import (
	"os/exec"
	"strings"
	"testing"
)

// tapLink makes tap device name with the host's end at hostCIDR, up, for
// a guest booted with Net "tap:"+name, and removes it when the test
// ends; it skips the test with the reason when the device cannot be
// made (root and the tun device are needed). A device of that name left
// by an earlier run that died is removed first. Only the tap link and
// the host's address on it are used: nothing is routed anywhere else.
func tapLink(t *testing.T, name, hostCIDR string) {
	t.Helper()
	exec.Command("ip", "link", "del", name).Run()
	if l := TapRouteTaken(hostCIDR); l != "" {
		t.Fatalf("%s is already routed (%s): the guest's traffic would go there, and the guest would never hear the host; remove that route or its link", hostCIDR, l)
	}
	for _, args := range [][]string{
		{"tuntap", "add", "dev", name, "mode", "tap"},
		{"addr", "add", hostCIDR, "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			exec.Command("ip", "link", "del", name).Run()
			t.Skipf("cannot make the tap link (ip %s: %v: %s): root and the tun device are needed", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
}
