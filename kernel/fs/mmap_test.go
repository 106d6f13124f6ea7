package fs

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMapTruncate: a file shrunk while mapped is reported once by
// TakeCut, with its new size; bytes written into its kept pages past the
// end (through a mapping, before the kernel took those pages from it) are
// zeroed by ZeroPast, so the file grown again reads zeroes; the last
// mapping's drop frees the kept pages.
func TestMapTruncate(t *testing.T) {
	f, _ := newFS(t, 64, 32)
	h := open(t, f, "m", unix.O_RDWR|unix.O_CREAT, 0o600)
	write(t, f, h, string(bytes.Repeat([]byte{'a'}, 3*PageSize)))
	ino, _, e := f.MapOpen(h, true)
	must(t, "MapOpen", e)
	if _, _, ok := f.TakeCut(); ok {
		t.Fatalf("TakeCut before any truncation")
	}
	p2 := f.MapPage(ino, 2*PageSize) // the third page, as a shared mapping has it
	if p2 == 0 {
		t.Fatalf("MapPage: 0")
	}
	must(t, "ftruncate", f.Ftruncate(h, PageSize+10))
	mem(p2, PageSize)[7] = 'w' // written through the mapping after the truncation
	got, size, ok := f.TakeCut()
	if !ok || got != ino || size != PageSize+10 {
		t.Fatalf("TakeCut = %d, %d, %v; want %d, %d, true", got, size, ok, ino, PageSize+10)
	}
	if _, _, ok := f.TakeCut(); ok {
		t.Fatalf("TakeCut reported the truncation twice")
	}
	if f.MapPage(ino, 2*PageSize) != 0 {
		t.Errorf("MapPage past the new end gave a page")
	}
	f.ZeroPast(ino)
	must(t, "ftruncate", f.Ftruncate(h, 3*PageSize))
	b := make([]byte, PageSize)
	if n, e := f.Pread(h, b, 2*PageSize); e != 0 || n != PageSize || !bytes.Equal(b, make([]byte, PageSize)) {
		t.Errorf("the page cut off and grown again: %d, %v, not zeroes", n, e)
	}
	must(t, "ftruncate", f.Ftruncate(h, PageSize))
	pages := f.pages
	f.MapRef(ino, -1)
	if f.pages >= pages {
		t.Errorf("the last mapping's drop kept the pages past the end (%d pages, %d before)", f.pages, pages)
	}
	if _, _, ok := f.TakeCut(); ok {
		t.Errorf("TakeCut reported an inode whose mappings are gone")
	}
}
