package sched

// allFrame is the size of the frame swtchAll saves (cpu_arm64.s).
const allFrame = 32*8 + 32*16

// prepareAll crafts on t's kernel stack the frame swtchAll restores, so
// that its first swtchAll returns to pc: every saved register zero (FPCR
// zero is the architecture's default rounding and no traps).
func prepareAll(t *Task, pc uintptr) {
	sp := (t.KStackHi &^ 15) - allFrame
	for a := sp; a < sp+allFrame; a += 8 {
		*wordAt(a) = 0
	}
	t.ctx = Context{SP: sp, LR: pc}
}
