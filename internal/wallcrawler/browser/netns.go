package browser

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// netns is the network namespace of one browser: its only interface is
// its own loopback, and on it listens the browser's one way out, a port
// of quarry's egress proxy. Nothing of the host's network (quarry's API
// and DynamoDB endpoint, PostgreSQL, other browsers, the host's
// addresses) is reachable from inside.
type netns struct {
	file   *os.File     // the namespace (/proc/thread-self/ns/net): holds it
	egress net.Listener // 127.0.0.1:<port> inside the namespace
}

// newNetns makes a network namespace with loopback up and a listener on
// it. It needs CAP_SYS_ADMIN.
func newNetns() (*netns, error) {
	var ns netns
	err := onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		ns.file = f
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("loopback up: %w", err)
		}
		// A socket belongs to the namespace of the thread that made it.
		ns.egress, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("browser: network namespace: %w", err)
	}
	return &ns, nil
}

// run runs f (which starts a process: cmd.Start) on a thread inside the
// namespace, so that what f forks is born in it.
func (ns *netns) run(f func() error) error {
	return onLockedThread(func() error {
		if err := setns(ns.file); err != nil {
			return fmt.Errorf("browser: enter network namespace: %w", err)
		}
		return f()
	})
}

// Close releases the namespace's listener and handle; the namespace ends
// when its last process does.
func (ns *netns) Close() {
	if ns.egress != nil {
		_ = ns.egress.Close()
	}
	if ns.file != nil {
		_ = ns.file.Close()
	}
}

// onLockedThread runs f on a thread of its own and then returns the
// thread to the network namespace it started in. A thread that cannot be
// returned, or whose niceness f could not restore (errThreadNiced), is not
// given back to the Go runtime: it ends with its goroutine, so no other
// goroutine ever runs in a browser's namespace or at a browser's priority.
func onLockedThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		ferr := f()
		if errors.Is(ferr, errThreadNiced) {
			errc <- ferr
			return // the thread stays locked and ends with this goroutine
		}
		if err := setns(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("return to the host's network namespace: %w", err))
			return // the thread stays locked and ends with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setns moves the calling thread into the network namespace ns.
func setns(ns *os.File) error {
	return unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
}

// loopbackUp brings up the loopback interface of the calling thread's
// network namespace (a new namespace has it down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// probeNetns reports whether quarry can give browsers network namespaces
// of their own, and why not.
func probeNetns() (ok bool, reason string) {
	ns, err := newNetns()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return false, "quarry lacks CAP_SYS_ADMIN (run it as root, or grant the capability)"
		}
		return false, err.Error()
	}
	ns.Close()
	return true, ""
}
