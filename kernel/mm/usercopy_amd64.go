package mm

import "yolk/arch/amd64"

func copyUser(dst, src, n uintptr) uintptr { return amd64.CopyUser(dst, src, n) }

// UserFixup is where a kernel-mode fault at pc resumes if pc is inside
// the user copy (exception table, arch/amd64).
func UserFixup(pc uintptr) (uintptr, bool) { return amd64.UserFixup(pc) }
