package flags

import (
	"fmt"
	"testing"
)

func TestOne(t *testing.T)   { t.Log("one") }
func TestTwo(t *testing.T)   { t.Log("two") }
func TestThree(t *testing.T) { t.Log("three") }
func TestFour(t *testing.T)  { t.Log("four") }
func TestFive(t *testing.T) {
	if Sum(2, 3) != 5 {
		t.Fatal("2+3")
	}
}

var sink []byte

func BenchmarkAlloc(b *testing.B) {
	for range b.N {
		sink = make([]byte, 64)
		sink[0] = byte(Sum(len(sink)))
	}
}

func ExampleSum() {
	fmt.Println(Sum(1, 2))
	// Output: 3
}
