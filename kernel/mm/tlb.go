package mm

// invlpgMax is the largest range invalidated page by page; above it every
// translation goes.
const invlpgMax = 32

// invalidate drops the translations of [start, end): this CPU's on amd64
// (the shootdown's interrupts reach the others), every CPU's on arm64
// (TLBI broadcasts), through the arch's flushAll and flushPage.
func invalidate(start, end uintptr) {
	if (end-start)/PageSize > invlpgMax {
		flushAll()
		return
	}
	for va := start; va < end; va += PageSize {
		flushPage(va)
	}
}
