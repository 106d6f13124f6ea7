package main

// The architecture's differences the tests need to know.

const regSpinBits = "GPRs ax bx dx si di bp r8-r14 in 0-12, flags 13, sp 14, X0-X15 in 16-31"

// shootdownByIPI: amd64 TLB shootdowns interrupt the other CPUs.
const shootdownByIPI = true
