package semihosting

// exitCall makes SYS_EXIT with the block {reason, subcode} (exit_arm64.s).
func exitCall(reason, subcode uint64)
