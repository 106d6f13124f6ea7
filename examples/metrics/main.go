// Command metrics serves Prometheus' /metrics on port 9100 with the
// client library's default registry — the process collector (which reads
// /proc/self/stat, fd/, limits and status through
// github.com/prometheus/procfs) and the Go collector — as a service on
// yolk does; /quit ends it with status 0. qemu's TestPrometheusMetrics
// boots it and scrapes it through a forwarded port:
//
//	go run ./cmd/yolk build -o metrics.elf ./examples/metrics
//	go run ./cmd/yolk run -p 9100:9100 metrics.elf &
//	curl -s 127.0.0.1:9100/metrics | grep ^process_
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	ln, err := net.Listen("tcp", ":9100")
	if err != nil {
		fmt.Println("metrics:", err)
		os.Exit(1)
	}
	quit := make(chan struct{})
	mux := http.NewServeMux()
	// The default handler answers 500 when a collector fails (the
	// process collector when /proc is missing or malformed).
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/quit", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "bye")
		close(quit)
	})
	go http.Serve(ln, mux)
	// Some CPU time and descriptors of our own to count.
	for t := time.Now(); time.Since(t) < 50*time.Millisecond; {
	}
	fmt.Println("metrics: serving")
	<-quit
	time.Sleep(100 * time.Millisecond) // the reply on its way
	fmt.Println("metrics: done")
}
