//go:build !arm64

package gic

// Hosted (non-arm64) builds: a model of the CPU's system registers, so the
// tests can run the GICv3 code on the host and check what it wrote.
var sys struct {
	mpidr                         uint64
	sre, pmr, bpr1, ctlr, igrpen1 uint64
	sreLocked                     bool     // EL2 left ICC_SRE_EL2.Enable clear
	iar                           []uint64 // values Ack will read, in order
	eoir, sgi1r                   []uint64 // values written, in order
}

func readMPIDR() uint64 { return sys.mpidr }
func readSRE() uint64   { return sys.sre }
func writeSRE(v uint64) {
	if !sys.sreLocked {
		sys.sre = v
	}
}
func writePMR(v uint64)     { sys.pmr = v }
func writeBPR1(v uint64)    { sys.bpr1 = v }
func writeCTLR(v uint64)    { sys.ctlr = v }
func writeIGRPEN1(v uint64) { sys.igrpen1 = v }
func readIAR1() uint64 {
	if len(sys.iar) == 0 {
		return Spurious
	}
	v := sys.iar[0]
	sys.iar = sys.iar[1:]
	return v
}
func writeEOIR1(v uint64) { sys.eoir = append(sys.eoir, v) }
func writeSGI1R(v uint64) { sys.sgi1r = append(sys.sgi1r, v) }

// EnableSREAtEL2 models the EL2 write.
func EnableSREAtEL2() { sys.sreLocked = false }
