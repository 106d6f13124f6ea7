package main

import (
	"bytes"
	"io"
	"os"

	"yolk/internal/consoletest"
)

// testConsoleInput reads os.Stdin to its end and compares it with what the
// harness sent (YOLK_STDIN_TEST=1): all 256 byte values, the framing's
// escape among them, through the receive interrupt and the kernel's ring,
// which the input overflows twice (flow control, not loss). The harness
// holds back all but the first 1000 bytes until this test has run for a
// while, so at least one read blocked and was woken by the interrupt.
func testConsoleInput(t *T) {
	if os.Getenv("YOLK_STDIN_TEST") != "1" {
		t.Skipf("YOLK_STDIN_TEST=1 not set: the harness (qemu's TestGuest) sends the input this test reads")
	}
	before := stats(t)
	got, err := io.ReadAll(os.Stdin)
	after := stats(t)
	if err != nil {
		t.Fatalf("reading stdin: %v", err)
	}
	want := consoletest.Input()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("stdin: %d bytes, want %d; first difference at byte %d", len(got), len(want), i)
	}
	t.Logf("%d bytes; %d receive interrupts, %d blocked reads", len(got), after.ConsoleIRQs-before.ConsoleIRQs, after.ConsoleWaits-before.ConsoleWaits)
	if after.ConsoleWaits == before.ConsoleWaits {
		t.Errorf("no read blocked: the harness holds input back until this test runs")
	}
	if after.ConsoleIRQs == 0 {
		t.Errorf("no receive interrupt")
	}
	if n, err := os.Stdin.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("read after the end: %d, %v; want 0, EOF", n, err)
	}
}
