//go:build !arm64

package psci

// Hosted (non-arm64) builds: a recording firmware for the tests.
var firmware struct {
	calls [][5]uint64 // smc, fn, a1, a2, a3
	ret   uint64
}

func call(smc, fn, a1, a2, a3 uint64) uint64 {
	firmware.calls = append(firmware.calls, [5]uint64{smc, fn, a1, a2, a3})
	return firmware.ret
}
