package kernel

// hwRandom: no RNDR is used (QEMU's cortex-a72 has none).
func hwRandom() (uint64, bool) { return 0, false }

const hwRandomName = "RNDR"
