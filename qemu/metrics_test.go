package qemu

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestPrometheusMetrics: Prometheus' client library serving /metrics from
// a yolk guest (examples/metrics: promhttp's default handler, the process
// and Go collectors) answers a scrape through a forwarded port with 200 —
// the handler says 500 when a collector fails — and the process
// collector's numbers, which it reads from the guest's /proc through
// github.com/prometheus/procfs, are there and plausible. On each
// architecture, 2 CPUs.
func TestPrometheusMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const pkg = "yolk/examples/metrics"
	for _, c := range []struct{ arch, machine string }{{"amd64", "microvm"}, {"arm64", "virt"}} {
		t.Run(c.arch, func(t *testing.T) {
			if _, err := FindQEMUFor(c.arch); err != nil {
				t.Fatal(err)
			}
			img := fixtureImage(t, pkg, t.TempDir(), c.arch)
			probe, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := probe.Addr().(*net.TCPAddr).Port
			probe.Close()
			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			var (
				once    sync.Once
				scraped = make(chan error, 1)
				body    []byte
			)
			var serial bytes.Buffer
			res, err := Run(t.Context(), Config{Image: img, Arch: c.arch, Machine: c.machine, SMP: 2, Memory: "256M",
				Net: "user", Forwards: []Forward{{HostAddr: "127.0.0.1", HostPort: port, GuestPort: 9100}},
				Timeout: 4 * time.Minute, Stdout: &serial, Stderr: &serial,
				OnLine: func(l string) {
					if l == "metrics: serving" {
						once.Do(func() {
							go func() {
								var err error
								body, err = scrape(base + "/metrics")
								scraped <- err
								if b, err := scrape(base + "/quit"); err != nil || string(b) != "bye\n" {
									t.Errorf("/quit: %q, %v", b, err)
								}
							}()
						})
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			out := serial.String()
			if res.ExitCode != 0 || !strings.Contains(out, "metrics: done") {
				t.Fatalf("guest exit %d, want 0 after /quit:\n%s", res.ExitCode, out)
			}
			select {
			case err := <-scraped:
				if err != nil {
					t.Fatalf("scrape: %v\n%s", err, out)
				}
			default:
				t.Fatalf("the guest never said it was serving:\n%s", out)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("parsing /metrics: %v\n%s", err, body)
			}
			value := func(name string) float64 {
				f := fams[name]
				if f == nil || len(f.Metric) != 1 {
					t.Errorf("%s: missing", name)
					return -1
				}
				m := f.Metric[0]
				switch {
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Counter != nil:
					return m.Counter.GetValue()
				}
				t.Errorf("%s: neither gauge nor counter", name)
				return -1
			}
			cpu, rss := value("process_cpu_seconds_total"), value("process_resident_memory_bytes")
			open, max := value("process_open_fds"), value("process_max_fds")
			start := value("process_start_time_seconds")
			t.Logf("process_cpu_seconds_total %g, process_resident_memory_bytes %g, process_open_fds %g, process_max_fds %g, process_start_time_seconds %g",
				cpu, rss, open, max, start)
			now := float64(time.Now().Unix())
			if cpu <= 0 || cpu > 600 || rss < 1<<20 || rss > 256<<20 || open < 4 || open > 1024 || max != 16384 ||
				start < now-3600 || start > now+60 {
				t.Errorf("implausible: cpu %g s, rss %g, open fds %g, max fds %g (want 16384, the descriptor table), start %g (now %g)", cpu, rss, open, max, start, now)
			}
			if fams["go_goroutines"] == nil || fams["go_memstats_heap_alloc_bytes"] == nil {
				t.Errorf("the Go collector's metrics are missing")
			}
		})
	}
}

// scrape GETs url, retrying for a minute a connection slirp accepted
// before the guest's listener was up; a status other than 200 is an
// error with the body.
func scrape(url string) ([]byte, error) {
	deadline := time.Now().Add(time.Minute)
	c := &http.Client{Timeout: 30 * time.Second}
	for {
		r, err := c.Get(url)
		if err == nil {
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err == nil && r.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s: %s: %s", url, r.Status, b)
			}
			return b, err
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
