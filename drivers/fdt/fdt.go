// Package fdt reads a flattened device tree (a DTB, Devicetree
// Specification v0.4, chapter 5) in place, so that the arm64 kernel can find
// its memory, UART, interrupt controller, timer interrupts, PSCI conduit and
// CPUs on QEMU virt and boards. It reads the blob and never writes it;
// device addresses are translated through their buses' "ranges" (RegAt),
// interrupts are decoded as GIC specifiers without following
// interrupt-parent, and it knows nothing else about the devices.
//
// Kernel-context: it runs at boot, before the Go runtime. No allocation, no
// runtime calls, no pointer stores: an FDT is a base address and offsets,
// every result is a pointer-free value or is written into the caller's
// array, and names are compared in place. Every read is checked against the
// header's block bounds before it is made (a blob that lies can make a
// look-up fail, never read outside totalsize), every walk advances, so it
// ends, and nesting deeper than MaxDepth is an error. Memory is read a byte
// at a time, so nothing assumes alignment, and the package is arch-neutral
// (it is tested on the host against DTBs QEMU dumped).
//
// The blob must stay mapped and unchanged while an FDT is used: on QEMU
// virt it is the first MiB of RAM (TotalSize), which the kernel keeps out
// of its frame allocator along with the ranges Reserved reports.
package fdt

import "unsafe"

// Error is the outcome of a look-up; OK is zero. It is a small code, not a
// Go error, so that returning one allocates nothing.
type Error uint8

const (
	OK           Error = iota
	ErrNoBlob          // address 0
	ErrMagic           // no 0xd00dfeed at the address
	ErrVersion         // last compatible version above 17, or version below 16
	ErrHeader          // totalsize or a block offset/size is out of bounds or misaligned
	ErrTruncated       // totalsize exceeds the bytes the caller said are readable
	ErrStructure       // a bad token, an unterminated name, a property past its block, unbalanced nodes
	ErrDepth           // nodes nest deeper than MaxDepth
	ErrNotFound        // no such node or property
	ErrValue           // a property's length does not fit its expected format
	ErrCells           // #address-cells or #size-cells above 2 where a value must fit 64 bits
	ErrTooMany         // more entries than the caller's array; the count is still exact
)

var errText = [...]string{
	OK:           "ok",
	ErrNoBlob:    "no device tree",
	ErrMagic:     "bad device tree magic",
	ErrVersion:   "unsupported device tree version",
	ErrHeader:    "bad device tree header",
	ErrTruncated: "device tree larger than its region",
	ErrStructure: "bad device tree structure",
	ErrDepth:     "device tree nested too deep",
	ErrNotFound:  "not found",
	ErrValue:     "bad property value",
	ErrCells:     "more than 2 address or size cells",
	ErrTooMany:   "more entries than fit",
}

func (e Error) String() string {
	if int(e) < len(errText) {
		return errText[e]
	}
	return "unknown fdt error"
}

// Header layout and tokens (Devicetree Specification 5.2, 5.4).
const (
	Magic   = 0xd00dfeed
	hdrLen  = 40
	minVers = 16
	maxComp = 17

	tokBeginNode = 1
	tokEndNode   = 2
	tokProp      = 3
	tokNop       = 4
	tokEnd       = 9

	// MaxDepth is the deepest node nesting the walk follows (the root is
	// depth 1; QEMU virt's deepest node, /cpus/cpu-map/socket0/cluster0/
	// core0, is depth 6).
	MaxDepth = 16
)

// FDT is a validated blob: its address and the bounds of its structure and
// strings blocks, as offsets from Base.
type FDT struct {
	Base       uintptr
	TotalSize  uint32
	structOff  uint32
	structSize uint32
	strOff     uint32
	strSize    uint32
}

// Node is the offset of a node's FDT_BEGIN_NODE token in the structure block.
type Node uint32

// Prop is one property's value: its offset from Base and its length.
type Prop struct {
	Off uint32
	Len uint32
}

// Cells are a parent's #address-cells and #size-cells, which give the format
// of its children's "reg".
type Cells struct {
	Addr, Size uint32
}

// defaultCells are the values a node without the properties has (spec 2.3.5).
var defaultCells = Cells{Addr: 2, Size: 1}

// Open validates the header of the blob at addr, of which limit bytes may
// be read, and the bounds of its blocks.
func Open(addr, limit uintptr) (FDT, Error) {
	var f FDT
	if addr == 0 {
		return f, ErrNoBlob
	}
	if limit < hdrLen {
		return f, ErrTruncated
	}
	f.Base = addr
	f.TotalSize = hdrLen // so the header reads below are in bounds
	if f.u32(0) != Magic {
		return f, ErrMagic
	}
	total := f.u32(4)
	offStruct, offStr := f.u32(8), f.u32(12)
	version, lastComp := f.u32(20), f.u32(24)
	sizeStr, sizeStruct := f.u32(32), f.u32(36)
	if version < minVers || lastComp > maxComp {
		return f, ErrVersion
	}
	if total < hdrLen {
		return f, ErrHeader
	}
	if uintptr(total) > limit {
		return f, ErrTruncated
	}
	if version < 17 { // no size_dt_struct before version 17
		if offStruct > total {
			return f, ErrHeader
		}
		sizeStruct = total - offStruct
	}
	if offStruct < hdrLen || offStruct%4 != 0 || sizeStruct < 4 || sizeStruct%4 != 0 ||
		offStruct > total || sizeStruct > total-offStruct ||
		offStr < hdrLen || offStr > total || sizeStr > total-offStr {
		return f, ErrHeader
	}
	f.TotalSize = total
	f.structOff, f.structSize = offStruct, sizeStruct
	f.strOff, f.strSize = offStr, sizeStr
	return f, OK
}

// u8 reads the byte at offset o, or 0 past the blob (callers check bounds
// first; this is the last line of defence).
func (f *FDT) u8(o uint32) uint8 {
	if o >= f.TotalSize {
		return 0
	}
	return *at[uint8](f.Base + uintptr(o))
}

// u32 reads a big-endian word at offset o.
func (f *FDT) u32(o uint32) uint32 {
	return uint32(f.u8(o))<<24 | uint32(f.u8(o+1))<<16 | uint32(f.u8(o+2))<<8 | uint32(f.u8(o+3))
}

// token reads the token at structure offset off (4-aligned) and returns it
// with the offset of the token after it.
func (f *FDT) token(off uint32) (tok, next uint32, e Error) {
	if off%4 != 0 || off > f.structSize-4 {
		return 0, 0, ErrStructure
	}
	tok = f.u32(f.structOff + off)
	switch tok {
	case tokBeginNode:
		n, ok := f.strlen(f.structOff+off+4, f.structOff+f.structSize)
		if !ok {
			return 0, 0, ErrStructure
		}
		return tok, align4(off + 4 + n + 1), OK
	case tokProp:
		if f.structSize-off < 12 {
			return 0, 0, ErrStructure
		}
		l := f.u32(f.structOff + off + 4)
		if l > f.structSize-off-12 {
			return 0, 0, ErrStructure
		}
		return tok, align4(off + 12 + l), OK
	case tokEndNode, tokNop, tokEnd:
		return tok, off + 4, OK
	}
	return 0, 0, ErrStructure
}

func align4(o uint32) uint32 { return (o + 3) &^ 3 }

// strlen is the length of the NUL-terminated string at offset o that must
// end before offset end.
func (f *FDT) strlen(o, end uint32) (uint32, bool) {
	for p := o; p < end; p++ {
		if f.u8(p) == 0 {
			return p - o, true
		}
	}
	return 0, false
}

// Root is the root node: the first token of the structure block, after any
// NOPs.
func (f *FDT) Root() (Node, Error) {
	for off := uint32(0); ; {
		tok, next, e := f.token(off)
		if e != OK {
			return 0, e
		}
		switch tok {
		case tokBeginNode:
			return Node(off), OK
		case tokNop:
			off = next
		default:
			return 0, ErrStructure
		}
	}
}

// name returns the offset and length of node n's name (the root's is empty).
func (f *FDT) name(n Node) (uint32, uint32) {
	o := f.structOff + uint32(n) + 4
	l, _ := f.strlen(o, f.structOff+f.structSize)
	return o, l
}

// NameIs reports whether node n's name is s, or, if s has no unit address
// ("memory"), whether its name without the unit address is s.
func (f *FDT) NameIs(n Node, s string) bool {
	o, l := f.name(n)
	if hasAt(s) {
		return f.equal(o, l, s)
	}
	for i := uint32(0); i < l; i++ {
		if f.u8(o+i) == '@' {
			l = i
			break
		}
	}
	return f.equal(o, l, s)
}

// Name copies node n's name into buf and returns its length (which may
// exceed len(buf)).
func (f *FDT) Name(n Node, buf []byte) int {
	o, l := f.name(n)
	for i := uint32(0); i < l && int(i) < len(buf); i++ {
		buf[i] = f.u8(o + i)
	}
	return int(l)
}

func hasAt(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '@' {
			return true
		}
	}
	return false
}

// equal compares the l bytes at offset o with s.
func (f *FDT) equal(o, l uint32, s string) bool {
	if uint32(len(s)) != l || len(s) != int(l) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if f.u8(o+uint32(i)) != s[i] {
			return false
		}
	}
	return true
}

// Prop finds node n's property called name. Properties precede a node's
// children, so the search stops at the first child or the node's end.
func (f *FDT) Prop(n Node, name string) (Prop, Error) {
	tok, off, e := f.token(uint32(n))
	if e != OK {
		return Prop{}, e
	}
	if tok != tokBeginNode {
		return Prop{}, ErrStructure
	}
	for {
		tok, next, e := f.token(off)
		if e != OK {
			return Prop{}, e
		}
		switch tok {
		case tokProp:
			if f.propNameIs(f.u32(f.structOff+off+8), name) {
				return Prop{Off: f.structOff + off + 12, Len: f.u32(f.structOff + off + 4)}, OK
			}
		case tokNop:
		default:
			return Prop{}, ErrNotFound
		}
		off = next
	}
}

// propNameIs compares the string at nameoff in the strings block with s.
func (f *FDT) propNameIs(nameoff uint32, s string) bool {
	if nameoff >= f.strSize {
		return false
	}
	o := f.strOff + nameoff
	l, ok := f.strlen(o, f.strOff+f.strSize)
	return ok && f.equal(o, l, s)
}

// U32 is the i-th big-endian cell of p.
func (f *FDT) U32(p Prop, i int) (uint32, Error) {
	if i < 0 || uint64(i)*4+4 > uint64(p.Len) {
		return 0, ErrValue
	}
	return f.u32(p.Off + uint32(i)*4), OK
}

// Cells reads n (0 to 2) cells of p from cell index i as one number.
func (f *FDT) Cells(p Prop, i int, n uint32) (uint64, Error) {
	if n > 2 {
		return 0, ErrCells
	}
	var v uint64
	for k := 0; k < int(n); k++ {
		c, e := f.U32(p, i+k)
		if e != OK {
			return 0, e
		}
		v = v<<32 | uint64(c)
	}
	return v, OK
}

// StringIs reports whether p is exactly the NUL-terminated string s.
func (f *FDT) StringIs(p Prop, s string) bool {
	return p.Len == uint32(len(s))+1 && f.u8(p.Off+p.Len-1) == 0 && f.equal(p.Off, p.Len-1, s)
}

// HasString reports whether the string list p (like "compatible") holds s.
func (f *FDT) HasString(p Prop, s string) bool {
	for o, end := p.Off, p.Off+p.Len; o < end; {
		l, ok := f.strlen(o, end)
		if !ok {
			return false
		}
		if f.equal(o, l, s) {
			return true
		}
		o += l + 1
	}
	return false
}

// Compatible reports whether node n's "compatible" list holds s.
func (f *FDT) Compatible(n Node, s string) bool {
	p, e := f.Prop(n, "compatible")
	return e == OK && f.HasString(p, s)
}

// Okay reports whether node n is enabled: no "status", or "okay"/"ok".
func (f *FDT) Okay(n Node) bool {
	p, e := f.Prop(n, "status")
	return e != OK || f.StringIs(p, "okay") || f.StringIs(p, "ok")
}

// Iter walks the nodes in document order and keeps, for each level of the
// path to the current node, the #address-cells and #size-cells in force.
// It is a plain value: keep it on the stack.
type Iter struct {
	off   uint32
	depth int
	done  bool
	root  bool                // the root has begun; a second one is an error
	cells [MaxDepth + 1]Cells // cells[d]: those node at depth d gives its children
	nodes [MaxDepth + 1]Node  // nodes[d]: the node at depth d on the current path
}

// Depth is the depth of the node Next returned last (the root is 1).
func (it *Iter) Depth() int { return it.depth }

// Parent is the #address-cells/#size-cells of the parent of the node Next
// returned last: the format of its "reg" (the defaults before the first
// Next or after the last).
func (it *Iter) Parent() Cells {
	if it.depth == 0 {
		return defaultCells
	}
	return it.cells[it.depth-1]
}

// Node is the node Next returned last.
func (it *Iter) Node() Node { return it.nodes[it.depth] }

// Walk starts an iteration at the root.
func (f *FDT) Walk() Iter {
	return Iter{cells: [MaxDepth + 1]Cells{0: defaultCells}}
}

// Next returns the next node in document order, or ErrNotFound after the
// last one.
func (f *FDT) Next(it *Iter) (Node, Error) {
	if it.done {
		return 0, ErrNotFound
	}
	for {
		tok, next, e := f.token(it.off)
		if e != OK {
			return 0, e
		}
		off := it.off
		it.off = next
		switch tok {
		case tokBeginNode:
			if it.depth == 0 {
				if it.root {
					return 0, ErrStructure // a second root
				}
				it.root = true
			}
			if it.depth >= MaxDepth {
				return 0, ErrDepth
			}
			it.depth++
			n := Node(off)
			c := defaultCells
			if p, e := f.Prop(n, "#address-cells"); e == OK {
				if c.Addr, e = f.U32(p, 0); e != OK {
					return 0, e
				}
			}
			if p, e := f.Prop(n, "#size-cells"); e == OK {
				if c.Size, e = f.U32(p, 0); e != OK {
					return 0, e
				}
			}
			it.cells[it.depth] = c
			it.nodes[it.depth] = n
			return n, OK
		case tokEndNode:
			if it.depth == 0 {
				return 0, ErrStructure
			}
			it.depth--
		case tokEnd:
			if it.depth != 0 {
				return 0, ErrStructure
			}
			it.done = true
			return 0, ErrNotFound
		}
	}
}

// Find returns the node at path ("/", "/cpus", "/memory@40000000"; a
// component without a unit address matches the first node with that base
// name) and its parent's cells.
func (f *FDT) Find(path string) (Node, Cells, Error) {
	it, e := f.FindIter(path)
	if e != OK {
		return 0, Cells{}, e
	}
	return it.Node(), it.Parent(), OK
}

// FindIter is Find returning the walk stopped at the node, for RegAt and
// for walking on from there.
func (f *FDT) FindIter(path string) (Iter, Error) {
	if len(path) == 0 || path[0] != '/' {
		return Iter{}, ErrNotFound
	}
	want := components(path)
	it := f.Walk()
	matched := 0 // components matched along the path to the current node
	for {
		n, e := f.Next(&it)
		if e != OK {
			return Iter{}, e
		}
		d := it.Depth()
		if d == 1 {
			if want == 0 {
				return it, OK
			}
			continue
		}
		if matched > d-2 {
			matched = d - 2
		}
		if matched == d-2 && f.NameIs(n, component(path, matched)) {
			matched++
			if matched == want {
				return it, OK
			}
		}
	}
}

// components counts the non-empty components of path.
func components(path string) int {
	n := 0
	for i := 0; i < len(path); i++ {
		if path[i] != '/' && (i == 0 || path[i-1] == '/') {
			n++
		}
	}
	return n
}

// component is the k-th non-empty component of path.
func component(path string, k int) string {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' || (i > 0 && path[i-1] != '/') {
			continue
		}
		j := i
		for j < len(path) && path[j] != '/' {
			j++
		}
		if k == 0 {
			return path[i:j]
		}
		k--
	}
	return ""
}

// FindCompatible continues the walk it to the next enabled node whose
// "compatible" holds s.
func (f *FDT) FindCompatible(it *Iter, s string) (Node, Error) {
	for {
		n, e := f.Next(it)
		if e != OK {
			return 0, e
		}
		if f.Compatible(n, s) && f.Okay(n) {
			return n, OK
		}
	}
}

// Reg is the i-th (address, size) pair of node n's "reg", in the format of
// its parent's cells c. ErrNotFound means there is no i-th entry.
func (f *FDT) Reg(n Node, c Cells, i int) (addr, size uint64, e Error) {
	if c.Addr > 2 || c.Size > 2 {
		return 0, 0, ErrCells
	}
	p, e := f.Prop(n, "reg")
	if e != OK {
		return 0, 0, e
	}
	w := c.Addr + c.Size
	if w == 0 || p.Len%(4*w) != 0 {
		return 0, 0, ErrValue
	}
	if i < 0 || uint64(i) >= uint64(p.Len/(4*w)) {
		return 0, 0, ErrNotFound
	}
	k := i * int(w)
	if addr, e = f.Cells(p, k, c.Addr); e != OK {
		return 0, 0, e
	}
	size, e = f.Cells(p, k+int(c.Addr), c.Size)
	return addr, size, e
}

// RegAt is the i-th (address, size) pair of the "reg" of the node the walk
// it stopped at (Next, FindCompatible, FindIter), with the address
// translated through every ancestor bus's "ranges" into a CPU physical
// address (spec 2.3.8). An ancestor below the root without "ranges" makes
// the address untranslatable: ErrNotFound.
func (f *FDT) RegAt(it *Iter, i int) (addr, size uint64, e Error) {
	if it.depth == 0 {
		return 0, 0, ErrNotFound
	}
	if addr, size, e = f.Reg(it.Node(), it.Parent(), i); e != OK {
		return 0, 0, e
	}
	for d := it.depth - 1; d >= 2; d-- {
		if addr, e = f.translate(it.nodes[d], it.cells[d], it.cells[d-1], addr, size); e != OK {
			return 0, 0, e
		}
	}
	return addr, size, OK
}

// translate maps addr (of a range of size bytes) in bus node b's child
// address space (cells child) to its parent's (cells parent) through b's
// "ranges": <child-address parent-address size> triples; empty means
// identity.
func (f *FDT) translate(b Node, child, parent Cells, addr, size uint64) (uint64, Error) {
	p, e := f.Prop(b, "ranges")
	if e != OK {
		return 0, e
	}
	if p.Len == 0 {
		return addr, OK
	}
	if child.Addr > 2 || parent.Addr > 2 || child.Size > 2 {
		return 0, ErrCells
	}
	w := child.Addr + parent.Addr + child.Size
	if w == 0 || p.Len%(4*w) != 0 {
		return 0, ErrValue
	}
	for k := 0; k < int(p.Len/(4*w)); k++ {
		base := k * int(w)
		cb, _ := f.Cells(p, base, child.Addr)
		pb, _ := f.Cells(p, base+int(child.Addr), parent.Addr)
		n, _ := f.Cells(p, base+int(child.Addr+parent.Addr), child.Size)
		if addr >= cb && addr-cb < n && size <= n-(addr-cb) {
			return pb + (addr - cb), OK
		}
	}
	return 0, ErrNotFound
}

// at converts an address to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
