//go:build !amd64

package netsvc

// gVisor's wake suppression is amd64's only (pkg/sync: the runtime offset
// it uses is known there): elsewhere nothing is held back, and a round
// does not yield for the TCP processors (round).
const wakeHold = false

func holdWakes()    {}
func releaseWakes() {}
