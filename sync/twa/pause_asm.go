//go:build amd64 || arm64

package twa

// pause executes the CPU's spin-wait hint once: PAUSE on amd64, YIELD on
// arm64. It lowers the power and the memory-order-violation cost of a busy
// poll and, on an SMT core, lends the pipeline to the sibling thread. It
// touches no memory and calls nothing (pause_amd64.s, pause_arm64.s).
func pause()
