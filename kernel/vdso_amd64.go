package kernel

// What the Go runtime looks for in an amd64 vDSO (runtime/vdso_linux_amd64.go).
const (
	vdsoMachine     = 62 // EM_X86_64
	vdsoFunc        = "__vdso_clock_gettime"
	vdsoVersion     = "LINUX_2.6"
	vdsoVersionHash = 0x3ae75f6
)
