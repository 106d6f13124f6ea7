//go:build !amd64

package procfs_test

func hostCPUID(leaf, sub uint32) (a, b, c, d uint32) { return }
