// Package consoletest is the console input the guest harness (qemu's
// TestGuest) sends and the self-test TestConsoleInput expects: one
// definition for both sides. Plain data, usable in the guest.
package consoletest

// Input is every byte value twice (the framing's escape and end bytes
// among them), then a pattern long enough to fill the kernel's 4 KiB ring
// twice over.
func Input() []byte {
	b := make([]byte, 0, 512+10000)
	for i := 0; i < 512; i++ {
		b = append(b, byte(i))
	}
	for i := 0; i < 10000; i++ {
		b = append(b, byte(i*7+i>>8))
	}
	return b
}
