// Package flags is a yolk test fixture for go test's flags: tests to
// list and shuffle, a benchmark that allocates, statements to cover.
package flags

// Sum adds xs.
func Sum(xs ...int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// Unused is never called by the tests (coverage below 100 %).
func Unused() int { return 1 }
