package main

// sysAccess is access(2), which arm64 does not have.
const sysAccess = 0
