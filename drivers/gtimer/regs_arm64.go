package gtimer

// The timer's system registers (regs_arm64.s).

func readFreq() uint64
func readCount() uint64
func readCTL() uint64
func writeCTL(v uint64)
func readCVAL() uint64
func writeCVAL(v uint64)

// SetupAtEL2 zeroes CNTVOFF_EL2 (virtual count = physical count) and sets
// CNTHCTL_EL2.EL1PCTEN and EL1PCEN (EL1 may use the physical counter and
// timer). Call it at EL2, on every CPU, before dropping to EL1; at EL1 it
// is undefined.
func SetupAtEL2()
