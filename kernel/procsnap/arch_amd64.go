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
	// XCR0 is the XSAVE state the kernel enabled (0: it does not use
	// XSAVE).
	XCR0() uint64
}

// fillArch fills the CPUs' model from CPUID, as Linux's cpuinfo_x86, and
// their APIC IDs. The features whose registers need XSAVE state the
// kernel did not enable (XCR0: AVX-512's, AMX's, or AVX's too on a CPU
// without XSAVE) are not the program's, as XGETBV tells Go's runtime.
// cpu MHz is the TSC's calibrated rate.
func fillArch[E Env](env E, s *procfs.Snapshot) {
	s.Arch = procfs.ArchAMD64
	s.Model.KHz = clock.Hz() / 1000
	s.Model.ReadCPUID(amd64.Cpuid, env.XCR0())
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
