// Command hello is an ordinary Go program with no yolk import: `yolk build`
// links the kernel in. It exercises goroutines, channels, timers and exit
// codes: `hello -exit N` exits with N, `hello -panic` panics (status 2).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	exit := flag.Int("exit", 0, "exit with this status")
	panicking := flag.Bool("panic", false, "panic instead of returning")
	flag.Parse()

	results := make(chan string)
	for i := 0; i < 3; i++ {
		go func(i int) {
			time.Sleep(time.Duration(i) * time.Millisecond)
			results <- fmt.Sprintf("goroutine %d", i)
		}(i)
	}
	for i := 0; i < 3; i++ {
		fmt.Println(<-results)
	}
	fmt.Printf("hello from %s/%s on %d CPU(s), args %q, USER=%q\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), os.Args[1:], os.Getenv("USER"))
	if *panicking {
		panic("hello: asked to panic")
	}
	if *exit != 0 {
		os.Exit(*exit)
	}
}
