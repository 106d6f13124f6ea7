package fs

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestBindSocket: a socket node records the ID bind gave it, through
// links and renames; an existing path is EADDRINUSE; connect's lookup is
// ENOENT for nothing there and ECONNREFUSED for something not a socket.
func TestBindSocket(t *testing.T) {
	f, _ := newFS(t, 64, 64)
	must(t, "mkdir", f.Mkdir(AtCWD, b("/d"), 0o755))
	must(t, "bind", f.BindSocket(AtCWD, b("/d/s"), 0o777, 42))
	wantErr(t, "bind again", f.BindSocket(AtCWD, b("/d/s"), 0o777, 43), unix.EADDRINUSE)
	wantErr(t, "bind in a missing directory", f.BindSocket(AtCWD, b("/x/s"), 0o777, 43), unix.ENOENT)
	st := stat(t, f, "/d/s")
	if st.Mode != unix.S_IFSOCK|0o755 || st.Rdev != 0 {
		t.Errorf("socket node: mode %#o rdev %d, want %#o and 0", st.Mode, st.Rdev, unix.S_IFSOCK|0o755)
	}
	must(t, "link", f.Link(AtCWD, b("/d/s"), AtCWD, b("/d/t"), 0))
	must(t, "rename", f.Rename(AtCWD, b("/d/s"), AtCWD, b("/u"), 0))
	must(t, "symlink", f.Symlink(b("/u"), AtCWD, b("/l")))
	for _, p := range []string{"/u", "/d/t", "/l", "d/t"} {
		if id, e := f.SocketAt(AtCWD, b(p)); e != 0 || id != 42 {
			t.Errorf("SocketAt(%s) = %d, %v; want 42", p, id, e)
		}
	}
	if _, e := f.SocketAt(AtCWD, b("/d/s")); e != unix.ENOENT {
		t.Errorf("SocketAt(renamed away) = %v, want ENOENT", e)
	}
	if _, e := f.SocketAt(AtCWD, b("/d")); e != unix.ECONNREFUSED {
		t.Errorf("SocketAt(directory) = %v, want ECONNREFUSED", e)
	}
	must(t, "mknod", f.Mknod(AtCWD, b("/m"), unix.S_IFSOCK|0o600, 0))
	if id, e := f.SocketAt(AtCWD, b("/m")); e != 0 || id != 0 {
		t.Errorf("SocketAt(mknod'ed node) = %d, %v; want 0", id, e)
	}
	if _, e := f.Open(AtCWD, b("/u"), unix.O_RDONLY, 0); e != unix.ENXIO {
		t.Errorf("open(socket) = %v, want ENXIO", e)
	}
}
