package main

import (
	"golang.org/x/sys/unix"
)

// epoll_wait with more ready files than one call returns (the runtime's
// netpoller asks for 128; a program may ask for more): every ready file
// is reported, over as many calls as it takes, and each call returns at
// most maxevents. Before the fix, a wait for more than 128 events with
// more than 128 ready overran the kernel's batch (a kernel fault).

func init() { tests = append(tests, test{"TestEpollManyReady", testEpollManyReady}) }

func testEpollManyReady(t *T) {
	const n = 300
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(ep)
	fds := make(map[int32]bool)
	for i := 0; i < n; i++ {
		fd, err := unix.Eventfd(1, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK) // readable at once
		if err != nil {
			t.Fatalf("eventfd %d: %v", i, err)
		}
		defer unix.Close(fd)
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(fd)}); err != nil {
			t.Fatalf("epoll_ctl %d: %v", fd, err)
		}
		fds[int32(fd)] = false
	}
	events := make([]unix.EpollEvent, 512)
	seen := 0
	for calls := 0; seen < n && calls < 20; calls++ {
		k, err := unix.EpollWait(ep, events, 0)
		if err != nil {
			t.Fatalf("epoll_wait: %v", err)
		}
		if k > len(events) {
			t.Fatalf("epoll_wait returned %d events for %d asked", k, len(events))
		}
		for _, ev := range events[:k] {
			if done, ok := fds[ev.Fd]; !ok || done {
				t.Fatalf("epoll_wait: fd %d unknown or reported twice (one-shot)", ev.Fd)
			}
			fds[ev.Fd] = true
			seen++
		}
		if k == 0 {
			break
		}
	}
	if seen != n {
		t.Errorf("%d of %d ready eventfds reported", seen, n)
	}
}
