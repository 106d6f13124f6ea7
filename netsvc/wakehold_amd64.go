package netsvc

import (
	"sync/atomic"
	_ "unsafe" // go:linkname

	_ "gvisor.dev/gvisor/pkg/sync" // initialises spinning
)

// spinning is the address of the runtime's sched.nmspinning, which gVisor's
// pkg/sync computes (its wake suppression; TestRuntimeOffsets checks the
// offset it uses against the toolchain's).
//
//go:linkname spinning gvisor.dev/gvisor/pkg/sync.nmspinning
var spinning *int32

// wakeHold says whether holdWakes holds anything back on this architecture.
const wakeHold = true

// holdWakes stops the runtime from starting an idle P for the goroutines
// this one readies until releaseWakes: it counts one more spinning thread,
// so wakep leaves the work to it (gVisor's own wake suppression, done
// around a whole batch). They wait on this P's run queue instead.
func holdWakes() { atomic.AddInt32(spinning, 1) }

// releaseWakes undoes holdWakes.
func releaseWakes() { atomic.AddInt32(spinning, -1) }
