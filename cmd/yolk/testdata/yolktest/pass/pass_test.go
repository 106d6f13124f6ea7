package pass

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("2+3 != 5")
	}
	t.Log("added")
}

func TestShort(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
}
