//go:build !amd64 && !arm64

package twa

// pause is the spin-wait hint. Architectures without an assembly version
// poll without a hint: the loop is still correct, only less polite to a
// sibling hardware thread.
//
//go:nosplit
func pause() {}
