package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// A reader of the CPU profile runtime/pprof writes (profile.proto,
// gzipped), enough for testCPUProfile: each sample's count, stack and
// "prof" label.

type profSample struct {
	count int
	stack []string // function names, leaf first
	label string   // the value of label "prof"
}

// parseProfile reads a gzipped profile.proto: samples' first value, and
// their locations' function names.
func parseProfile(gz []byte) ([]profSample, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	type rawSample struct {
		locs, vals []uint64
		key, str   uint64 // the last label's string indexes
	}
	var raw []rawSample
	locFuncs := map[uint64][]uint64{}
	funcName := map[uint64]uint64{}
	var strs []string
	err = protoFields(b, func(f int, v uint64, sub []byte) error {
		switch f {
		case 2: // sample
			var s rawSample
			err := protoFields(sub, func(f int, v uint64, sub []byte) error {
				switch f {
				case 1:
					s.locs = append(s.locs, protoInts(v, sub)...)
				case 2:
					s.vals = append(s.vals, protoInts(v, sub)...)
				case 3: // label
					return protoFields(sub, func(f int, v uint64, _ []byte) error {
						switch f {
						case 1:
							s.key = v
						case 2:
							s.str = v
						}
						return nil
					})
				}
				return nil
			})
			raw = append(raw, s)
			return err
		case 4: // location
			var id uint64
			var fns []uint64
			err := protoFields(sub, func(f int, v uint64, sub []byte) error {
				switch f {
				case 1:
					id = v
				case 4: // line
					return protoFields(sub, func(f int, v uint64, _ []byte) error {
						if f == 1 {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locFuncs[id] = fns
			return err
		case 5: // function
			var id, name uint64
			err := protoFields(sub, func(f int, v uint64, _ []byte) error {
				switch f {
				case 1:
					id = v
				case 2:
					name = v
				}
				return nil
			})
			funcName[id] = name
			return err
		case 6:
			strs = append(strs, string(sub))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []profSample
	for _, r := range raw {
		if len(r.vals) == 0 {
			return nil, fmt.Errorf("a sample without values")
		}
		s := profSample{count: int(r.vals[0])}
		if r.key < uint64(len(strs)) && strs[r.key] == "prof" && r.str < uint64(len(strs)) {
			s.label = strs[r.str]
		}
		for _, l := range r.locs {
			for _, fn := range locFuncs[l] {
				if n := funcName[fn]; n < uint64(len(strs)) {
					s.stack = append(s.stack, strs[n])
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// protoFields calls fn for each field of a protobuf message: its number
// and either its varint value or its length-delimited bytes.
func protoFields(b []byte, fn func(field int, v uint64, sub []byte) error) error {
	for len(b) > 0 {
		key, n := protoVarint(b)
		if n == 0 {
			return fmt.Errorf("bad varint")
		}
		b = b[n:]
		var v uint64
		var sub []byte
		switch key & 7 {
		case 0:
			if v, n = protoVarint(b); n == 0 {
				return fmt.Errorf("bad varint")
			}
			b = b[n:]
		case 2:
			l, n := protoVarint(b)
			if n == 0 || uint64(len(b)-n) < l {
				return fmt.Errorf("bad length")
			}
			sub, b = b[n:n+int(l)], b[n+int(l):]
		case 1:
			if len(b) < 8 {
				return fmt.Errorf("short fixed64")
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return fmt.Errorf("short fixed32")
			}
			b = b[4:]
		default:
			return fmt.Errorf("wire type %d", key&7)
		}
		if err := fn(int(key>>3), v, sub); err != nil {
			return err
		}
	}
	return nil
}

func protoVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// protoInts is a repeated integer field's values: one varint, or packed.
func protoInts(v uint64, packed []byte) []uint64 {
	if packed == nil {
		return []uint64{v}
	}
	var out []uint64
	for len(packed) > 0 {
		x, n := protoVarint(packed)
		if n == 0 {
			break
		}
		out = append(out, x)
		packed = packed[n:]
	}
	return out
}
