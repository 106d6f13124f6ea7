package kernel

import "yolk/arch/amd64"

// hwRandom is a random number from the CPU (RDRAND), if it has one.
func hwRandom() (uint64, bool) {
	if !hasRDRAND {
		return 0, false
	}
	for i := 0; i < 10; i++ {
		if v, ok := amd64.Rdrand(); ok {
			return v, true
		}
	}
	return 0, false
}

const hwRandomName = "RDRAND"
