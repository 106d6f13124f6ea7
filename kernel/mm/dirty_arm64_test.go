package mm

// hardwareDirty: no hardware dirty-bit management; a clean page is
// read-only until its write fault.
const hardwareDirty = false

func pteWritable(e uint64) bool { return e&pteRO == 0 }
