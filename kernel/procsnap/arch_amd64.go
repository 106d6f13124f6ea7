package procsnap

import (
	"yolk/arch/amd64"
	"yolk/drivers/clock"
	"yolk/kernel/procfs"
)

// archEnv is what amd64's fill needs of the kernel besides Env's.
type archEnv interface {
	// APICID is CPU i's local APIC ID.
	APICID(i int) uint32
}

// fillArch fills the CPUs' model from CPUID, as Linux's cpuinfo_x86, and
// their APIC IDs. XCR0 is 0: the kernel never sets CR4.OSXSAVE (it saves
// the FXSAVE state only), so the features that need XSAVE-managed
// registers (AVX and after) are not the program's, as CPUID's OSXSAVE
// bit tells Go's runtime. cpu MHz is the TSC's calibrated rate.
func fillArch[E Env](env E, s *procfs.Snapshot) {
	s.Arch = procfs.ArchAMD64
	s.Model.KHz = clock.Hz() / 1000
	s.Model.ReadCPUID(amd64.Cpuid, 0)
	for i := 0; i < int(s.NumCPU); i++ {
		s.CPUs[i].APICID = env.APICID(i)
	}
}

// fillArchMem fills meminfo's amd64 lines: x86-64's vmalloc space, and
// the direct map, which maps RAM with 2 MiB pages (the 4 KiB ones that
// split it for the BSS and the read-only image are not counted).
func fillArchMem(s *procfs.Snapshot, total uint64) {
	s.Mem[procfs.MemVmallocTotal] = 34359738367 << 10
	s.Mem[procfs.MemDirectMap2M] = (total + 2<<20 - 1) &^ (2<<20 - 1)
}
