package kernel

func (procenv) APICID(i int) uint32 { return apIRQ[i] }

func (procenv) XCR0() uint64 {
	if xsaveOn != 0 {
		return xcr0
	}
	return 0
}
