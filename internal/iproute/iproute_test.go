package iproute

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLikeIPRoute: the host's routes, as Routes writes them and as
// iproute2's `ip -4 route show table main` prints them.
func TestLikeIPRoute(t *testing.T) {
	var got, want []string
	for try := 0; try < 3; try++ { // a route another program adds meanwhile: again
		out, err := exec.Command("ip", "-4", "route", "show", "table", "main").Output()
		if err != nil {
			t.Skipf("no ip command: %v", err)
		}
		want = nil
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l = strings.Join(strings.Fields(l), " "); l != "" {
				want = append(want, l)
			}
		}
		if got, err = Routes(); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, want) {
			return
		}
	}
	t.Errorf("Routes:\n%s\nip route:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
}
