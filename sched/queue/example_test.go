package queue_test

import (
	"fmt"
	"unsafe"

	"yolk/sched/queue"
)

// task is a scheduler's task. The queue's Item is its first field, so a
// dequeued *queue.Item converts back to the *task.
type task struct {
	queue.Item
	name string
}

func taskOf(it *queue.Item) *task { return (*task)(unsafe.Pointer(it)) }

// The scheduler's memory is static, as in the kernel: never on a goroutine
// stack, always alive. The arena holds tasks + queues + 2·CPUs nodes, the
// most the queues can ever take, so Enqueue cannot run out.
const ncpu = 1

var (
	tasks = [3]task{{name: "a"}, {name: "b"}, {name: "c"}}
	nodes [len(tasks) + 1 + 2*ncpu]queue.Node
	dom   queue.Domain
	ready queue.Queue
)

// yield gives up CPU cpu: it takes the next ready task and switches to it.
// The current task is not made ready here: the resumed task does that, in
// the switch finalizer, once cur is off the CPU.
func yield(cpu int, cur *task) *task {
	it, err := dom.Dequeue(cpu, &ready)
	if err != nil || it == nil {
		return cur // nothing else is ready: keep running
	}
	next := taskOf(it)
	// ... the context switch from cur to next goes here; next resumes and
	// runs the finalizer on its own stack, with the previous task:
	finishYield(cpu, cur)
	return next
}

// finishYield is the switch finalizer: the only place a task that gave up
// its CPU is put on a ready queue.
func finishYield(cpu int, prev *task) {
	if err := dom.Enqueue(cpu, &ready, &prev.Item); err != nil {
		fmt.Println("lost task", prev.name, err) // a kernel would report and halt
	}
}

// A round-robin scheduler on one CPU: the ready queue from a switch
// finalizer's point of view.
func Example_scheduler() {
	if err := dom.Init(ncpu, nodes[:]); err != nil {
		fmt.Println(err)
		return
	}
	if err := dom.InitQueue(&ready); err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; i < len(tasks); i++ {
		finishYield(0, &tasks[i]) // new tasks start ready
	}
	cur := &tasks[0]
	for range 5 {
		next := yield(0, cur)
		fmt.Println(cur.name, "->", next.name)
		cur = next
	}
	// Every task has taken one node, the queue one: from now on, none.
	fmt.Println("nodes taken:", dom.Stats().Taken)
	// Output:
	// a -> b
	// b -> c
	// c -> a
	// a -> b
	// b -> c
	// nodes taken: 4
}
