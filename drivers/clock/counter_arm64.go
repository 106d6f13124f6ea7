package clock

// Counter reads the virtual counter CNTVCT_EL0, after an ISB so that the
// read is not done ahead of the code before it.
func Counter() uint64
