package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// unameRelease is uname(2)'s release ("6.1.0-yolk" on yolk).
func unameRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// linuxInit does, as Linux's pid 1 in linuxref's initramfs, what an init
// and ip(8) would: the modules in /modules in name order (finit_module),
// /proc mounted (for "/cpu"), lo up, and eth0 (when there is one) up with
// 10.0.2.15/24 (QEMU's user network; slirp's gateway 10.0.2.2 is on that
// link, no route needed).
func linuxInit() {
	os.Mkdir("/proc", 0o555)
	if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		fmt.Fprintln(os.Stderr, "netbench: init: mount /proc:", err)
	}
	mods, _ := filepath.Glob("/modules/*.ko")
	sort.Strings(mods)
	for _, m := range mods {
		f, err := os.Open(m)
		if err != nil {
			fmt.Fprintln(os.Stderr, "netbench: init:", err)
			continue
		}
		if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && err != unix.EEXIST {
			fmt.Fprintf(os.Stderr, "netbench: init: finit_module %s: %v\n", m, err)
		}
		f.Close()
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench: init: socket:", err)
		return
	}
	defer unix.Close(fd)
	if err := ifUp(fd, "lo"); err != nil {
		fmt.Fprintln(os.Stderr, "netbench: init: lo:", err)
	}
	ifr, _ := unix.NewIfreq("eth0")
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return // no eth0: no NIC, or no driver
	}
	set := func(req uint, a string) error {
		r, _ := unix.NewIfreq("eth0")
		if err := r.SetInet4Addr(netip.MustParseAddr(a).AsSlice()); err != nil {
			return err
		}
		return unix.IoctlIfreq(fd, req, r)
	}
	if err := set(unix.SIOCSIFADDR, "10.0.2.15"); err != nil {
		fmt.Fprintln(os.Stderr, "netbench: init: eth0 address:", err)
	}
	if err := set(unix.SIOCSIFNETMASK, "255.255.255.0"); err != nil {
		fmt.Fprintln(os.Stderr, "netbench: init: eth0 netmask:", err)
	}
	if err := ifUp(fd, "eth0"); err != nil {
		fmt.Fprintln(os.Stderr, "netbench: init: eth0:", err)
	}
	fmt.Println("netbench: init: eth0 10.0.2.15/24 up")
}

func ifUp(fd int, name string) error {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
