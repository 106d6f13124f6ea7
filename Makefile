# yolk: build and boot bare-metal Go images in QEMU.
#
#   make run              build the self-test image and boot it (serial on the terminal)
#   make run SMP=4        ... with 4 CPUs (1 to 64; default 1)
#   make test             hosted tests (go test -race), the guest self-tests in QEMU
#                         (every machine at 1, 2 and 4 CPUs) and a few standard-library
#                         packages' tests through yolk test (make stdquick)
#   make ACCEL=tcg ...    force software emulation (default: KVM only if a probe boot works)
#   make bench            guest benchmarks; output in out/
#   make smpbench         multiprocessor benchmarks at 1, 2 and 4 CPUs (docs/smp.md)
#   make linuxref         the same benchmarks on Linux and on yolk in the same QEMU setup (benchstat); SMP=2 for two CPUs
#   make conformance      the standard library's tests on Linux and on yolk at 1 and 2 CPUs: docs/conformance.md

ACCEL   ?= auto
MACHINE ?= microvm
SMP     ?= 1
GO      ?= go
YOLK    := $(GO) run ./cmd/yolk
IMAGE   := out/selftest.elf

.PHONY: run test hosted guest stdquick conformance bench smpbench linuxref qemu image clean

run: qemu image
	$(YOLK) run -accel $(ACCEL) -machine $(MACHINE) -smp $(SMP) $(IMAGE)

test: qemu hosted guest stdquick

# ARM64_PKGS build for linux/arm64 today (the kernel itself does not yet:
# issue 9); make hosted vets them and compiles their tests for arm64.
ARM64_PKGS = ./sched/... ./sync/... ./drivers/... ./kernel/fs/... ./internal/...

hosted:
	$(GO) vet ./...
	GOOS=linux GOARCH=arm64 $(GO) vet $(ARM64_PKGS)
	mkdir -p out/arm64-tests
	GOOS=linux GOARCH=arm64 $(GO) test -c -o out/arm64-tests/ $(ARM64_PKGS) >/dev/null
	$(GO) test -race -count=1 -timeout 15m -skip '^TestGuest$$' ./...

guest: qemu
	YOLK_ACCEL=$(ACCEL) $(GO) test -count=1 -timeout 20m -v -run '^TestGuest$$' ./qemu/

# stdquick runs a handful of standard-library packages' own tests in the
# guest with yolk test (-short), so that a regression in what Go's tests
# need (files, pipes, the working directory, asynchronous preemption:
# sync/atomic and time spin) is caught. context's one socket example is
# skipped (no network).
STDQUICK = bufio container/list context errors io/fs strings sync/atomic time unicode/utf8
stdquick: qemu
	$(YOLK) test -accel $(ACCEL) -short -skip '^ExampleAfterFunc_connection$$' $(STDQUICK)

# conformance runs the issue's standard-library packages with -short on the
# host (go test) and in the guest (yolk test) at -smp 1 and 2 and writes
# docs/conformance.md (raw outputs in out/conformance/); it fails if a test
# that passes on Linux fails on yolk without an allowed reason in
# docs/conformance-reasons.txt. About 20 minutes under TCG; not part of
# make test (make stdquick is its fast subset).
conformance: qemu
	$(GO) run ./cmd/conformance -accel $(ACCEL) -smp 1,2

bench: qemu image
	mkdir -p out
	$(YOLK) run -accel $(ACCEL) -machine $(MACHINE) -smp $(SMP) $(IMAGE) -run '^$$' -bench . | tee out/bench-$(MACHINE)-smp$(SMP).txt

# linuxref runs on pc unless MACHINE is given on the command line or in the
# environment (the microvm default above is for yolk alone: Linux cannot
# calibrate its TSC there). SMP=N gives both guests N CPUs; results then go
# to out/linuxref/<machine>-smp<N> (linuxref.ResultDir's rule).
# smpbench: SMPBENCH_COUNT boots per configuration, round-robin, at 1, 2
# and 4 CPUs: the multiprocessor benchmarks with the paper's lock-free
# ready queue, and sched_yield throughput again with the baseline
# TWA-locked queue (yolk.readyq=locked). Results in out/smpbench/.
SMPBENCH_COUNT ?= 5
SMPBENCH        = ParallelCPU|SchedYieldParallel|KernelLock|KernelMutex|WakeupIPI
smpbench: qemu image
	mkdir -p out/smpbench
	rm -f out/smpbench/*.txt
	for i in $$(seq $(SMPBENCH_COUNT)); do for n in 1 2 4; do \
	  $(YOLK) run -accel $(ACCEL) -machine $(MACHINE) -smp $$n $(IMAGE) -run '^$$' -bench '$(SMPBENCH)' \
	    | grep '^Benchmark' >> out/smpbench/smp$$n.txt; \
	  $(YOLK) run -accel $(ACCEL) -machine $(MACHINE) -smp $$n -e yolk.readyq=locked $(IMAGE) -run '^$$' -bench 'SchedYieldParallel' \
	    | grep '^Benchmark' >> out/smpbench/smp$$n-lockedq.txt; \
	done; done
	for n in 1 2 4; do grep SchedYieldParallel out/smpbench/smp$$n.txt > out/smpbench/smp$$n-lockfreeq.txt; \
	  $(GO) tool benchstat out/smpbench/smp$$n-lockedq.txt out/smpbench/smp$$n-lockfreeq.txt; done | tee out/smpbench/readyq.txt
	$(GO) tool benchstat out/smpbench/smp1.txt out/smpbench/smp2.txt out/smpbench/smp4.txt | tee out/smpbench/benchstat.txt

LINUXREF_COUNT ?= 10
SMP ?= 1
LINUXREF_MACHINE := $(if $(filter command line environment,$(origin MACHINE)),$(MACHINE),pc)
LINUXREF_DIR := out/linuxref/$(LINUXREF_MACHINE)$(if $(filter-out 0 1,$(SMP)),-smp$(SMP))
linuxref: qemu
	$(GO) run ./qemu/linuxref/cmd/linuxref -machine $(LINUXREF_MACHINE) -smp $(SMP) -count $(LINUXREF_COUNT)
	$(GO) tool benchstat -filter .unit:sec/op $(LINUXREF_DIR)/linux.txt $(LINUXREF_DIR)/yolk.txt | tee $(LINUXREF_DIR)/benchstat.txt

image:
	mkdir -p out
	$(YOLK) build -o $(IMAGE) ./kernel/selftest

# qemu installs QEMU from Debian's packages when it is missing: as root
# directly, otherwise through sudo if it needs no password (sudo -n);
# failing both it prints the command to run.
qemu:
	@command -v qemu-system-x86_64 >/dev/null 2>&1 || { \
	  echo "qemu-system-x86_64 not found: installing Debian's qemu-system-x86"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-system-x86; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    sudo -n apt-get update && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-system-x86; \
	  else echo "run: sudo apt-get update && sudo apt-get install -y qemu-system-x86"; exit 1; fi; }

clean:
	rm -rf out
