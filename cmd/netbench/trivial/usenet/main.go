// Command usenet is the boot-time probe of docs/net-bench.md with package
// net (so yolk build links netsvc by default): it prints one line from main
// and returns.
package main

import (
	"fmt"
	"net"
)

func main() { fmt.Println("netbench-trivial: main", net.ParseIP("10.0.2.15")) }
