package mm

import "testing"

// TestDirtyEntries: the page-table entries of a tracked page (a shared
// file area's own frame, dirty.go) through first touch, write fault,
// fetch fault and cleaning, on this architecture's bits; and an
// untracked (borrowed) page left as it was.
func TestDirtyEntries(t *testing.T) {
	v := &vma{start: userMin, end: userMin + 4*PageSize, prot: ProtRead | ProtWrite | ProtExec, shared: true, file: -1}
	const f = 0x5000
	dirty := func(e uint64) bool { return e&pteDirty != 0 }

	read := pteFirst(v, f, false)
	if dirty(read) || !pteValid(read) || pteFrame(read) != f {
		t.Errorf("first touch by a read: %#x: dirty or not the frame", read)
	}
	if pteWritable(read) != hardwareDirty {
		t.Errorf("a clean page writable = %v, want %v (software dirty bits need a write fault)", pteWritable(read), hardwareDirty)
	}
	write := pteFirst(v, f, true)
	if !dirty(write) || !pteWritable(write) {
		t.Errorf("first touch by a write: %#x: not dirty and writable", write)
	}
	if w := pteFaulted(v, read, true); !dirty(w) || !pteWritable(w) || pteFrame(w) != f {
		t.Errorf("write fault on a clean page: %#x", w)
	}
	if x := pteFaulted(v, write, false); !dirty(x) || !pteWritable(x) {
		t.Errorf("fetch fault on a dirty page lost its dirty bit or write permission: %#x", x)
	}
	if x := pteFaulted(v, read, false); dirty(x) || pteWritable(x) != hardwareDirty {
		t.Errorf("fetch fault on a clean page: %#x (dirty, or writable without a write fault)", x)
	}
	c := pteClean(write)
	if dirty(c) || pteFrame(c) != f || !pteValid(c) || pteWritable(c) != hardwareDirty {
		t.Errorf("cleaned: %#x", c)
	}
	if w := pteFaulted(v, c, true); !dirty(w) || !pteWritable(w) {
		t.Errorf("write fault after cleaning: %#x", w)
	}

	// A private area and a borrowed page are not tracked: a fault gives
	// them what the area allows at once.
	p := *v
	p.shared = false
	if tracked(&p, read) || !tracked(v, read) || tracked(v, read|pteBorrowed) {
		t.Error("tracked: wrong for a private area, a shared one or a borrowed page")
	}
	ro := pteReadOnly(ptePage(f, ProtRead|ProtWrite))
	if x := pteFaulted(&p, ro, false); !pteWritable(x) {
		t.Errorf("fetch fault on an untracked page: %#x not writable", x)
	}
	if x := pteFaulted(v, ro|pteBorrowed, false); !pteWritable(x) || x&pteBorrowed == 0 {
		t.Errorf("fetch fault on a borrowed page: %#x", x)
	}
}
