// Command files exercises the in-memory file system and pipes through the
// os package: a temporary directory, files written, appended, truncated,
// renamed and listed, a symbolic link, the working directory, and a pipe
// between goroutines. It prints what it saw and exits 1 on a mismatch.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func check(ok bool, format string, args ...any) {
	if !ok {
		fmt.Printf("FAIL: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error) {
	if err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
}

func main() {
	dir, err := os.MkdirTemp("", "files-")
	must(err)
	fmt.Println("temp dir", dir)
	p := filepath.Join(dir, "a.txt")
	must(os.WriteFile(p, []byte("hello"), 0o644))
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteString(", world")
	must(err)
	must(f.Close())
	b, err := os.ReadFile(p)
	must(err)
	check(string(b) == "hello, world", "read back %q", b)
	must(os.Truncate(p, 5))
	st, err := os.Stat(p)
	must(err)
	check(st.Size() == 5 && st.Mode() == 0o644 && !st.ModTime().IsZero(), "stat %v %v %v", st.Size(), st.Mode(), st.ModTime())
	must(os.Rename(p, filepath.Join(dir, "b.txt")))
	_, err = os.Stat(p)
	check(errors.Is(err, fs.ErrNotExist), "old name: %v", err)
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.Symlink("b.txt", filepath.Join(dir, "link")))
	t, err := os.Readlink(filepath.Join(dir, "link"))
	check(err == nil && t == "b.txt", "readlink %q %v", t, err)
	ents, err := os.ReadDir(dir)
	must(err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	check(strings.Join(names, " ") == "b.txt link sub", "readdir %v", names)
	err = os.Remove(filepath.Join(dir, "nope"))
	check(errors.Is(err, syscall.ENOENT), "remove missing: %v", err)
	err = os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	check(errors.Is(err, syscall.EEXIST), "mkdir twice: %v", err)
	must(os.Chdir(dir))
	wd, err := os.Getwd()
	check(err == nil && wd == dir, "getwd %q %v", wd, err)
	must(os.RemoveAll(dir))
	_, err = os.Stat(dir)
	check(errors.Is(err, fs.ErrNotExist), "after RemoveAll: %v", err)
	must(os.Chdir("/"))

	r, w, err := os.Pipe()
	must(err)
	data := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 KB, ten times the pipe
	go func() {
		w.Write(data)
		w.Close()
	}()
	got, err := io.ReadAll(r)
	check(err == nil && bytes.Equal(got, data), "pipe: %d bytes %v", len(got), err)
	r.Close()
	fmt.Println("files: ok")
}
