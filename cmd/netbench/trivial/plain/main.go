// Command plain is the boot-time probe of docs/net-bench.md without package
// net: it prints one line from main and returns.
package main

import "fmt"

func main() { fmt.Println("netbench-trivial: main") }
