package sched

// Context is what the minimal switch saves: SP (the return PC is on the
// stack) and BP.
type Context struct {
	SP, BP uintptr
}

// Prepare makes t's first switch "return" to pc with SP at sp (a trampoline
// that calls FinishSwitch first). sp must leave room below it.
func (t *Task) Prepare(sp, pc uintptr) {
	sp -= 8
	*wordAt(sp) = pc
	t.ctx = Context{SP: sp}
}
