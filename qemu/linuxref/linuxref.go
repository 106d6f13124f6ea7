// Package linuxref boots the same Go program on Linux in the same QEMU
// configuration as yolk, so that the two can be compared side by side.
package linuxref
