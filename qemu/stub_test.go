package qemu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"yolk/qemu/image"
)

// A stub guest lets the runner be tested against real QEMU without the yolk
// kernel: an ordinary Go program (real linker output, patched by
// image.Patch) whose extra assembly functions are 32-bit PVH entries
// hand-assembled below. Each entry writes a message to the COM1 data port
// and, optionally, a status to isa-debug-exit. The tests patch a copy of the
// program per entry.

// asm32 builds position-independent 32-bit code that prints msg on COM1
// after running pre, then runs post. Code after "call; pop esi" finds msg
// relative to the popped address, so the stack is set up first (PVH leaves
// ESP undefined).
func asm32(pre []byte, msg string, post []byte) []byte {
	b := []byte{0xFC}                           // cld
	b = append(b, pre...)                       //
	b = append(b, 0xBC, 0x00, 0x00, 0x09, 0x00) // mov esp, 0x90000
	b = append(b, 0xE8, 0, 0, 0, 0, 0x5E)       // call .+5; pop esi
	pop := len(b) - 1
	addAt := len(b) + 2
	b = append(b, 0x81, 0xC6, 0, 0, 0, 0) // add esi, imm32 (fixed below)
	b = append(b, 0xB9)                   // mov ecx, len(msg)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(msg)))
	b = append(b, 0x66, 0xBA, 0xF8, 0x03) // mov dx, 0x3f8
	b = append(b, 0xF3, 0x6E)             // rep outsb
	b = append(b, post...)
	b = append(b, 0xFA, 0xF4, 0xEB, 0xFD) // cli; 1: hlt; jmp 1b
	binary.LittleEndian.PutUint32(b[addAt:], uint32(len(b)-pop))
	return append(b, msg...)
}

// exitPost writes code to isa-debug-exit (port 0xf4, 32-bit).
func exitPost(code uint32) []byte {
	b := []byte{0x66, 0xBA, 0xF4, 0x00, 0xB8} // mov dx, 0xf4; mov eax, imm32
	b = binary.LittleEndian.AppendUint32(b, code)
	return append(b, 0xEF) // out dx, eax
}

// echoPre prints the PVH command line: hvm_start_info (at EBX) holds
// cmdline_paddr at offset 24.
var echoPre = []byte{
	0x8B, 0x73, 0x18, // mov esi, [ebx+24]
	0x66, 0xBA, 0xF8, 0x03, // mov dx, 0x3f8
	0xAC,       // 1: lodsb
	0x84, 0xC0, // test al, al
	0x74, 0x03, // jz 2f
	0xEE,       // out dx, al
	0xEB, 0xF8, // jmp 1b
	// 2:
}

// tripleFault loads an empty IDT and executes UD2: the #UD cannot be
// delivered, nor the #DF, so the CPU shuts down (a reset, which -no-reboot
// turns into QEMU exiting with status 0).
func tripleFault() []byte {
	b := []byte{0xFC, 0xBC, 0x00, 0x00, 0x09, 0x00, 0xE8, 0, 0, 0, 0, 0x5E}
	b = append(b, 0x83, 0xC6, 0x09)       // add esi, 9 -> the descriptor
	b = append(b, 0x0F, 0x01, 0x1E)       // lidt [esi]
	b = append(b, 0x0F, 0x0B)             // ud2
	return append(b, 0, 0, 0, 0, 0, 0, 0) // limit 0, base 0 (+pad)
}

const faultPC1, faultPC2 = "PPPPPPPPPPPPPPP1", "PPPPPPPPPPPPPPP2"

// stubTranscripts are recorded guest reports (report/testdata) that stub
// entries print, with the status each exits with (-1: hang).
var stubTranscripts = map[string]struct {
	file string
	exit int
}{
	"stubReportPass":  {"pass.txt", 0},
	"stubReportFail":  {"fail.txt", 1},
	"stubReportHang":  {"timeout.txt", -1},
	"stubReportFault": {"fault.txt", 125},
	"stubReportPanic": {"panic.txt", 2},
	// The guest runner's per-test watchdog fired.
	"stubReportWatchdog": {"watchdog.txt", 1},
	// A passing report whose isa-debug-exit status contradicts its
	// "yolk: exit 0" line.
	"stubReportMismatch": {"pass.txt", 1},
}

func stubEntries() (map[string][]byte, error) {
	e := map[string][]byte{
		"stubExit3":   asm32(nil, "hello from the stub\nyolk: exit 3\n", exitPost(3)),
		"stubExit200": asm32(nil, "yolk: exit 200\n", exitPost(200)),
		"stubNoMark":  asm32(nil, "no marker\n", exitPost(5)),
		"stubEcho":    asm32(echoPre, "\nyolk: exit 0\n", exitPost(0)),
		"stubHang":    asm32(nil, "=== RUN   TestHang\n", nil),
		"stubTriple":  tripleFault(),
		"stubFault": asm32(nil, "yolk: fault: vector 6 (#UD)\n"+
			"yolk:   at 0x"+faultPC1+"\r\n"+
			"yolk:   at 0x"+faultPC2+"\n"+
			"yolk: exit 125\n", exitPost(125)),
	}
	for name, tr := range stubTranscripts {
		b, err := os.ReadFile(filepath.Join("report", "testdata", tr.file))
		if err != nil {
			return nil, err
		}
		var post []byte
		if tr.exit >= 0 {
			post = exitPost(uint32(tr.exit))
		}
		e[name] = asm32(nil, string(b), post)
	}
	return e, nil
}

func stubSource() (mainGo, asm string, err error) {
	entries, err := stubEntries()
	if err != nil {
		return "", "", err
	}
	var names []string
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var m, a strings.Builder
	m.WriteString("package main\n\nimport \"os\"\n\n")
	a.WriteString("#include \"textflag.h\"\n")
	for _, n := range names {
		fmt.Fprintf(&m, "func %s()\n", n)
		fmt.Fprintf(&a, "\nTEXT ·%s(SB), NOSPLIT|NOFRAME, $0-0\n", n)
		for _, c := range entries[n] {
			fmt.Fprintf(&a, "\tBYTE $0x%02x\n", c)
		}
	}
	m.WriteString("\nfunc main() {\n\tif len(os.Args) > 1000 {\n")
	for _, n := range names {
		fmt.Fprintf(&m, "\t\t%s()\n", n)
	}
	m.WriteString("\t}\n}\n")
	return m.String(), a.String(), nil
}

var stub struct {
	once sync.Once
	dir  string
	err  error
}

// stubImage returns a PVH image of the stub program entering at entry.
func stubImage(t *testing.T, entry string) string {
	t.Helper()
	stub.once.Do(func() {
		stub.dir, stub.err = os.MkdirTemp("", "yolk-stub-")
		if stub.err != nil {
			return
		}
		mainGo, asm, err := stubSource()
		if err != nil {
			stub.err = err
			return
		}
		for name, src := range map[string]string{
			"go.mod": "module stub\n\ngo 1.26\n", "main.go": mainGo, "stub_amd64.s": asm,
		} {
			if stub.err = os.WriteFile(filepath.Join(stub.dir, name), []byte(src), 0o644); stub.err != nil {
				return
			}
		}
		cmd := exec.Command("go", "build", "-o", "stub")
		cmd.Dir = stub.dir
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			stub.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if stub.err != nil {
		t.Fatalf("building the stub guest: %v", stub.err)
	}
	data, err := os.ReadFile(filepath.Join(stub.dir, "stub"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := image.PatchBytes(data, "main."+entry)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), entry+".elf")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// setFaultPCs writes two pcs into the stubFault message of an image.
func setFaultPCs(t *testing.T, path string, pc1, pc2 uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, pc := range []uint64{pc1, pc2} {
		ph := []byte([]string{faultPC1, faultPC2}[i])
		j := bytes.Index(data, ph)
		if j < 0 || bytes.Index(data[j+1:], ph) >= 0 {
			t.Fatalf("placeholder %s not found exactly once", ph)
		}
		copy(data[j:], fmt.Sprintf("%016x", pc))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if stub.dir != "" {
		os.RemoveAll(stub.dir)
	}
	os.Exit(code)
}
