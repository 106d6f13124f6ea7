package sched

func fxsave(addr uintptr)

// prepareAll crafts on t's kernel stack the frame swtchAll restores, so
// that its first swtchAll returns to pc: FX area, flags, 12 registers,
// return PC.
func prepareAll(t *Task, pc uintptr) {
	top := t.KStackHi
	sp := top - 8 - 12*8 - 8 - 528
	*wordAt(top - 8) = pc
	for i := uintptr(1); i <= 12; i++ {
		*wordAt(top - 8 - i*8) = 0
	}
	*wordAt(top - 8 - 12*8 - 8) = 2 // RFLAGS: reserved bit only, IF off
	fxsave((sp + 15) &^ 15)
	t.ctx = Context{SP: sp}
}
