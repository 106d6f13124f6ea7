package covuse

import "testing"

func TestDist(t *testing.T) {
	if Dist(2, 5) != 3 {
		t.Fatal("Dist(2, 5)")
	}
}
