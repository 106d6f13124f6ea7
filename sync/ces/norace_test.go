//go:build !race

package ces

const raceEnabled = false
