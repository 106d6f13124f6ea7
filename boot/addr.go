package boot

import "unsafe"

func addrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
