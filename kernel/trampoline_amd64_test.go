package kernel

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrampoline checks the AP start-up code written as bytes in
// trampoline_amd64.s against the offsets smp_amd64.go uses: the 16-bit
// part must end with the far jump through T_FAR32 exactly at
// trampolineProt32, the 32-bit part with the far jump through
// [ebx+T_FAR64] exactly at trampolineLen, and both parts must disassemble
// (binutils objdump, 16-bit and 32-bit) into the instructions the comments
// name, with the data offsets the Go side fills in.
func TestTrampoline(t *testing.T) {
	code := bytesAt(trampolineCode(), trampolineLen)
	jmp32 := []byte{0x66, 0xFF, 0x2E, tFar32, 0}
	if got := code[trampolineProt32-len(jmp32) : trampolineProt32]; !bytes.Equal(got, jmp32) {
		t.Errorf("16-bit code does not end with jmp far [T_FAR32] at %d: % x", trampolineProt32, got)
	}
	jmp64 := binary.LittleEndian.AppendUint32([]byte{0xFF, 0xAB}, tFar64)
	if got := code[trampolineLen-len(jmp64):]; !bytes.Equal(got, jmp64) {
		t.Errorf("32-bit code does not end with jmp far [ebx+T_FAR64] at %d: % x", trampolineLen, got)
	}
	if trampolineLen > tGDTR {
		t.Errorf("code (%d bytes) overlaps the data area at %#x", trampolineLen, tGDTR)
	}

	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("no objdump (binutils) to disassemble the trampoline with")
	}
	dis := func(arch string, b []byte) string {
		f := filepath.Join(t.TempDir(), arch+".bin")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", arch, "-M", "intel", f).CombinedOutput()
		if err != nil {
			t.Fatalf("objdump: %v\n%s", err, out)
		}
		var ins []string
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.SplitN(l, "\t", 3); len(f) == 3 && strings.HasSuffix(f[0], ":") {
				ins = append(ins, strings.Join(strings.Fields(f[2]), " "))
			}
		}
		return strings.Join(ins, "; ")
	}
	want16 := "cli; cld; mov ax,cs; mov ds,ax; xor ebx,ebx; mov bx,cs; shl ebx,0x4; lgdtd ds:0xc0; " +
		"mov eax,cr0; or al,0x1; mov cr0,eax; jmp FWORD PTR ds:0xc8"
	if got := dis("i8086", code[:trampolineProt32]); got != want16 {
		t.Errorf("16-bit part:\n got %s\nwant %s", got, want16)
	}
	want32 := "mov ax,0x10; mov ds,eax; mov es,eax; mov ss,eax; mov eax,cr4; or eax,0x620; mov cr4,eax; " +
		"mov eax,DWORD PTR [ebx+0xd0]; mov cr3,eax; mov ecx,0xc0000080; rdmsr; or eax,0x901; wrmsr; " +
		"mov eax,cr0; and eax,0x9ffffff3; or eax,0x80010023; mov cr0,eax; jmp FWORD PTR [ebx+0xd8]"
	if got := dis("i386", code[trampolineProt32:]); got != want32 {
		t.Errorf("32-bit part:\n got %s\nwant %s", got, want32)
	}
}
