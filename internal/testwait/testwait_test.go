package testwait

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	if Wait(&wg, 10*time.Millisecond) {
		t.Fatal("Wait returned true for a group that never finishes")
	}
	wg.Done()
	if !Wait(&wg, time.Second) {
		t.Fatal("Wait returned false for a finished group")
	}
}

func TestStacksListsEveryGoroutine(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }()
	if s := Stacks(); bytes.Count(s, []byte("goroutine ")) < 2 || !bytes.Contains(s, []byte("TestStacksListsEveryGoroutine")) {
		t.Fatalf("stacks:\n%s", s)
	}
}
