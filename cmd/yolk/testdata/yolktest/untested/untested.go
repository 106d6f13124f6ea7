// Package untested has code and no test files (a yolk test fixture for
// -coverpkg's coverage of such a package).
package untested

// Neg is -x, or 0 for 0.
func Neg(x int) int {
	if x == 0 {
		return 0
	}
	return -x
}
