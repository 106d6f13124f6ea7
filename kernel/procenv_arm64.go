package kernel

func (procenv) HWCap() uint64 { return uint64(hwcap()) }
