package main

import "golang.org/x/sys/unix"

// sysAccess is access(2), which arm64 does not have.
const sysAccess = unix.SYS_ACCESS
