package mm

import "yolk/arch/arm64"

func copyUser(dst, src, n uintptr) uintptr { return arm64.CopyUser(dst, src, n) }

// UserFixup is where a kernel-mode fault at pc resumes if pc is inside
// the user copy (exception table, arch/arm64).
func UserFixup(pc uintptr) (uintptr, bool) { return arm64.UserFixup(pc) }
