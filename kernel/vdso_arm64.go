package kernel

// What the Go runtime looks for in an arm64 vDSO (runtime/vdso_linux_arm64.go).
const (
	vdsoMachine     = 183 // EM_AARCH64
	vdsoFunc        = "__kernel_clock_gettime"
	vdsoVersion     = "LINUX_2.6.39"
	vdsoVersionHash = 0x75fcb89
)
