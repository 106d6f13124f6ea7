//go:build !arm64

package semihosting

// Hosted (non-arm64) builds: record the block for the tests.
var calls [][2]uint64

func exitCall(reason, subcode uint64) { calls = append(calls, [2]uint64{reason, subcode}) }
