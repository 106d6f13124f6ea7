package kernel

func (procenv) APICID(i int) uint32 { return apIRQ[i] }
