// Package probe has one forge of each kind TestUserMemoryRule finds
// (usermem_rule_test.go), and code that forges nothing.
package probe

import "unsafe"

func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func wrap(a uintptr, n int) []byte {
	b := unsafe.Slice(at[byte](a), n)
	return b
}

func integer(a uintptr) *uint32 { return (*uint32)(unsafe.Pointer(a)) }

func add(p unsafe.Pointer) unsafe.Pointer { return unsafe.Add(p, 8) }

func asmLoad(addr uintptr) uint32

func handler(p uintptr) uint32 { return uint32(wrap(p, 4)[0]) + *integer(p) + asmLoad(p) }

type T struct{ a uintptr }

func (t *T) get() uint64 { return *at[uint64](t.a) }

// None of these forge: a pointer's address as an integer, a Go
// variable's bytes, a pointer of the same memory's type.
func clean(p uintptr) (uint32, []byte) {
	var v uint32
	_ = uintptr(unsafe.Pointer(&v)) + p
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4)
	var q *T
	_ = (*T)(unsafe.Pointer(q))
	return v, b
}

// header stores an address in a slice's header, seen as integers.
func header(p uintptr) []byte {
	var b []byte
	(*[3]uintptr)(unsafe.Pointer(&b))[0] = p
	return b
}
