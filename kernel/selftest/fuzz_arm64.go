package main

// arm64 has only the generic system calls: nothing of its own to exclude
// or bound.
var fuzzArchExcluded = map[uintptr]string{}

func fuzzArchArgs(nr uintptr, a *[6]uintptr, zeroTS *[2]int64) {}

var fuzzArchFDCalls []uintptr

// fuzzPipe: arm64 has no pipe(2); no call number is ^0.
const fuzzPipe = ^uintptr(0)
