package mm

import (
	"math/rand"
	"testing"

	"yolk/kernel/abi"
)

// The VMA bookkeeping runs hosted: the area operations the system calls
// make under mmLock (areaMap, removeVMA, areaProtect), without the locks,
// page tables and TLB shootdowns around them, which need the machine. A
// per-page model of a small window checks every operation.

const (
	modelBase  = userMin + 1<<30
	modelPages = 64
)

// areaMap places an anonymous area (areaPlace).
func areaMap(addr, n uintptr, prot uint32, fixed bool) (uintptr, abi.Errno) {
	return areaPlace(addr, n, vma{prot: prot}, fixed)
}

func resetVM() {
	nvmas = 0
	mmapCursor = mmapStart
}

// checkModel compares the areas over the window with the model: prot+1 per
// page, 0 for unmapped.
func checkModel(t *testing.T, step int, model *[modelPages]uint32) {
	t.Helper()
	for i := 1; i < nvmas; i++ {
		if vmas[i-1].end > vmas[i].start || vmas[i].start >= vmas[i].end {
			t.Fatalf("step %d: areas out of order or empty: %+v %+v", step, vmas[i-1], vmas[i])
		}
		if vmas[i-1].end == vmas[i].start && vmas[i-1].prot == vmas[i].prot {
			t.Fatalf("step %d: adjacent areas with the same protection not merged: %+v %+v", step, vmas[i-1], vmas[i])
		}
	}
	for p := 0; p < modelPages; p++ {
		a := uintptr(modelBase + p*PageSize)
		i := findVMA(a)
		got := uint32(0)
		if i < nvmas && vmas[i].start <= a {
			got = vmas[i].prot + 1
		}
		if got != model[p] {
			t.Fatalf("step %d: page %d: area says %d, model %d", step, p, got, model[p])
		}
	}
}

func TestVMAModel(t *testing.T) {
	resetVM()
	defer resetVM()
	rng := rand.New(rand.NewSource(1))
	var model [modelPages]uint32
	for step := 0; step < 20000; step++ {
		p := rng.Intn(modelPages)
		n := 1 + rng.Intn(modelPages-p)
		addr, size := uintptr(modelBase+p*PageSize), uintptr(n*PageSize)
		prot := uint32(rng.Intn(4)) // none, r, w, rw
		switch rng.Intn(4) {
		case 0: // fixed mapping replaces whatever was there
			if got, err := areaMap(addr, size, prot, true); err != 0 || got != addr {
				t.Fatalf("step %d: fixed map = %#x, %d", step, got, err)
			}
			for i := p; i < p+n; i++ {
				model[i] = prot + 1
			}
		case 1: // hint: honoured only if free
			free := true
			for i := p; i < p+n; i++ {
				free = free && model[i] == 0
			}
			got, err := areaMap(addr, size, prot, false)
			if err != 0 {
				t.Fatalf("step %d: hinted map: %d", step, err)
			}
			if free != (got == addr) {
				t.Fatalf("step %d: hint %#x free=%v but got %#x", step, addr, free, got)
			}
			if got == addr {
				for i := p; i < p+n; i++ {
					model[i] = prot + 1
				}
			} else if !removeVMA(got, got+size) { // keep the rest of the space tidy
				t.Fatalf("step %d: unmap elsewhere failed", step)
			}
		case 2:
			if !removeVMA(addr, addr+size) {
				t.Fatalf("step %d: unmap failed", step)
			}
			for i := p; i < p+n; i++ {
				model[i] = 0
			}
		case 3: // as on Linux, ENOMEM and no change over a hole
			mapped := true
			for i := p; i < p+n; i++ {
				mapped = mapped && model[i] != 0
			}
			err := areaProtect(addr, size, prot)
			if mapped != (err == 0) || !mapped && err != abi.ENOMEM {
				t.Fatalf("step %d: protect of a range mapped=%v: %d", step, mapped, err)
			}
			for i := p; i < p+n && mapped; i++ {
				model[i] = prot + 1
			}
		}
		checkModel(t, step, &model)
	}
}

func TestVMAFindFreeSkipsMappings(t *testing.T) {
	resetVM()
	defer resetVM()
	a, _ := areaMap(0, 1<<20, ProtRead|ProtWrite, false)
	b, _ := areaMap(0, 1<<20, ProtRead|ProtWrite, false)
	if a == 0 || b == 0 || b+1<<20 > a && a+1<<20 > b {
		t.Fatalf("overlapping or failed mappings %#x %#x", a, b)
	}
	if !removeVMA(a, a+1<<20) {
		t.Fatal("removeVMA failed")
	}
	// A hint inside the kernel's identity map is never honoured.
	if got, _ := areaMap(0x400000, PageSize, ProtRead, false); got < userMin {
		t.Fatalf("mapping placed in the identity map at %#x", got)
	}
	if _, err := areaMap(0x400000, PageSize, ProtRead, true); err != abi.ENOMEM {
		t.Fatalf("fixed mapping over the kernel = %d, want ENOMEM", err)
	}
}

// TestVMAFindFreeBounds: a length beyond what is left below the cursor
// finds no room instead of wrapping into the kernel half (mmap(NULL, 1<<47)
// used to return 0xffffff0000000000 and move the cursor there).
func TestVMAFindFreeBounds(t *testing.T) {
	resetVM()
	defer resetVM()
	for _, n := range []uintptr{1 << 47, mmapStart - userMin + PageSize, ^uintptr(0) &^ (PageSize - 1)} {
		if got, err := areaMap(0, n, ProtRead, false); err != abi.ENOMEM {
			t.Errorf("map of %#x bytes = %#x, %d; want ENOMEM", n, got, err)
		}
	}
	if mmapCursor != mmapStart {
		t.Fatalf("cursor moved to %#x", mmapCursor)
	}
	// The largest mapping that fits ends at the cursor, starts at userMin.
	got, err := areaMap(0, mmapStart-userMin, ProtRead, false)
	if err != 0 || got != userMin {
		t.Fatalf("map of all below the cursor = %#x, %d", got, err)
	}
	if got, err := areaMap(0, PageSize, ProtRead, false); err != abi.ENOMEM || got != 0 {
		t.Fatalf("map with no room left = %#x, %d; want ENOMEM", got, err)
	}
	for i := 0; i < nvmas; i++ {
		if !inUser(vmas[i].start, vmas[i].end) {
			t.Fatalf("area %+v outside the user half", vmas[i])
		}
	}
}

// TestVMAProtectAtCapacity: with one free slot in the area array, an
// mprotect inside an area (a split and an insertion: two slots) fails with
// ENOMEM and leaves every page its area; it used to split the area, fail
// to insert, and leave the page mapped without one. One over a whole area
// still works.
func TestVMAProtectAtCapacity(t *testing.T) {
	resetVM()
	defer resetVM()
	base := uintptr(modelBase)
	// Alternate protections page by page until two slots are left, then
	// a three-page area: one slot left.
	i := 0
	for ; nvmas < len(vmas)-2; i++ {
		if _, err := areaMap(base+uintptr(i)*PageSize, PageSize, uint32(1+i%2), true); err != 0 {
			t.Fatalf("page %d: %d", i, err)
		}
	}
	last := base + uintptr(i)*PageSize
	if _, err := areaMap(last, 3*PageSize, ProtExec, true); err != 0 || nvmas != len(vmas)-1 {
		t.Fatalf("three-page area: %d, %d areas", err, nvmas)
	}
	end := last + 3*PageSize
	if err := areaProtect(last+PageSize, PageSize, ProtRead|ProtWrite); err != abi.ENOMEM {
		t.Fatalf("protect inside an area at capacity = %d, want ENOMEM", err)
	}
	if nvmas != len(vmas)-1 || !covered(base, end) {
		t.Fatalf("a failed protect changed the areas: %d areas, covered=%v", nvmas, covered(base, end))
	}
	if err := areaProtect(last, 3*PageSize, ProtRead); err != 0 || !covered(base, end) {
		t.Fatalf("protect of a whole area at capacity = %d", err)
	}
}

// TestVMAFileAreas: random fixed mappings of one file (at offsets that
// follow its address, so pieces may merge back) and of anonymous memory,
// unmaps and protections over a window. Every file area must map the
// file at the offset its address says, and hold exactly one reference:
// the references each mapping brings, plus the logged splits, minus the
// logged removals and merges, equal the number of file areas.
func TestVMAFileAreas(t *testing.T) {
	resetVM()
	defer resetVM()
	nrefs = 0
	defer func() { nrefs = 0 }()
	const file, fileOff = 7, 1 << 20
	rng := rand.New(rand.NewSource(2))
	refs := 0
	for step := 0; step < 20000; step++ {
		p := rng.Intn(modelPages)
		n := 1 + rng.Intn(modelPages-p)
		addr, size := uintptr(modelBase+p*PageSize), uintptr(n*PageSize)
		prot := uint32(rng.Intn(4))
		switch rng.Intn(4) {
		case 0:
			refs++ // the mapping's own
			v := vma{prot: prot, file: file, off: fileOff + int64(p*PageSize), shared: true}
			if _, err := areaPlace(addr, size, v, true); err != 0 {
				t.Fatalf("step %d: file map: %d", step, err)
			}
		case 1:
			if _, err := areaMap(addr, size, prot, true); err != 0 {
				t.Fatalf("step %d: map: %d", step, err)
			}
		case 2:
			if !removeVMA(addr, addr+size) {
				t.Fatalf("step %d: unmap failed", step)
			}
		case 3:
			areaProtect(addr, size, prot)
		}
		for i := 0; i < nrefs; i++ {
			if refLog[i].file != file {
				t.Fatalf("step %d: reference logged for file %d", step, refLog[i].file)
			}
			refs += int(refLog[i].d)
		}
		nrefs = 0
		areas := 0
		for i := 0; i < nvmas; i++ {
			v := &vmas[i]
			if i > 0 && vmas[i-1].joins(v) {
				t.Fatalf("step %d: areas %+v and %+v not merged", step, vmas[i-1], *v)
			}
			if v.file == 0 {
				continue
			}
			areas++
			if want := fileOff + int64(v.start-modelBase); v.off != want {
				t.Fatalf("step %d: area %+v maps offset %#x, want %#x", step, *v, v.off, want)
			}
		}
		if refs != areas {
			t.Fatalf("step %d: %d references held for %d file areas", step, refs, areas)
		}
	}
}
