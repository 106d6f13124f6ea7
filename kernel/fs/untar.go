package fs

import "golang.org/x/sys/unix"

// Untar unpacks a ustar archive (the kernel's boot module: QEMU -initrd,
// as `yolk test` passes a package's directory and testdata) into the file
// system, with the modes and modification times the archive gives. Every
// tree it creates is made read-only once the whole archive is in
// (directories that exist already, such as /tmp and /etc, stay as they
// are); a file or link entry replaces a file that exists (as tar does: the
// archive's /etc/hosts wins over the one the kernel made at boot).
//
// Only what a test tree holds is understood: directories, regular files
// and symbolic links ('5', '0' or NUL, '2'), names up to ustar's 100-byte
// name plus 155-byte prefix. Anything else is skipped; an entry the file
// system refuses is reported to log (TarLog) and skipped too. A header
// that is not ustar or has a bad checksum, or a body past the end, ends
// the archive (counted as one skipped).
//
// It returns the entries made, the file bytes written and the entries
// skipped. t holds its buffers (the kernel keeps one in a global: it is
// a few KiB, too much for a kernel stack).
func Untar[E Env, L TarLog](f *FS[E], t *Tar, a []byte, log L) (made int, written int64, bad int) {
	for len(a) >= 512 {
		h := a[:512]
		if h[0] == 0 {
			break // the end-of-archive blocks
		}
		size := octal(h[124:136])
		body := (size + 511) &^ 511
		if !ustar(h) || size < 0 || int64(len(a)-512) < body {
			bad++
			break
		}
		p := t.path(h)
		mode := uint32(octal(h[100:108])) & 0o7777
		mtime := octal(h[136:148]) * 1e9
		data := a[512 : 512+size]
		// Directories that exist already (/, /tmp: the archive names a
		// path's every parent) keep their mode and stay writable.
		var st unix.Stat_t
		existed := h[156] == '5' && f.Stat(AtCWD, p, 0, &st) == 0
		var e Errno
		switch h[156] {
		case '5':
			e = f.Mkdir(AtCWD, p, mode)
			if e == unix.EEXIST { // a parent made earlier
				e = 0
			}
		case '0', 0:
			f.Unlink(AtCWD, p, 0) // the entry replaces a file made at boot (/etc's)
			e = f.WriteFile(p, data, mode)
			written += size
		case '2':
			f.Unlink(AtCWD, p, 0)
			l := copy(t.link[:], untilNUL(h[157:257]))
			e = f.Symlink(t.link[:l], AtCWD, p)
		default:
			bad++
			a = a[512+body:]
			continue
		}
		if e == 0 && h[156] != '2' && !existed {
			f.Utimes(AtCWD, p, mtime, mtime, 0)
		}
		if e != 0 {
			log.Failed(p, e)
			bad++
		} else {
			made++
			if !existed {
				t.markReadOnly(p)
			}
		}
		a = a[512+body:]
	}
	for i := 0; i < t.nReadOnly; i++ {
		f.SetReadOnly(AtCWD, t.readOnlyTops[i][:t.readOnlyLen[i]])
	}
	return made, written, bad
}

// TarLog hears of an archive entry the file system refused (Untar): its
// path and the errno. In the kernel an empty struct, as Env.
type TarLog interface {
	Failed(path []byte, e Errno)
}

// Tar is Untar's state: the path and link target of the entry at hand,
// and the top-level trees the archive filled, made read-only once it is
// unpacked (a tree made read-only at once could not be filled).
type Tar struct {
	pathBuf      [PathMax + 2]byte
	link         [101]byte
	readOnlyTops [8][256]byte
	readOnlyLen  [8]int
	nReadOnly    int
}

// markReadOnly remembers top, which the archive created, as the top of a
// read-only tree unless it is inside one already: the shallowest path the
// archive made, so a tree unpacked under /tmp leaves /tmp writable.
func (t *Tar) markReadOnly(top []byte) {
	for i := 0; i < t.nReadOnly; i++ {
		r := t.readOnlyTops[i][:t.readOnlyLen[i]]
		if string(r) == string(top) || len(top) > len(r) && string(top[:len(r)]) == string(r) && top[len(r)] == '/' {
			return
		}
	}
	if t.nReadOnly < len(t.readOnlyTops) && len(top) <= len(t.readOnlyTops[0]) {
		t.readOnlyLen[t.nReadOnly] = copy(t.readOnlyTops[t.nReadOnly][:], top)
		t.nReadOnly++
	}
}

// WriteFile creates or truncates the file at path (from the working
// directory) with mode and writes data into it.
func (f *FS[E]) WriteFile(path, data []byte, mode uint32) Errno {
	h, e := f.Open(AtCWD, path, 0o1|0o100|0o1000, mode) // O_WRONLY|O_CREAT|O_TRUNC
	if e != 0 {
		return e
	}
	for len(data) > 0 {
		n, e := f.Write(h, data)
		if e != 0 {
			f.Close(h)
			return e
		}
		data = data[n:]
	}
	return f.Close(h)
}

// ustar reports whether h is a POSIX ustar header with a good checksum.
func ustar(h []byte) bool {
	if string(h[257:262]) != "ustar" {
		return false
	}
	var sum int64
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum == octal(h[148:156])
}

// path is "/" + prefix + "/" + name of header h, in t's buffer, without a
// trailing slash.
func (t *Tar) path(h []byte) []byte {
	n := 0
	t.pathBuf[n] = '/'
	n++
	if pre := untilNUL(h[345:500]); len(pre) > 0 {
		n += copy(t.pathBuf[n:], trimSlash(pre))
		t.pathBuf[n] = '/'
		n++
	}
	n += copy(t.pathBuf[n:], trimSlash(untilNUL(h[0:100])))
	for n > 1 && t.pathBuf[n-1] == '/' {
		n--
	}
	return t.pathBuf[:n]
}

func trimSlash(b []byte) []byte {
	for len(b) > 0 && b[0] == '/' {
		b = b[1:]
	}
	return b
}

// untilNUL is b up to its first NUL.
func untilNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// octal is the value of a NUL- or space-terminated octal field, -1 if it
// is not one.
func octal(b []byte) int64 {
	var v int64
	seen := false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '7':
			v = v<<3 | int64(c-'0')
			seen = true
		case c == 0 || c == ' ':
			if seen {
				return v
			}
		default:
			return -1
		}
	}
	if !seen {
		return 0
	}
	return v
}
