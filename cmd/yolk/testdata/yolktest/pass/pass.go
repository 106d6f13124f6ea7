// Package pass has tests that pass (a yolk test fixture).
package pass

// Add returns a+b.
func Add(a, b int) int { return a + b }
