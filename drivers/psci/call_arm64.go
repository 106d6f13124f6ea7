package psci

// call makes the SMCCC call fn(a1, a2, a3) by HVC #0 (smc == 0) or
// SMC #0 (smc == 1) and returns X0 (call_arm64.s).
func call(smc, fn, a1, a2, a3 uint64) uint64
