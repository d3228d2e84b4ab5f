package browser

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Linux keeps a niceness per thread, and a process forked by a thread
// starts with that thread's niceness; every thread and process it starts
// inherits it in turn. A browser that must start at a lower CPU priority is
// therefore forked from a thread whose niceness was raised for the fork and
// restored right after, so that none of its processes ever runs at the
// normal priority and no other goroutine runs at the lowered one.

// maxNice is the highest (least favoured) niceness on Linux.
const maxNice = 19

// errThreadNiced marks a thread whose niceness could not be restored: it
// must not return to the Go runtime (onLockedThread lets it end with its
// goroutine).
var errThreadNiced = errors.New("thread niceness not restored")

// threadNice returns the niceness of the calling thread.
func threadNice() (int, error) {
	// The raw system call answers 20 - niceness (1..40).
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return 0, fmt.Errorf("getpriority: %w", err)
	}
	return 20 - prio, nil
}

// startNicer starts cmd by more niceness than the calling thread has. It
// must run on a locked thread; when the thread's own niceness cannot be
// restored afterwards, the started process group is killed and the error
// wraps errThreadNiced.
func startNicer(cmd *exec.Cmd, by int) error {
	base, err := threadNice()
	if err != nil {
		return err
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, 0, min(base+by, maxNice)); err != nil {
		return fmt.Errorf("lower the priority to start the browser: %w", err)
	}
	startErr := cmd.Start()
	if err := unix.Setpriority(unix.PRIO_PROCESS, 0, base); err != nil {
		if startErr == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
		return fmt.Errorf("%w: restore niceness %d: %w", errThreadNiced, base, err)
	}
	return startErr
}

// onOwnThread runs f on a locked thread of its own, which returns to the Go
// runtime afterwards unless f's error wraps errThreadNiced.
func onOwnThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := f()
		if !errors.Is(err, errThreadNiced) {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// canRestorePriority reports whether quarry may give a process it started
// at a higher niceness its own niceness back (root, CAP_SYS_NICE or a high
// enough RLIMIT_NICE), by trying it on a thread of its own.
func canRestorePriority() bool {
	err := onOwnThread(func() error {
		base, err := threadNice()
		if err != nil {
			return err
		}
		if base >= maxNice {
			return errors.New("already at the lowest priority")
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, base+1); err != nil {
			return err
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, base); err != nil {
			return fmt.Errorf("%w: %w", errThreadNiced, err)
		}
		return nil
	})
	return err == nil
}

// setGroupNice sets the niceness of every thread of every process in
// process group pgid.
func setGroupNice(pgid, nice int) error {
	if pgid <= 0 {
		return fmt.Errorf("process group %d", pgid)
	}
	if err := unix.Setpriority(unix.PRIO_PGRP, pgid, nice); err != nil {
		return fmt.Errorf("setpriority of process group %d to %d: %w", pgid, nice, err)
	}
	return nil
}
