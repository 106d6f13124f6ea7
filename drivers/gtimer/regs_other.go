//go:build !arm64

package gtimer

// Hosted (non-arm64) builds: a model of the timer registers for the
// tests. ISTATUS follows the architecture: set while enabled and
// count >= CVAL.
var sys struct {
	freq, count, cval, ctl uint64
	el2                    bool
}

func readFreq() uint64  { return sys.freq }
func readCount() uint64 { return sys.count }
func readCTL() uint64 {
	c := sys.ctl &^ ctlIStatus
	if c&ctlEnable != 0 && sys.count >= sys.cval {
		c |= ctlIStatus
	}
	return c
}
func writeCTL(v uint64)  { sys.ctl = v & (ctlEnable | ctlIMask) }
func readCVAL() uint64   { return sys.cval }
func writeCVAL(v uint64) { sys.cval = v }
func SetupAtEL2()        { sys.el2 = true }
