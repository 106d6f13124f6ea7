package gdbprof

import (
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"sort"
	"sync"
	"yolk/qemu/image"
)

// Symbolizer maps program counters of a Go ELF image (a yolk image, the
// kernel and the program linked together) to functions, files and lines:
// the functions from the image's own Go line table (.gopclntab, through
// debug/gosym), the inlined calls at a PC from its DWARF, when the image
// has any (a "go build" without -ldflags=-w).
type Symbolizer struct {
	Path           string // the image
	TextLo, TextHi uint64 // the executable range ([TextLo, TextHi))

	tab *gosym.Table
	dw  *dwarf.Data // nil: no DWARF, no inlined frames

	mu       sync.Mutex
	cuDone   map[dwarf.Offset]bool    // compile units whose inlined calls are in inl
	noCU     map[uint64]bool          // function entries no compile unit covers
	inl      map[uint64][]inlCall     // by the entry of the function they are inlined into
	origins  map[dwarf.Offset]origin  // abstract functions by offset
	startPos map[uint64]int           // functions' first lines by entry
	entries  []uint64                 // function entries, sorted (for FuncEntry)
	funcs    map[uint64]*gosym.Func   // by entry
	fileLine map[uint64]gosymPosition // cache of PCToLine
}

type gosymPosition struct {
	file string
	line int
	fn   *gosym.Func
}

// inlCall is one inlined call: the PC ranges of the inlined body, how deep
// it is nested in inlined calls (1: called by the function itself), the
// callee and the call's position.
type inlCall struct {
	ranges [][2]uint64
	depth  int
	callee origin
	file   string
	line   int
}

type origin struct {
	name string
	line int // the declaration's line, 0 if unknown
}

// Frame is one function on a symbolized stack.
type Frame struct {
	Func      string // the fully qualified Go name, e.g. "yolk/kernel.syscall"
	File      string
	Line      int
	StartLine int // the function's first line, 0 if unknown
}

// OpenSymbolizer reads the Go line table (and the DWARF, if any) of the ELF
// image at path.
func OpenSymbolizer(path string) (*Symbolizer, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := newSymbolizer(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

func newSymbolizer(f *elf.File) (*Symbolizer, error) {
	text := f.Section(".text")
	if text == nil {
		return nil, errors.New("no .text section")
	}
	tab, err := image.GoTable(f)
	if err != nil {
		return nil, err
	}
	s := &Symbolizer{
		TextLo:   text.Addr,
		TextHi:   text.Addr + text.Size,
		tab:      tab,
		cuDone:   map[dwarf.Offset]bool{},
		noCU:     map[uint64]bool{},
		inl:      map[uint64][]inlCall{},
		origins:  map[dwarf.Offset]origin{},
		startPos: map[uint64]int{},
		funcs:    map[uint64]*gosym.Func{},
		fileLine: map[uint64]gosymPosition{},
	}
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		s.entries = append(s.entries, fn.Entry)
		s.funcs[fn.Entry] = fn
		if fn.End > s.TextHi {
			s.TextHi = fn.End
		}
	}
	sort.Slice(s.entries, func(i, j int) bool { return s.entries[i] < s.entries[j] })
	if f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil {
		if dw, err := f.DWARF(); err == nil {
			s.dw = dw
		}
	}
	return s, nil
}

// HasInlines reports whether the image has the DWARF that Frames reads
// inlined calls from.
func (s *Symbolizer) HasInlines() bool { return s.dw != nil }

func (s *Symbolizer) pcToLine(pc uint64) gosymPosition {
	if p, ok := s.fileLine[pc]; ok {
		return p
	}
	file, line, fn := s.tab.PCToLine(pc)
	p := gosymPosition{file, line, fn}
	s.fileLine[pc] = p
	return p
}

// FuncEntry returns the entry address of the function holding pc.
func (s *Symbolizer) FuncEntry(pc uint64) (uint64, bool) {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i] > pc }) - 1
	if i < 0 {
		return 0, false
	}
	fn := s.funcs[s.entries[i]]
	if pc >= fn.End {
		return 0, false
	}
	return fn.Entry, true
}

// Frames symbolizes pc: the functions at pc, innermost (inlined) first,
// the function the code belongs to last; nil when pc is in no function.
// A return address is looked up as the address before it (the call).
func (s *Symbolizer) Frames(pc uint64) []Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pcToLine(pc)
	if p.fn == nil {
		return nil
	}
	fn := p.fn
	outer := Frame{Func: fn.Name, StartLine: s.startLine(fn)}
	calls := s.inlinedAt(fn.Entry, pc)
	if len(calls) == 0 {
		outer.File, outer.Line = p.file, p.line
		return []Frame{outer}
	}
	frames := make([]Frame, 0, len(calls)+1)
	// The innermost callee is where pc is: the line table's position.
	in := calls[len(calls)-1].callee
	frames = append(frames, Frame{Func: in.name, File: p.file, Line: p.line, StartLine: in.line})
	for i := len(calls) - 1; i >= 0; i-- {
		caller := outer
		if i > 0 {
			caller = Frame{Func: calls[i-1].callee.name, StartLine: calls[i-1].callee.line}
		}
		caller.File, caller.Line = calls[i].file, calls[i].line
		frames = append(frames, caller)
	}
	return frames
}

// startLine is the line of the function's entry (its declaration, give or
// take the prologue's position).
func (s *Symbolizer) startLine(fn *gosym.Func) int {
	if l, ok := s.startPos[fn.Entry]; ok {
		return l
	}
	_, l, _ := s.tab.PCToLine(fn.Entry)
	s.startPos[fn.Entry] = l
	return l
}

// inlinedAt returns the calls inlined into the function at entry that pc
// is in, outermost first.
func (s *Symbolizer) inlinedAt(entry, pc uint64) []inlCall {
	if s.dw == nil {
		return nil
	}
	if _, ok := s.inl[entry]; !ok && !s.noCU[entry] {
		s.readCU(entry)
	}
	var chain []inlCall
	for _, c := range s.inl[entry] {
		if c.depth != len(chain)+1 {
			continue
		}
		for _, r := range c.ranges {
			if r[0] <= pc && pc < r[1] {
				chain = append(chain, c)
				break
			}
		}
	}
	return chain
}

// readCU reads the inlined calls of every function of the compile unit
// holding entry into s.inl.
func (s *Symbolizer) readCU(entry uint64) {
	r := s.dw.Reader()
	cu, err := r.SeekPC(entry)
	if err != nil || cu == nil || s.cuDone[cu.Offset] {
		s.noCU[entry] = true
		return
	}
	s.cuDone[cu.Offset] = true
	var files []*dwarf.LineFile
	if lr, err := s.dw.LineReader(cu); err == nil && lr != nil {
		files = lr.Files()
	}
	type level struct {
		fn    uint64 // the concrete function's entry, 0 outside one
		depth int    // inlined-call nesting
	}
	stack := []level{{}} // the compile unit's children are at level 1
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		cur := stack[len(stack)-1]
		switch e.Tag {
		case dwarf.TagSubprogram:
			cur = level{}
			if lo, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
				cur.fn = lo
				if _, ok := s.inl[lo]; !ok {
					s.inl[lo] = nil
				}
			}
		case dwarf.TagInlinedSubroutine:
			if cur.fn == 0 {
				break
			}
			ranges, err := s.dw.Ranges(e)
			if err != nil {
				break
			}
			cur.depth++
			c := inlCall{ranges: ranges, depth: cur.depth}
			if off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
				c.callee = s.origin(off)
			}
			if c.callee.name == "" {
				c.callee.name = "?"
			}
			if i, ok := e.Val(dwarf.AttrCallFile).(int64); ok && i >= 0 && int(i) < len(files) && files[i] != nil {
				c.file = files[i].Name
			}
			if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
				c.line = int(l)
			}
			s.inl[cur.fn] = append(s.inl[cur.fn], c)
		}
		if e.Children {
			stack = append(stack, cur)
		}
	}
	if _, ok := s.inl[entry]; !ok {
		s.noCU[entry] = true
	}
}

// origin reads the name and line of the abstract function at off.
func (s *Symbolizer) origin(off dwarf.Offset) origin {
	if o, ok := s.origins[off]; ok {
		return o
	}
	var o origin
	r := s.dw.Reader()
	r.Seek(off)
	if e, err := r.Next(); err == nil && e != nil {
		o.name, _ = e.Val(dwarf.AttrName).(string)
		if l, ok := e.Val(dwarf.AttrDeclLine).(int64); ok {
			o.line = int(l)
		}
	}
	s.origins[off] = o
	return o
}
