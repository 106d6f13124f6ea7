package mm

// hardwareDirty: the CPU sets the dirty bit; a clean page stays writable.
const hardwareDirty = true

func pteWritable(e uint64) bool { return e&pteWrite != 0 }
