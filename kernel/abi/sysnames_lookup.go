package abi

//go:generate go run gen_sysnames.go

// SysName is the Linux name of system call nr on this architecture, or "?".
func SysName(nr uintptr) string {
	var s string
	if nr < sysCommon {
		if nr < uintptr(len(sysNamesArch)) {
			s = sysNamesArch[nr]
		}
	} else if nr-sysCommon < uintptr(len(sysNamesCommon)) {
		s = sysNamesCommon[nr-sysCommon]
	}
	if s == "" {
		return "?"
	}
	return s
}
