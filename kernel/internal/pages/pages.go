// Package pages is what kernel/fs and kernel/net ask of the kernel for
// the memory they keep their data in: whole pages, named by address. Both
// packages' Env constraints embed Supplier; the kernel implements it once
// (vfs.go's pageSupplier) and the hosted tests once (envtest).
//
// A leaf without code: an interface used only as a type-parameter
// constraint, never as an interface value.
package pages

// Size is a page's size in bytes.
const Size = 4096

// Supplier gives and takes back pages.
type Supplier interface {
	// AllocPage returns the address of a zeroed Size page, 0 when
	// memory is exhausted.
	AllocPage() uintptr
	// FreePage returns a page AllocPage gave.
	FreePage(a uintptr)
}
