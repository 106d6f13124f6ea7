package main

import (
	"syscall"
	"unsafe"

	"yolk/kernel/abi"
)

func init() {
	tests = append(tests, test{"TestKStackOutOfFrames", testKStackOutOfFrames})
}

// testKStackOutOfFrames: a kernel stack (mm.AllocKStack, 8 pages and, in
// a fresh 2 MiB of the stack area, the page table that maps them) is
// mapped whole or not at all. The kernel maps the last task slot's stack
// with its frames running out after n, for n = 0, 1, ... until it
// succeeds (abi.SysKStackTest): each failure leaves no page of the stack
// mapped and gives back every frame it took but the page table it
// added; the success maps all 8 pages, with 8 frames kept besides the
// table. yolk used to leave the pages mapped before the failure (the next
// try then took the half stack as whole) and to lose the frame whose page
// table could not be made. Kernel-only: Linux has nothing to compare.
func testKStackOutOfFrames(t *T) {
	if !onYolk() {
		t.Skipf("a kernel-only test")
	}
	const pages = 8 // mm.KStackSize
	tables := int64(0)
	for n := 0; n <= pages+4; n++ {
		var r abi.KStackTestOut
		if _, _, e := syscall.Syscall(abi.SysKStackTest, uintptr(n), uintptr(unsafe.Pointer(&r)), 0); e != 0 {
			t.Fatalf("SysKStackTest(%d): %v", n, e)
		}
		if r.WasMapped != 0 {
			if n == 0 {
				t.Skipf("the last slot's stack is mapped already (a task had it, or the test ran before)")
			}
			t.Fatalf("frames for %d: the stack was mapped before the call (%d pages); the last failure left it so", n, r.Mapped)
		}
		tables += r.TableAdded
		kept := r.Taken - r.Freed
		t.Logf("frames for %d: ok %d, %d pages mapped, %d frames taken, %d given back, table added %d", n, r.OK, r.Mapped, r.Taken, r.Freed, r.TableAdded)
		if r.OK == 0 {
			if r.Mapped != 0 || kept != r.TableAdded {
				t.Errorf("frames for %d: failed with %d pages mapped and %d frames kept; want none mapped and %d kept (the page table added)",
					n, r.Mapped, kept, r.TableAdded)
			}
			continue
		}
		if r.Mapped != pages || kept != pages+r.TableAdded {
			t.Errorf("frames for %d: succeeded with %d pages mapped and %d frames kept; want %d and %d", n, r.Mapped, kept, pages, pages+r.TableAdded)
		}
		if tables != 1 {
			t.Errorf("the tries added %d page tables; want 1", tables)
		}
		return
	}
	t.Errorf("no success with %d frames", pages+4)
}
