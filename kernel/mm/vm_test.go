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
		case 3:
			if err := areaProtect(addr, size, prot); err != 0 {
				t.Fatalf("step %d: protect: %d", step, err)
			}
			for i := p; i < p+n; i++ {
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
