package arm64

// MIDR reads MIDR_EL1, this CPU's implementer, part and revision
// (/proc/cpuinfo's CPU lines).
func MIDR() uint64
