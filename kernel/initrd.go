package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
	"yolk/kernel/mm"
)

// The boot module (QEMU -initrd): a ustar archive of files the program
// should find in its file system, as `yolk test` passes a package's
// directory and testdata. It is unpacked into the in-memory file system at
// boot with the modes and modification times the archive gives, every
// tree it creates is made read-only (directories that exist already, such
// as /tmp and /etc, stay as they are), a file or link entry replaces a
// file that exists (as tar does: the archive's /etc/hosts wins over the
// one etc.go makes), and the module's frames go to
// the allocator. yolk.cwd=PATH makes PATH the working directory.
//
// Only what a test tree holds is understood: directories, regular files
// and symbolic links ('5', '0' or NUL, '2'), names up to ustar's 100-byte
// name plus 155-byte prefix. Anything else is reported once and skipped.

var (
	cwdPath [fs.PathMax]byte
	cwdLen  int
	pathBuf [fs.PathMax + 2]byte
	linkBuf [101]byte
)

// unpackInitrd unpacks the archive at physical address pa, n bytes.
func unpackInitrd(pa, n uintptr) {
	if n != 0 {
		a := bytesAt(mm.Phys(pa), int(n))
		files, bytes, bad := untar(a)
		klog("initrd: ")
		kprintDec(int64(files))
		kprint(" entries, ")
		kprintDec(int64(bytes >> 10))
		kprint(" KiB")
		if bad != 0 {
			kprint(", ")
			kprintDec(int64(bad))
			kprint(" skipped")
		}
		kprint("\n")
		mm.FreeModule(pa, n)
	}
	if cwdLen != 0 && shares.MountOf(cwdPath[:cwdLen]) < 0 { // on a share: shareStarted
		if e := vfs.Chdir(fs.AtCWD, cwdPath[:cwdLen]); e != 0 {
			klog("yolk.cwd: cannot change to ")
			kprintBytes(cwdPath[:cwdLen])
			kprint(": errno ")
			kprintDec(int64(e))
			kprint("\n")
		}
	}
}

// untar unpacks a ustar archive into vfs and returns the entries made, the
// file bytes written and the entries skipped.
func untar(a []byte) (made int, written int64, bad int) {
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
		p := tarPath(h)
		mode := uint32(octal(h[100:108])) & 0o7777
		mtime := octal(h[136:148]) * 1e9
		data := a[512 : 512+size]
		// Directories that exist already (/, /tmp: the archive names a
		// path's every parent) keep their mode and stay writable.
		var st unix.Stat_t
		existed := h[156] == '5' && vfs.Stat(fs.AtCWD, p, 0, &st) == 0
		var e fs.Errno
		switch h[156] {
		case '5':
			e = vfs.Mkdir(fs.AtCWD, p, mode)
			if e == unix.EEXIST { // a parent made earlier
				e = 0
			}
		case '0', 0:
			vfs.Unlink(fs.AtCWD, p, 0) // the entry replaces a file made at boot (/etc's)
			e = writeFile(p, data, mode)
			written += size
		case '2':
			vfs.Unlink(fs.AtCWD, p, 0)
			l := copy(linkBuf[:], untilNUL(h[157:257]))
			e = vfs.Symlink(linkBuf[:l], fs.AtCWD, p)
		default:
			bad++
			a = a[512+body:]
			continue
		}
		if e == 0 && h[156] != '2' && !existed {
			vfs.Utimes(fs.AtCWD, p, mtime, mtime, 0)
		}
		if e != 0 {
			klog("initrd: ")
			kprintBytes(p)
			kprint(": errno ")
			kprintDec(int64(e))
			kprint("\n")
			bad++
		} else {
			made++
			if !existed {
				markReadOnly(p)
			}
		}
		a = a[512+body:]
	}
	for i := 0; i < nReadOnly; i++ {
		vfs.SetReadOnly(fs.AtCWD, readOnlyTops[i][:readOnlyLen[i]])
	}
	return made, written, bad
}

// The top-level trees the archive filled, made read-only once it is
// unpacked (a tree made read-only at once could not be filled).
var (
	readOnlyTops [8][256]byte
	readOnlyLen  [8]int
	nReadOnly    int
)

// markReadOnly remembers p, which the archive created, as the top of a
// read-only tree unless it is inside one already: the shallowest path the
// archive made, so a tree unpacked under /tmp leaves /tmp writable.
func markReadOnly(top []byte) {
	for i := 0; i < nReadOnly; i++ {
		t := readOnlyTops[i][:readOnlyLen[i]]
		if string(t) == string(top) || len(top) > len(t) && string(top[:len(t)]) == string(t) && top[len(t)] == '/' {
			return
		}
	}
	if nReadOnly < len(readOnlyTops) && len(top) <= len(readOnlyTops[0]) {
		readOnlyLen[nReadOnly] = copy(readOnlyTops[nReadOnly][:], top)
		nReadOnly++
	}
}

func writeFile(p, data []byte, mode uint32) fs.Errno {
	h, e := vfs.Open(fs.AtCWD, p, 0o1|0o100|0o1000, mode) // O_WRONLY|O_CREAT|O_TRUNC
	if e != 0 {
		return e
	}
	for len(data) > 0 {
		n, e := vfs.Write(h, data)
		if e != 0 {
			vfs.Close(h)
			return e
		}
		data = data[n:]
	}
	return vfs.Close(h)
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

// tarPath is "/" + prefix + "/" + name, in pathBuf, without a trailing
// slash.
func tarPath(h []byte) []byte {
	n := 0
	pathBuf[n] = '/'
	n++
	if pre := untilNUL(h[345:500]); len(pre) > 0 {
		n += copy(pathBuf[n:], trimSlash(pre))
		pathBuf[n] = '/'
		n++
	}
	n += copy(pathBuf[n:], trimSlash(untilNUL(h[0:100])))
	for n > 1 && pathBuf[n-1] == '/' {
		n--
	}
	return pathBuf[:n]
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
