package main

// The architecture's differences the tests need to know.

const regSpinBits = "R0-R17 and R19-R25 in 0-25, NZCV 28, SP 29, V0-V31 in 32-63"

// shootdownByIPI: arm64's broadcast TLBI needs no interrupt.
const shootdownByIPI = false
