// Command powerdown waits for the machine's power button, which the kernel
// turns into SIGTERM (TestPowerButton). With no argument it catches the
// signal, writes a file into the directory $POWERDOWN_DIR (a share),
// flushes and closes it, says so and exits 0. With "nocatch" it does not
// catch SIGTERM, whose default action ends it (status 143).
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "nocatch" {
		fmt.Println("powerdown: ready")
		time.Sleep(10 * time.Minute)
		fmt.Println("powerdown: no SIGTERM")
		os.Exit(1)
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	fmt.Println("powerdown: ready")
	select {
	case s := <-c:
		fmt.Println("powerdown: got", s)
	case <-time.After(10 * time.Minute):
		fmt.Println("powerdown: no SIGTERM")
		os.Exit(1)
	}
	f, err := os.Create(os.Getenv("POWERDOWN_DIR") + "/stopped")
	if err != nil {
		fmt.Println("powerdown:", err)
		os.Exit(2)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "stopped cleanly")
	if err := w.Flush(); err != nil {
		fmt.Println("powerdown:", err)
		os.Exit(3)
	}
	if err := f.Sync(); err != nil {
		fmt.Println("powerdown: sync:", err)
	}
	if err := f.Close(); err != nil {
		fmt.Println("powerdown:", err)
		os.Exit(4)
	}
	fmt.Println("powerdown: file written, exiting")
}
