package pass

import (
	"os"
	"path/filepath"
	"testing"
)

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

// The test runs in its package directory, with testdata readable.
func TestPackageDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(wd) != "pass" {
		t.Errorf("working directory %s, want the package directory", wd)
	}
	b, err := os.ReadFile("testdata/greeting.txt")
	if err != nil || string(b) != "hello from testdata\n" {
		t.Errorf("testdata/greeting.txt: %q, %v", b, err)
	}
	t.Log("read testdata")
}
