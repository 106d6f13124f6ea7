package prof

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// spinFor is how long TestSpin is busy (the CPU profile's samples: about
// 100 a second).
const spinFor = 3 * time.Second

func TestSpin(t *testing.T) {
	if Spin(spinFor) == 0 {
		t.Fatal("Spin returned 0")
	}
}

var sink [][]byte

func TestGrow(t *testing.T) {
	sink = Grow(1024)
	if len(sink) != 1024 {
		t.Fatalf("Grow(1024): %d buffers", len(sink))
	}
}

// TestArtifact leaves a file in its artifact directory (kept under
// -artifacts).
func TestArtifact(t *testing.T) {
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "note.txt"), []byte("kept\n"), 0o666); err != nil {
		t.Fatal(err)
	}
}
