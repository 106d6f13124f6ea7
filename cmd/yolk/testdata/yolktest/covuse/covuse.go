// Package covuse calls covlib (a yolk test fixture for -coverpkg over
// several tested packages).
package covuse

import "yolk/cmd/yolk/testdata/yolktest/covlib"

// Dist is |a-b|.
func Dist(a, b int) int { return covlib.Abs(a - b) }

// Same reports whether a and b have the same sign.
func Same(a, b int) bool {
	if covlib.Sign(a) != covlib.Sign(b) {
		return false
	}
	return true
}
