package boot

// EntryPC returns the physical address of the PVH entry point.
func EntryPC() uintptr

func pvhEntry()
func entry64()
