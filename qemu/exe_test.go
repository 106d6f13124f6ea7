package qemu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExeShare: Run gives an ELF's machine its image file for
// /proc/self/exe — a hard link in a private directory shared read-only at
// /yolk/exe, named by yolk.exe — and nothing where it cannot.
func TestExeShare(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "app.elf")
	if err := os.WriteFile(img, []byte("\x7fELF image"), 0o755); err != nil {
		t.Fatal(err)
	}
	user := Share{HostDir: dir, GuestPath: "/data"}
	c := Config{Image: img, Machine: "microvm", Env: []string{"A=1"}, Shares: []Share{user}}
	given := c.Shares
	cleanup, err := exeShare(&c)
	if err != nil {
		t.Fatal(err)
	}
	if len(given) != 1 || len(c.Shares) != 2 || c.Shares[0] != user {
		t.Fatalf("shares %+v, want the user's then the image's", c.Shares)
	}
	sh := c.Shares[1]
	if sh.GuestPath != "/yolk/exe" || !sh.ReadOnly || sh.HostDir == dir || !strings.HasPrefix(filepath.Base(sh.HostDir), "yolk-exe-") {
		t.Errorf("the image's share %+v: want a private directory, read-only at /yolk/exe", sh)
	}
	if !slices.Equal(c.Env, []string{"A=1", "yolk.exe=/yolk/exe/app.elf"}) {
		t.Errorf("env %q", c.Env)
	}
	names, _ := os.ReadDir(sh.HostDir)
	a, _ := os.Stat(img)
	b, err := os.Stat(filepath.Join(sh.HostDir, "app.elf"))
	if len(names) != 1 || err != nil || !os.SameFile(a, b) {
		t.Errorf("the private directory holds %v (stat %v): want only a hard link to the image", names, err)
	}
	args, err := QEMUArgs(c)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{
		"-append A=1 yolk.exe=/yolk/exe/app.elf yolk.share=yolk0:/data yolk.share=yolk1:/yolk/exe --",
		"-fsdev local,id=fs1,path=" + sh.HostDir + ",security_model=none,readonly=on -device virtio-9p-device,fsdev=fs1,mount_tag=yolk1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("arguments lack %q:\n%s", want, got)
		}
	}
	cleanup()
	if _, err := os.Stat(sh.HostDir); !os.IsNotExist(err) {
		t.Errorf("after cleanup: %v, want the private directory gone", err)
	}
	if _, err := os.Stat(img); err != nil {
		t.Errorf("the image after cleanup: %v", err)
	}

	// A name the command line would have to quote is "exe".
	odd := filepath.Join(dir, "my app.elf")
	os.WriteFile(odd, []byte("x"), 0o755)
	c = Config{Image: odd}
	cleanup, err = exeShare(&c)
	if err != nil || !slices.Equal(c.Env, []string{"yolk.exe=/yolk/exe/exe"}) {
		t.Errorf("image %q: env %q, %v", odd, c.Env, err)
	}
	cleanup()

	// Where it cannot: a board, four shares, a share at or around
	// /yolk/exe.
	four := []Share{user, {dir, "/b", false}, {dir, "/c", false}, {dir, "/d", false}}
	for _, c := range []Config{
		{Image: img, Board: "rpi3"},
		{Image: img, Board: "pc"},
		{Image: img, Shares: four},
		{Image: img, Shares: []Share{{dir, "/yolk/exe", false}}},
		{Image: img, Shares: []Share{{dir, "/yolk", false}}},
		{Image: img, Shares: []Share{{dir, "/yolk/exe/x", false}}},
	} {
		before := len(c.Shares)
		cleanup, err := exeShare(&c)
		cleanup()
		if err != nil || len(c.Shares) != before || len(c.Env) != 0 {
			t.Errorf("board %q shares %+v: %v, env %q; want nothing given", c.Board, c.Shares, err, c.Env)
		}
	}
}

// TestLinkOrCopy: a copy where a hard link cannot be made.
func TestLinkOrCopy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "img")
	os.WriteFile(src, []byte("image bytes"), 0o755)
	// A link onto an existing name fails; the copy then fails too (O_EXCL).
	dst := filepath.Join(dir, "taken")
	os.WriteFile(dst, nil, 0o644)
	if err := linkOrCopy(src, dst); err == nil {
		t.Errorf("linkOrCopy onto an existing file succeeded")
	}
	// /proc's files cannot be linked from: the copy is taken.
	dst = filepath.Join(dir, "copy")
	if err := linkOrCopy("/proc/self/cmdline", dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); len(b) == 0 {
		t.Errorf("the copy is empty")
	}
}
