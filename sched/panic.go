package sched

// Fatal is the kernel's report-and-stop routine; the kernel sets it at boot.
var fatal func(msg string)

// SetFatal installs the kernel's fatal-error reporter (once, at boot).
func SetFatal(f func(msg string)) { fatal = f }

func panicNoNodes() { fatal("sched: ready-queue node arena exhausted") }
