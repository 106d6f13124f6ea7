// Package covlib is called by covuse (a yolk test fixture for -coverpkg
// over several tested packages: each one's coverage counts both).
package covlib

// Abs is |x|.
func Abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Sign is -1, 0 or 1.
func Sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}
