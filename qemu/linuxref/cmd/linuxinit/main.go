// Command linuxinit is /init of linuxref's Linux guest: it mounts a tmpfs
// at /tmp, loads the kernel modules listed in /lib/modules/order (9p and
// its virtio transport, for shares), mounts each share
// (LINUXREF_9P<N>=TAG:GUESTPATH) with 9p and the options in LINUXREF_9P_OPTS,
// mounts each disk (LINUXREF_DISK<N>=NAME:GUESTPATH[:ro]) as ext4, after
// devtmpfs at /dev gives it /dev/NAME (virtio_blk, ext4 and their
// dependencies loaded as for shares), prints the mounts as Linux shows
// them, and executes /program with its
// own arguments and the environment less the LINUXREF_ entries. /program
// is then process 1, so its exit status is what Linux reports.
//
// It runs only as process 1 of that initramfs; a failure is its exit
// status 1 after a "linuxinit:" line.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"yolk/qemu/linuxref"
)

func main() {
	if err := setup(); err != nil {
		fmt.Printf("linuxinit: %v\n", err)
		os.Exit(1)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, linuxref.EnvPrefix) {
			env = append(env, kv)
		}
	}
	argv := append([]string{linuxref.ProgramPath}, os.Args[1:]...)
	err := unix.Exec(linuxref.ProgramPath, argv, env)
	fmt.Printf("linuxinit: exec %s: %v\n", linuxref.ProgramPath, err)
	os.Exit(1)
}

func setup() error {
	if err := mount("tmpfs", "/tmp", "tmpfs", ""); err != nil {
		return err
	}
	if b, err := os.ReadFile(linuxref.ModuleOrder); err == nil {
		for _, name := range strings.Fields(string(b)) {
			if err := load(path.Join(path.Dir(linuxref.ModuleOrder), name)); err != nil {
				return err
			}
		}
	}
	shares := false
	for i := 0; ; i++ {
		v, ok := os.LookupEnv(fmt.Sprintf("%s%d", linuxref.EnvShare, i))
		if !ok {
			break
		}
		tag, dir, _ := strings.Cut(v, ":")
		if err := mountShare(tag, dir, os.Getenv(linuxref.EnvNineP)); err != nil {
			return err
		}
		shares = true
	}
	for i := 0; ; i++ {
		v, ok := os.LookupEnv(fmt.Sprintf("%s%d", linuxref.EnvDisk, i))
		if !ok {
			break
		}
		if i == 0 {
			if err := mount("devtmpfs", "/dev", "devtmpfs", ""); err != nil {
				return err
			}
		}
		f := strings.Split(v, ":")
		if len(f) < 2 {
			return fmt.Errorf("%s%d=%q: want NAME:GUESTPATH[:ro]", linuxref.EnvDisk, i, v)
		}
		if err := mountDisk(f[0], f[1], len(f) > 2 && f[2] == "ro"); err != nil {
			return err
		}
		shares = true
	}
	if shares {
		return showMounts()
	}
	return nil
}

// mountDisk mounts /dev/name as ext4 at dir, read-only if ro. The
// device's node appears once virtio_blk's probe found it: give it a few
// seconds, saying so.
func mountDisk(name, dir string, ro bool) error {
	dev := "/dev/" + name
	var err error
	for try := 0; try < 50; try++ {
		if _, err = os.Stat(dev); err == nil {
			if try > 0 {
				fmt.Printf("linuxinit: %s appeared after %d retries\n", dev, try)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var flags uintptr
	if ro {
		flags = unix.MS_RDONLY
	}
	if err := unix.Mount(dev, dir, "ext4", flags, ""); err != nil {
		return fmt.Errorf("mount -t ext4 %s %s: %w", dev, dir, err)
	}
	return nil
}

func mount(src, dir, fstype, data string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(src, dir, fstype, 0, data); err != nil {
		return fmt.Errorf("mount -t %s -o %q %s %s: %w", fstype, data, src, dir, err)
	}
	return nil
}

func load(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && err != unix.EEXIST {
		return fmt.Errorf("finit_module %s: %w", file, err)
	}
	return nil
}

// mountShare mounts the virtio-9p device tagged tag at dir. The device's
// driver binds as its module loads, but give a slow probe a few seconds
// (ENOENT: no channel with that tag yet), saying so.
func mountShare(tag, dir, opts string) error {
	var err error
	for try := 0; try < 50; try++ {
		if err = mount(tag, dir, "9p", opts); !errors.Is(err, unix.ENOENT) {
			if try > 0 {
				fmt.Printf("linuxinit: %s appeared after %d retries\n", tag, try)
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// showMounts prints the 9p and ext4 lines of /proc/mounts: the options in
// effect (msize, cache mode; ext4's data mode) as the kernel reports them.
func showMounts() error {
	if err := mount("proc", "/proc", "proc", ""); err != nil {
		return err
	}
	defer unix.Unmount("/proc", 0)
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 2 && (fields[2] == "9p" || fields[2] == "ext4") {
			fmt.Printf("linuxinit: mounted %s\n", sc.Text())
		}
	}
	return sc.Err()
}
