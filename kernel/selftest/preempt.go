package main

// preemptPoint is a call with a stack check, which is where Go preempts a
// goroutine when it cannot interrupt it asynchronously — on yolk until
// asynchronous preemption exists. A loop that spins on shared memory and
// would otherwise make no such call (inlined fast paths, frameless leaf
// functions, which the compiler builds without a stack check) calls it
// once per iteration, so that a stop-the-world (a GC, ReadMemStats in the
// benchmark framework) waits at most one iteration for it instead of
// forever. It costs two calls; benchmarks that use it do so on every
// system they are compared on.
//
//go:noinline
func preemptPoint() { preemptLeaf() }

//go:noinline
func preemptLeaf() {}
