package mm

// Area is one area of the address space as /proc's maps shows it
// (kernel/procsnap): its range, protection (ProtRead, ProtWrite,
// ProtExec), whether it is a shared mapping of a file, the file (the
// kernel's name, 0: anonymous memory) and the offset of start in it.
type Area struct {
	Start, End uintptr
	Prot       uint32
	Shared     bool
	File       int32
	Off        int64
}

// Areas calls f with each area in ascending order until f returns false,
// under mmLock: f must not block, fault or take another lock (it copies
// what it needs). f is called, never kept.
func Areas(f func(a Area) bool) {
	mmLock.Lock()
	defer mmLock.Unlock()
	for i := 0; i < nvmas; i++ {
		v := &vmas[i]
		if !f(Area{Start: v.start, End: v.end, Prot: v.prot, Shared: v.shared, File: v.file, Off: v.off}) {
			return
		}
	}
}
