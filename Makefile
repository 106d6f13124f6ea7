# yolk: build and boot bare-metal Go images in QEMU.
#
#   make run              build the self-test image and boot it (serial on the terminal)
#   make run SMP=4        ... with 4 CPUs (1 to 64; default 1)
#   make run ARCH=arm64   ... the arm64 build on QEMU virt (MACHINE=virt-gicv3 for a GICv3)
#   make run BOARD=rpi3   ... the Raspberry Pi 3 SD-card image (out/selftest-rpi3.img) on QEMU raspi3b
#   make run BOARD=pc     ... the PC image (out/selftest-pc.iso, GRUB) on q35 with SeaBIOS (FIRMWARE=uefi: OVMF)
#   make run NET=none     ... without a NIC (NET= is yolk run's -net: user (default), none, tap:IFNAME)
#   make debug            ... halted, with QEMU's gdb stub on GDBPORT (1234): prints the gdb command
#   make test             hosted tests (go test, -race where tests run goroutines), the guest self-tests in QEMU
#                         (every x86 machine at 1, 2 and 4 CPUs; the PC image (GRUB ISO) on q35 with
#                         SeaBIOS and OVMF at 2; arm64 virt with GICv2 and GICv3 at 1 and 2 CPUs;
#                         the Raspberry Pi 3 card on raspi3b) and a few standard-library
#                         packages' tests through yolk test (make stdquick)
#   make guest ARCH=arm64 the guest self-tests on arm64 only (ARCH=amd64: x86 only)
#   make ACCEL=tcg ...    force software emulation (default: KVM only if a probe boot works)
#   make bench            guest benchmarks; output in out/
#   make smpbench         multiprocessor benchmarks at 1, 2 and 4 CPUs (docs/smp.md)
#   make linuxref         the same benchmarks on Linux and on yolk in the same QEMU setup (benchstat); SMP=2 for two CPUs,
#                         ARCH=arm64 on QEMU virt with Debian's arm64 kernel
#   make conformance      the standard library's tests on Linux and on yolk at 1 and 2 CPUs: docs/conformance.md
#   make images           disk images (yolk image) booted on every firmware × controller × format:
#                         SeaBIOS (pc) and OVMF (q35), virtio-scsi, NVMe, virtio-blk, GCE's disk.raw and QCOW2
#                         (make test boots one: GCE's disk.raw, OVMF, virtio-scsi)
#   make soak             TestSoak for SOAK (30m) at 4 CPUs: fuzzer, futex stress, GC and signals together (not in make test)
#   make diskdiff         the same file-system calls on yolk and on Linux, each on a copy of one ext4 image: results,
#                         e2fsck and the trees compared (TestDiskDifferential; docs/disks.md)
#   make diskbench        disk benchmarks (MB/s, IOPS at depth 1 and 32, fsync p50/p99, files/s, SQLite, bbolt) on Linux and yolk, one image (docs/disks.md)
#   make load             10,000 idle connections, slow clients and a SYN flood against a Go HTTP server (docs/security.md)
#   make wirefuzz         10⁶ random and mutated frames into a guest serving TCP and UDP echo over a tap link (root; docs/security.md)

ACCEL   ?= auto
ARCH    ?= amd64
MACHINE ?= $(if $(filter arm64,$(ARCH)),virt,microvm)
SMP     ?= 1
GO      ?= go
YOLK    := $(GO) run ./cmd/yolk
BOARD   ?=
NET     ?=
IMAGE   := $(if $(filter pc,$(BOARD)),out/selftest-pc.iso,$(if $(BOARD),out/selftest-$(BOARD).img,out/selftest$(if $(filter arm64,$(ARCH)),-arm64).elf))
# A board image brings its machine, CPUs and memory (the PC image: q35, CPUs from SMP).
BOOT     = $(if $(filter pc,$(BOARD)),-board pc -smp $(SMP) $(if $(FIRMWARE),-firmware $(FIRMWARE)),$(if $(BOARD),-board $(BOARD),-machine $(MACHINE) -smp $(SMP)))

.PHONY: run debug test hosted qemu-user guest stdquick powercut diskdiff diskbench conformance soak load wirefuzz bench smpbench linuxref qemu image images diskapps clean

# NET= is passed as yolk run -net (default there: user; the rpi3 board: none).
NETFLAG  = $(if $(NET),-net $(NET))

run: qemu image
	$(YOLK) run -accel $(ACCEL) $(BOOT) $(NETFLAG) $(IMAGE)

# debug boots the self-test image halted with QEMU's gdb stub on GDBPORT
# and prints the gdb-multiarch command that attaches with its symbols.
GDBPORT ?= 1234
debug: qemu image
	$(YOLK) run -accel $(ACCEL) $(BOOT) $(NETFLAG) -timeout 0 -gdb $(GDBPORT) $(IMAGE)

test: qemu hosted guest stdquick

# make hosted vets everything for linux/arm64 too and compiles every
# package's tests for it (ARM64_PKGS: the packages that build for arm64;
# ARM64_TESTS: those with tests).
ARM64_PKGS  = $$(GOOS=linux GOARCH=arm64 $(GO) list -e -f '{{if or .GoFiles .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)
ARM64_TESTS = $$(GOOS=linux GOARCH=arm64 $(GO) list -e -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)

#
# The race detector runs where the tests run goroutines against each other
# or the package's code starts them (RACE_RE: the lock-free queue and the
# locks, the scheduler, the drivers' rings, the socket layers, epoll's ready
# list, the file locks, the tools that serve a guest); the packages whose
# tests are sequential (ext4, jbd2, the parsers, the image builders, the
# kernel's static checks) run without it: there it finds nothing and costs 3-4x
# (ext4's tests: 224 s under it, 62 s without, cold, on CI's two cores).
# The two runs go side by side (the race run ends with the qemu and
# cmd/yolk packages' guest boots alone, a core idle); the second's output
# follows the first's (out/hosted-norace.txt).
RACE_RE     = ^yolk/(sync/.*|sched(/.*)?|kernel/(epoll|fs|flock|net)|netsvc(/.*)?|drivers/(virtio|virtio9p|virtioblk|nvme)|internal/(testwait|eintrtest)|cmd/yolk|qemu)$$
RACE_PKGS   = $$($(GO) list ./... | grep -E '$(RACE_RE)')
NORACE_PKGS = $$($(GO) list ./... | grep -vE '$(RACE_RE)')

# The locks, the lock-free queue and the network service's wake-ups are
# tested for arm64 too, under qemu-aarch64 (QEMU's user-mode TCG, each
# thread on a host thread): on an x86 host that emulation does not keep a
# store ahead of a later load of another word (STLR, then LDAR), where
# Arm's cores do and where Go's amd64 store is a full barrier, so a
# protocol that needs that order loses wake-ups there and nowhere else
# (sync/twa's UnlockSlot says how it was found). TestLocality counts
# contended hand-offs (timing); TestKernelContext reads the compiler's
# listing, whose arm64 form does not mark frameless leaf functions nosplit.
ARM64_TCG_PKGS = ./sync/twa/... ./sync/cqs ./sync/ces ./sched/queue ./netsvc

hosted: qemu-user
	$(GO) vet ./...
	GOOS=linux GOARCH=arm64 $(GO) vet $(ARM64_PKGS)
	mkdir -p out/arm64-tests
	GOOS=linux GOARCH=arm64 $(GO) test -c -o out/arm64-tests/ $(ARM64_TESTS) >/dev/null
	$(GO) test -count=1 -timeout 15m $(NORACE_PKGS) > out/hosted-norace.txt 2>&1 & norace=$$!; \
	$(GO) test -race -count=1 -timeout 15m -skip '^TestGuest$$' $(RACE_PKGS); race=$$?; \
	wait $$norace; norace=$$?; echo "go test (no -race):"; cat out/hosted-norace.txt; \
	[ $$race = 0 ] && [ $$norace = 0 ]
	GOOS=linux GOARCH=arm64 $(GO) test -exec qemu-aarch64 -count=1 -timeout 10m \
	  -skip '^(TestLocality|TestKernelContext)$$' $(ARM64_TCG_PKGS)

# With ARCH given on the command line, only that architecture's default
# entries (YOLK_ARCH; qemu/guest_test.go has the lists); $YOLK_MACHINE, if
# set, names the entries instead.
guest: qemu
	$(if $(filter command line,$(origin ARCH)),YOLK_ARCH=$(ARCH)) \
	YOLK_ACCEL=$(ACCEL) $(GO) test -count=1 -timeout 25m -v -run '^TestGuest$$' ./qemu/

# stdquick runs a handful of standard-library packages' own tests in the
# guest with yolk test (-short), so that a regression in what Go's tests
# need (files, pipes, the working directory, asynchronous preemption:
# sync/atomic and time spin) is caught. context's one socket example is
# skipped (no network).
STDQUICK = bufio container/list context errors io/fs strings sync/atomic time unicode/utf8
stdquick: qemu
	$(YOLK) test -accel $(ACCEL) -short -skip '^ExampleAfterFunc_connection$$' $(STDQUICK)

# powercut runs TestPowerCut (qemu/powercut_test.go) 50 times: QEMU killed
# at a random moment while the guest appends and fsyncs records on an ext4
# disk, the disk judged after each kill (e2fsck, every fsynced record
# there). make test's hosted run does 5.
powercut: qemu
	YOLK_POWERCUT_RUNS=50 $(GO) test -count=1 -timeout 30m -v -run '^TestPowerCut$$' ./qemu/

# diskdiff runs TestDiskDifferential (qemu/diskdiff_test.go): a seeded
# program of file-system calls on yolk (microvm, 2 CPUs) and on Linux
# (Debian's generic kernel, pc, 2 CPUs; fetched into out/linuxref/kernel),
# each on its own copy of one ext4 image; the calls' results, e2fsck -fn
# on both images and the trees debugfs reads from them must agree. About
# 1.5 minutes under TCG; not in make test. DISKDIFF_SEED, DISKDIFF_OPS,
# DISKDIFF_BLOCK (4096); DISKDIFF_MMAP=0 leaves out the writes through
# mmap.
DISKDIFF_SEED  ?= 30
DISKDIFF_OPS   ?= 400
DISKDIFF_BLOCK ?= 4096
DISKDIFF_MMAP  ?= 1
diskdiff: qemu
	YOLK_DISKDIFF=1 YOLK_DISKDIFF_SEED=$(DISKDIFF_SEED) YOLK_DISKDIFF_OPS=$(DISKDIFF_OPS) \
	  YOLK_DISKDIFF_BLOCK=$(DISKDIFF_BLOCK) YOLK_DISKDIFF_MMAP=$(DISKDIFF_MMAP) \
	  $(GO) test -count=1 -timeout 20m -v -run '^TestDiskDifferential$$' ./qemu/

# diskbench runs issue 30's disk benchmarks (qemu/testdata/diskbench) on
# Linux (Debian's generic kernel, fetched into out/linuxref/kernel) and on
# yolk in one QEMU setup: pc, DISKBENCH_SMP CPUs, 256 MiB, TCG,
# virtio-blk-pci with cache=writeback, each boot on its own copy of one
# image (mkfs.ext4 -b 4096 -d of a tree holding a 32 MiB file of random
# bytes, 512 MiB); DISKBENCH_COUNT rounds, DISKBENCH_BUDGET per looped
# benchmark. Results, consoles and benchstat's comparison in
# out/diskbench/pc-smp<N>/. Not in make test (about 3 minutes a round
# under TCG: 18 for the default 6).
DISKBENCH_COUNT  ?= 6
DISKBENCH_SMP    ?= 2
DISKBENCH_BUDGET ?= 8s
DISKBENCH_OUT    := out/diskbench
DISKBENCH_RES    := $(DISKBENCH_OUT)/pc$(if $(filter-out 0 1,$(DISKBENCH_SMP)),-smp$(DISKBENCH_SMP))
diskbench: qemu
	rm -rf $(DISKBENCH_OUT)/tree $(DISKBENCH_OUT)/base.img
	mkdir -p $(DISKBENCH_OUT)/tree
	head -c 32M /dev/urandom > $(DISKBENCH_OUT)/tree/data
	mkfs.ext4 -q -F -b 4096 -L diskbench -d $(DISKBENCH_OUT)/tree $(DISKBENCH_OUT)/base.img 512M
	$(GO) run ./qemu/linuxref/cmd/linuxref -program ./qemu/testdata/diskbench -machine pc -smp $(DISKBENCH_SMP) -m 256M \
	  -count $(DISKBENCH_COUNT) -out $(DISKBENCH_OUT) -kerneldir out/linuxref/kernel -timeout 15m -quiet \
	  -disk $(DISKBENCH_OUT)/base.img:/mnt/bench -- -budget $(DISKBENCH_BUDGET) /mnt/bench
	$(GO) tool benchstat $(DISKBENCH_RES)/linux.txt $(DISKBENCH_RES)/yolk.txt | tee $(DISKBENCH_RES)/benchstat.txt

# images runs TestDiskImage's whole matrix (qemu/disk_test.go): examples/hello
# written by yolk image's builder and booted from each disk controller with
# each firmware, from GCE's archive and from the QCOW2 (12 boots, about 30 s
# under TCG). make test's hosted run boots the first of them only.
images: QEMU_NEEDED = $(QEMU_amd64)
images: qemu
	YOLK_DISK_MATRIX=all $(GO) test -count=1 -timeout 15m -v -run '^TestDiskImage$$' ./qemu/

# diskapps runs the applications on an ext4 disk that take minutes under
# TCG (qemu/sqlite_test.go: modernc.org/sqlite, its insert rates in Go's
# benchmark format for docs/disks.md; qemu/bbolt_test.go: go.etcd.io/bbolt,
# its put rates).
diskapps: qemu
	YOLK_DISK_APPS=1 YOLK_ACCEL=$(ACCEL) $(GO) test -count=1 -timeout 45m -v -run '^(TestDiskSQLite|TestDiskBbolt)$$' ./qemu/

# conformance runs the issue's standard-library packages with -short on the
# host (go test) and in the guest (yolk test) at -smp 1 and 2 and writes
# docs/conformance.md (raw outputs in out/conformance/); it fails if a test
# that passes on Linux fails on yolk without an allowed reason in
# docs/conformance-reasons.txt. About 20 minutes under TCG; not part of
# make test (make stdquick is its fast subset).
conformance: qemu
	$(GO) run ./cmd/conformance -accel $(ACCEL) -smp 1,2

# soak runs TestSoak (kernel/selftest/soak.go) for SOAK at SOAK_SMP CPUs
# on MACHINE (ARCH=arm64: virt): the system-call fuzzer, futex stress,
# GC pressure and signals together, the invariants checked at the end.
# SOAK_TIMEOUT bounds the boot (SOAK plus room for the checks). Not part
# of make test: run it on a quiet machine.
SOAK         ?= 30m
SOAK_SMP     ?= 4
SOAK_TIMEOUT ?= 45m
soak: qemu image
	mkdir -p out
	{ $(YOLK) run -accel $(ACCEL) -machine $(MACHINE) -smp $(SOAK_SMP) -timeout $(SOAK_TIMEOUT) -e YOLK_SOAK=$(SOAK) \
	  $(IMAGE) -run '^TestSoak$$' -timeout $(SOAK_TIMEOUT); echo $$? > out/soak.status; } | tee out/soak-$(MACHINE)-smp$(SOAK_SMP).txt
	exit $$(cat out/soak.status)

# load runs issue 33's load from the network at full size (qemu/load_test.go,
# docs/security.md): LOAD_CONNS (10,000) idle connections through port
# forwards, slow writers and readers for LOAD_HOLD seconds, every health
# check within LOAD_BOUND (1s), the pools back afterwards; and the SYN
# flood over a tap link (root). make test runs 1,000 connections.
# LOAD_PROFILE=DIR (absolute) keeps the guest's CPU profiles there.
# LOAD_NET: tap (the default as root) makes the load's connections and
# checks over a tap link, the host's kernel at the clients' end; user
# goes through QEMU's user network's port forwards, whose own polling of
# 10,000 host sockets delays checks by itself (docs/security.md).
LOAD_CONNS ?= 10000
LOAD_HOLD  ?= 30
LOAD_BOUND ?= 1s
FLOOD_RATE ?= 2000
LOAD_PROFILE ?=
LOAD_NET ?= $(if $(filter 0,$(shell id -u)),tap,user)
load: qemu
	mkdir -p out
	{ YOLK_LOAD_CONNS=$(LOAD_CONNS) YOLK_LOAD_HOLD=$(LOAD_HOLD) YOLK_LOAD_BOUND=$(LOAD_BOUND) YOLK_FLOOD_RATE=$(FLOOD_RATE) YOLK_LOAD_PROFILE=$(LOAD_PROFILE) YOLK_LOAD_NET=$(LOAD_NET) \
	  $(GO) test -count=1 -timeout 60m -v -run '^TestLoad(SYNFlood)?$$' ./qemu/ 2>&1; echo $$? > out/load.status; } | tee out/load.txt
	exit $$(cat out/load.status)

# wirefuzz is the wire as an attacker in the guest (qemu/wirefuzz_test.go,
# docs/security.md): WIRE_FRAMES (10⁶) frames from netsvc/wiregen, seed
# WIRE_SEED, written into a tap link (root) while the host's health checks
# go on; the guest's pools back afterwards. make test writes 5,000.
WIRE_FRAMES ?= 1000000
WIRE_SEED   ?= 1
wirefuzz: qemu
	mkdir -p out
	{ YOLK_WIRE_FRAMES=$(WIRE_FRAMES) YOLK_WIRE_SEED=$(WIRE_SEED) YOLK_WIRE_MINUTES=90 \
	  $(GO) test -count=1 -timeout 95m -v -run '^TestWireFuzzTap$$' ./qemu/ 2>&1; echo $$? > out/wirefuzz.status; } | tee out/wirefuzz.txt
	exit $$(cat out/wirefuzz.status)

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
LINUXREF_MACHINE := $(if $(filter command line environment,$(origin MACHINE)),$(MACHINE),$(if $(filter arm64,$(ARCH)),virt,pc))
LINUXREF_DIR := out/linuxref/$(LINUXREF_MACHINE)$(if $(filter-out 0 1,$(SMP)),-smp$(SMP))
# ARCH=arm64 compares on QEMU virt with Debian's arm64 cloud kernel, a
# foreign-architecture package: the first run adds the architecture to apt.
linuxref: qemu
	$(if $(filter arm64,$(ARCH)),dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64 && apt-get update; })
	$(GO) run ./qemu/linuxref/cmd/linuxref -arch $(ARCH) -machine $(LINUXREF_MACHINE) -smp $(SMP) -count $(LINUXREF_COUNT)
	$(GO) tool benchstat -filter .unit:sec/op $(LINUXREF_DIR)/linux.txt $(LINUXREF_DIR)/yolk.txt | tee $(LINUXREF_DIR)/benchstat.txt

image:
	mkdir -p out
	$(if $(filter pc,$(BOARD)),$(YOLK) build -board pc -o $(IMAGE) ./kernel/selftest,$(if $(BOARD),$(YOLK) build -board $(BOARD) -o $(IMAGE:.img=) ./kernel/selftest,$(YOLK) build -arch $(ARCH) -o $(IMAGE) ./kernel/selftest))

# qemu installs QEMU from Debian's packages when it is missing: ARCH's
# emulator when ARCH is given (command line or environment), else both
# (the guest suite boots x86 and arm64), and gdb-multiarch (make debug,
# TestDebugGDB); with amd64's, what the PC image needs (GRUB for BIOS and
# UEFI, grub-mkrescue's xorriso and mtools, OVMF: docs/pc-image.md; yolk
# image's grub-mkimage and qemu-img: docs/disk-image.md), e2fsprogs (yolk
# disk create's mkfs.ext4, e2fsck and debugfs: docs/disks.md), each
# checked by its program or file; as root directly, otherwise
# through sudo if it needs no password (sudo -n); failing both it prints
# the command to run. Debian's dnsmasq-base (the dnsmasq binary without its
# system service) for qemu.TestDHCPTap, which runs it on a tap link.
QEMU_amd64  = qemu-system-x86_64:qemu-system-x86 \
              grub-mkrescue:grub-common xorriso:xorriso mformat:mtools /usr/lib/grub/i386-pc:grub-pc-bin \
              /usr/lib/grub/x86_64-efi:grub-efi-amd64-bin /usr/share/qemu/OVMF.fd:ovmf \
              grub-mkimage:grub-common qemu-img:qemu-utils
QEMU_arm64  = qemu-system-aarch64:qemu-system-arm
QEMU_NEEDED = $(if $(filter pc,$(BOARD)),$(QEMU_amd64),$(if $(BOARD),$(QEMU_arm64),$(if $(filter command line environment,$(origin ARCH)),$(QEMU_$(ARCH)),$(QEMU_amd64) $(QEMU_arm64))))
# install is the shell loop that installs, for each BIN:PACKAGE pair in $(1),
# Debian's PACKAGE when BIN is missing (as root, or through sudo -n), or
# says the command to run.
install = for pair in $(1); do \
	  bin=$${pair%%:*}; pkg=$${pair\#\#*:}; \
	  { test -e $$bin || command -v $$bin; } >/dev/null 2>&1 && continue; \
	  echo "$$bin not found: installing Debian's $$pkg"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkg || exit 1; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    { sudo -n apt-get update && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkg; } || exit 1; \
	  else echo "run: sudo apt-get update && sudo apt-get install -y $$pkg"; exit 1; fi; \
	done

qemu:
	@$(call install,$(QEMU_NEEDED) gdb-multiarch:gdb-multiarch /usr/sbin/dnsmasq:dnsmasq-base /usr/sbin/mkfs.ext4:e2fsprogs)

# qemu-user: qemu-aarch64, for make hosted's arm64 run.
qemu-user:
	@$(call install,qemu-aarch64:qemu-user)

clean:
	rm -rf out
