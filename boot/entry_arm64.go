package boot

// EntryPC returns the address of the arm64 entry (the ELF entry point the
// image tool writes).
func EntryPC() uintptr

// SecondaryPC returns the address where secondary CPUs start (PSCI
// CPU_ON's entry point); they receive their context in x0.
func SecondaryPC() uintptr

func entry()
func secondary()
func entryEL1()
