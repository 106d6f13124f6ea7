package gic

// InitCPU sets up the calling CPU's part of the GIC: its SGIs and PPIs
// (disabled, priority DefaultPriority, Group 1 on GICv3) and its CPU
// interface (priority mask open, enabled). On GICv3 it first finds and
// wakes the CPU's redistributor and enables the system-register
// interface. Interrupts stay masked at the CPU (DAIF) until the caller
// unmasks them.
func InitCPU() (CPU, Error) {
	switch version {
	case 2:
		return initCPUV2()
	case 3:
		return initCPUV3()
	}
	return CPU{}, ErrNotInit
}
