package image

import (
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
)

// Symbolizer maps program counters of an image to Go functions and source
// lines, from the image's own .gopclntab (debug/gosym).
type Symbolizer struct {
	tab *gosym.Table
}

// OpenSymbolizer reads the Go line table of the ELF image at path.
func OpenSymbolizer(path string) (*Symbolizer, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return newSymbolizer(f)
}

func newSymbolizer(f *elf.File) (*Symbolizer, error) {
	tab, err := GoTable(f)
	if err != nil {
		return nil, err
	}
	return &Symbolizer{tab: tab}, nil
}

// GoTable is the Go symbol and line table of Go ELF image f, from its
// .gopclntab (and .gosymtab, if any), based at runtime.text.
func GoTable(f *elf.File) (*gosym.Table, error) {
	pcln := f.Section(".gopclntab")
	if pcln == nil {
		return nil, errors.New("no .gopclntab section (not a Go image?)")
	}
	pclndata, err := pcln.Data()
	if err != nil {
		return nil, err
	}
	text := f.Section(".text")
	if text == nil {
		return nil, errors.New("no .text section")
	}
	textStart := text.Addr
	// NewLineTable wants runtime.text, which equals the start of .text
	// unless the image was linked externally.
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				textStart = s.Value
				break
			}
		}
	}
	var symtab []byte
	if s := f.Section(".gosymtab"); s != nil {
		if symtab, err = s.Data(); err != nil {
			return nil, err
		}
	}
	return gosym.NewTable(symtab, gosym.NewLineTable(pclndata, textStart))

}

// Frame describes one symbolized program counter.
type Frame struct {
	PC     uint64
	Func   string // fully qualified Go function name
	Offset uint64 // PC - function entry
	File   string
	Line   int
}

// String formats the frame as "pkg.Func+0xNN file.go:LINE".
func (fr Frame) String() string {
	return fmt.Sprintf("%s+%#x %s:%d", fr.Func, fr.Offset, fr.File, fr.Line)
}

// Lookup symbolizes pc. A frame other than the innermost one holds a return
// address, which may already belong to the next source line or even the next
// function; for those (first == false) the function and line are those of
// pc-1, the call instruction. Offset is always pc minus the function entry.
func (s *Symbolizer) Lookup(pc uint64, first bool) (Frame, bool) {
	q := pc
	if !first && q > 0 {
		q--
	}
	file, line, fn := s.tab.PCToLine(q)
	if fn == nil {
		return Frame{PC: pc}, false
	}
	return Frame{PC: pc, Func: fn.Name, Offset: pc - fn.Entry, File: file, Line: line}, true
}
