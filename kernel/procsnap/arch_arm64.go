package procsnap

import (
	"yolk/arch/arm64"
	"yolk/drivers/clock"
	"yolk/kernel/procfs"
)

// archEnv is what arm64's fill needs of the kernel besides Env's.
type archEnv interface {
	// HWCap is AT_HWCAP's features.
	HWCap() uint64
}

// fillArch fills the CPUs' model: AT_HWCAP's features, BogoMIPS from the
// generic timer's rate as Linux's arm64 cpuinfo (loops_per_jiffy is the
// rate over HZ), and MIDR_EL1 — this CPU's, for every CPU: the machines
// yolk runs on have one kind of core.
func fillArch[E Env](env E, s *procfs.Snapshot) {
	s.Arch = procfs.ArchARM64
	s.Model.HWCap = env.HWCap()
	s.Model.BogoMIPS = clock.Hz() / 5000
	midr := uint32(arm64.MIDR())
	for i := 0; i < int(s.NumCPU); i++ {
		s.CPUs[i].MIDR = midr
	}
}

// fillArchMem fills meminfo's arm64 lines: the vmalloc space of a 48-bit
// virtual address space with 4 KiB pages, as Linux 6.x's arm64 shows it.
func fillArchMem(s *procfs.Snapshot, total uint64) {
	s.Mem[procfs.MemVmallocTotal] = 135288315904 << 10
}
