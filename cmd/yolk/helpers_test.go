package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildYolk builds the yolk command into a temporary directory.
func buildYolk(t *testing.T) string {
	t.Helper()
	yolk := filepath.Join(t.TempDir(), "yolk")
	if out, err := exec.Command("go", "build", "-o", yolk, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return yolk
}

// writeApp writes a program, module example.com/name with main.go src,
// in dir/name and returns that folder.
func writeApp(t *testing.T, dir, name, src string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string]string{
		"go.mod":  "module example.com/" + name + "\n\ngo 1.26\n",
		"main.go": src,
	} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}
