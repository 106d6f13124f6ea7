package image

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// GCE's image upload is a gzip'd tar archive holding one file, disk.raw,
// in GNU tar's old format ("tar --format=oldgnu -Sczf", as Google's
// documentation has it). The disk is mostly holes, so the file is stored
// sparse: an 'S' header whose map lists the regions with data, and only
// those regions' bytes. Go's archive/tar reads that format but no longer
// writes it, hence this writer.

// SparseRegion is a run of a file's bytes that holds data.
type SparseRegion struct{ Offset, Length int64 }

const (
	tarBlock       = 512
	sparseInHeader = 4  // map entries in the main header
	sparseInExt    = 21 // map entries in each extension header
	dataBlock      = 4096
)

// DataRegions returns the regions of f's first size bytes that are not all
// zero, in 4 KiB blocks: the file system's holes (SEEK_DATA/SEEK_HOLE)
// are skipped without reading them, the data between them read and
// scanned.
func DataRegions(f *os.File, size int64) ([]SparseRegion, error) {
	var out []SparseRegion
	add := func(off, n int64) {
		if k := len(out) - 1; k >= 0 && out[k].Offset+out[k].Length == off {
			out[k].Length += n
			return
		}
		out = append(out, SparseRegion{off, n})
	}
	buf := make([]byte, 1<<20)
	zero := make([]byte, dataBlock)
	for off := int64(0); off < size; {
		start, err := f.Seek(off, 3) // SEEK_DATA
		if err != nil {
			start = size // ENXIO: no data after off
			if !errors.Is(err, errNXIO) {
				start = off // no SEEK_DATA: read everything
			}
		}
		if start >= size {
			break
		}
		end, err := f.Seek(start, 4) // SEEK_HOLE
		if err != nil || end > size {
			end = size
		}
		start -= start % dataBlock
		for p := start; p < end; {
			n := min(int64(len(buf)), end-p)
			m, err := f.ReadAt(buf[:n], p)
			if m == 0 && err != nil {
				return nil, err
			}
			for b := 0; b < m; b += dataBlock {
				blk := buf[b:min(b+dataBlock, m)]
				if !bytes.Equal(blk, zero[:len(blk)]) {
					add(p+int64(b), int64(len(blk)))
				}
			}
			p += int64(m)
		}
		off = end
	}
	return out, nil
}

// tarNumber writes v into field: octal digits and a NUL when they fit,
// else GNU's base-256 form (first byte 0x80, the value big-endian).
func tarNumber(field []byte, v int64) {
	s := strconv.FormatInt(v, 8)
	if len(s) < len(field) {
		pad := len(field) - 1 - len(s)
		for i := range pad {
			field[i] = '0'
		}
		copy(field[pad:], s)
		field[len(field)-1] = 0
		return
	}
	for i := len(field) - 1; i > 0; i-- {
		field[i] = byte(v)
		v >>= 8
	}
	field[0] = 0x80
}

// WriteSparseTar writes a tar archive to w holding f's first size bytes
// as the file name, in GNU tar's old sparse format: only regions' bytes
// are stored (regions sorted, not overlapping, inside size).
func WriteSparseTar(w io.Writer, name string, f io.ReaderAt, size int64, regions []SparseRegion, mtime time.Time) error {
	if len(name) > 99 {
		return fmt.Errorf("tar name %q: at most 99 bytes in the old GNU format", name)
	}
	var stored, prev int64
	for _, r := range regions {
		if r.Offset < prev || r.Length < 0 || r.Offset+r.Length > size {
			return fmt.Errorf("sparse region %d+%d out of order or past %d", r.Offset, r.Length, size)
		}
		stored += r.Length
		prev = r.Offset + r.Length
	}
	m := regions
	if prev < size || len(m) == 0 {
		// GNU tar ends the map of a file that ends in a hole with an
		// empty region at its end.
		m = append(m[:len(m):len(m)], SparseRegion{size, 0})
	}
	h := make([]byte, tarBlock)
	copy(h[0:], name)
	tarNumber(h[100:108], 0o644)
	tarNumber(h[108:116], 0)
	tarNumber(h[116:124], 0)
	tarNumber(h[124:136], stored)
	tarNumber(h[136:148], mtime.Unix())
	h[156] = 'S'
	copy(h[257:265], "ustar  \x00") // old GNU magic and version
	copy(h[265:], "root")
	copy(h[297:], "root")
	putMap := func(b []byte, rs []SparseRegion) {
		for i, r := range rs {
			tarNumber(b[i*24:i*24+12], r.Offset)
			tarNumber(b[i*24+12:i*24+24], r.Length)
		}
	}
	first := m[:min(len(m), sparseInHeader)]
	rest := m[len(first):]
	putMap(h[386:482], first)
	if len(rest) > 0 {
		h[482] = 1
	}
	tarNumber(h[483:495], size)
	copy(h[148:156], "        ")
	var sum int64
	for _, c := range h {
		sum += int64(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	if _, err := w.Write(h); err != nil {
		return err
	}
	for len(rest) > 0 {
		ext := make([]byte, tarBlock)
		chunk := rest[:min(len(rest), sparseInExt)]
		rest = rest[len(chunk):]
		putMap(ext, chunk)
		if len(rest) > 0 {
			ext[504] = 1
		}
		if _, err := w.Write(ext); err != nil {
			return err
		}
	}
	for _, r := range regions {
		if _, err := io.Copy(w, io.NewSectionReader(f, r.Offset, r.Length)); err != nil {
			return err
		}
	}
	pad := (tarBlock - stored%tarBlock) % tarBlock
	_, err := w.Write(make([]byte, pad+2*tarBlock)) // and the end of the archive
	return err
}

// WriteGCETar writes the disk image raw as GCE's upload: disk.raw in a
// gzip'd old-GNU tar, sparse.
func WriteGCETar(out, raw string) error {
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	regions, err := DataRegions(f, st.Size())
	if err != nil {
		return err
	}
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(o)
	err = WriteSparseTar(zw, "disk.raw", f, st.Size(), regions, st.ModTime())
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	return err
}
