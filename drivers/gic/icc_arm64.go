package gic

import "yolk/arch/arm64"

// readMPIDR reads MPIDR_EL1 (icc_other.go models it on the host).
func readMPIDR() uint64 { return arm64.MPIDR() }

// The GICv3 CPU interface (icc_arm64.s).

func readSRE() uint64
func writeSRE(v uint64)
func writePMR(v uint64)
func writeBPR1(v uint64)
func writeCTLR(v uint64)
func writeIGRPEN1(v uint64)
func readIAR1() uint64
func writeEOIR1(v uint64)
func writeSGI1R(v uint64)

// EnableSREAtEL2 sets ICC_SRE_EL2 to SRE|DFB|DIB|Enable, so that EL1 may
// use the GICv3 system registers. Call it at EL2, before dropping to EL1,
// on every CPU entered at EL2 (QEMU virt with virtualization=on); at EL1
// it is undefined.
func EnableSREAtEL2()
