// Package linuxref boots the same Go program on Linux in the same QEMU
// configuration as yolk, so that the two can be measured side by side.
//
// FetchKernel takes a Linux kernel from Debian's packages at run time
// (apt-get download and dpkg-deb, no installation); WriteInitramfs puts a
// static linux/amd64 program into a newc initramfs as /program, behind the
// guest init of cmd/linuxinit, with the kernel modules shares need
// (LoadModules); Run boots it
// under TCG with the machine, CPU model, memory, CPU count and devices that
// package qemu gives a yolk image, and reads /init's exit status from the
// panic Linux raises when init ends. BenchLines picks the Go benchmark
// lines out of the console for benchstat.
//
// It is a measurement tool: it never commits or installs the kernel, never
// changes the program, and a boot is not a pass/fail test (only the archive
// writer and the command-line and console parsing are tested hosted).
package linuxref
