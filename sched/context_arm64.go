package sched

// Context is what the minimal switch saves: SP, the frame pointer (R29) and
// the link register (R30), where the switch returns to. g (R28) is not
// saved: the switch loads the resumed task's.
type Context struct {
	SP, FP, LR uintptr
}

// Prepare makes t's first switch "return" to pc with SP at sp (a trampoline
// that calls FinishSwitch first). sp is rounded down to 16 bytes, as arm64
// requires of SP.
func (t *Task) Prepare(sp, pc uintptr) {
	t.ctx = Context{SP: sp &^ 15, LR: pc}
}
