package qemu

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestQuoteToken(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        `plain`,
		"a=b":          `a=b`,
		"":             `""`,
		"two words":    `"two words"`,
		"tab\there":    "\"tab\there\"",
		"nl\n":         "\"nl\n\"",
		`say "hi"`:     `"say \"hi\""`,
		`C:\dir`:       `"C:\\dir"`,
		`\"`:           `"\\\""`,
		"--":           `--`,
		"ünïcode-ok":   `ünïcode-ok`,
		"'single'":     `'single'`,
		`x="y z"`:      `"x=\"y z\""`,
		"trailing\\":   `"trailing\\"`,
		" lead":        `" lead"`,
		"a\rb":         "\"a\rb\"",
		"dollar$HOME!": `dollar$HOME!`,
	} {
		if got := QuoteToken(in); got != want {
			t.Errorf("QuoteToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCmdline(t *testing.T) {
	got, err := Cmdline([]string{"GOGC=50", "MSG=hello world"}, []string{"-v", "", "--", `a"b`})
	if err != nil {
		t.Fatal(err)
	}
	if want := `GOGC=50 "MSG=hello world" -- -v "" -- "a\"b"`; got != want {
		t.Errorf("Cmdline = %q, want %q", got, want)
	}
	if got, _ := Cmdline(nil, nil); got != "--" {
		t.Errorf("empty Cmdline = %q, want \"--\"", got)
	}
	for _, bad := range [][2][]string{
		{{"NOVALUE"}, nil},
		{{"=x"}, nil},
		{{"A B=x"}, nil},
		{{"A=\x00"}, nil},
		{nil, {"nul\x00"}},
	} {
		if s, err := Cmdline(bad[0], bad[1]); err == nil {
			t.Errorf("Cmdline(%q, %q) = %q, want an error", bad[0], bad[1], s)
		}
	}
}

func TestCmdlineRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab=-\" \\\t\n\r'$xyz\xc3\xa9")
	word := func(n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 5000; i++ {
		var env, args []string
		for j := r.IntN(4); j > 0; j-- {
			k := "K" + word(0)
			env = append(env, k+"="+word(8))
		}
		for j := r.IntN(5); j > 0; j-- {
			args = append(args, word(8))
		}
		s, err := Cmdline(env, args)
		if err != nil {
			t.Fatalf("Cmdline(%q, %q): %v", env, args, err)
		}
		gotEnv, gotArgs, err := ParseCmdline(s)
		if err != nil {
			t.Fatalf("ParseCmdline(%q): %v", s, err)
		}
		if !reflect.DeepEqual(gotEnv, env) || !reflect.DeepEqual(gotArgs, args) {
			t.Fatalf("round trip of %q %q via %q gave %q %q", env, args, s, gotEnv, gotArgs)
		}
	}
}

func TestParseCmdlineErrors(t *testing.T) {
	for _, s := range []string{`"open`, `"a"b`, `-- "x\"`} {
		if _, _, err := ParseCmdline(s); err == nil {
			t.Errorf("ParseCmdline(%q) accepted", s)
		}
	}
	// A quoted "--" is an environment token, not the separator.
	env, args, err := ParseCmdline(`"--" -- a`)
	if err != nil || !reflect.DeepEqual(env, []string{"--"}) || !reflect.DeepEqual(args, []string{"a"}) {
		t.Errorf("quoted --: %q %q %v", env, args, err)
	}
}
