package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"syscall"
)

// Sidecars is implemented by a Browser that can run helper processes
// inside its own confinement (a WebDriver server attached to it): on its
// network, as its user. Chromium's browsers implement it.
type Sidecars interface {
	// IsolatedNetwork reports whether the browser runs in a network
	// namespace of its own. Without one, ListenLoopback, DialLoopback and
	// StartSidecar use the host's network, where any local process can
	// reach what listens on loopback.
	IsolatedNetwork() bool
	// ListenLoopback opens a TCP listener on 127.0.0.1, port chosen by
	// the system, on the browser's network.
	ListenLoopback() (net.Listener, error)
	// DialLoopback connects to addr (host:port) on the browser's network.
	DialLoopback(ctx context.Context, addr string) (net.Conn, error)
	// StartSidecar starts cmd on the browser's network, as the browser's
	// user, with the browser's environment (its work dir as HOME, nothing
	// of quarry's) unless cmd.Env is set, in a process group of its own
	// that is killed with SIGKILL should quarry die. The caller waits for
	// it and stops it; the browser's Close kills it too when its command
	// line names the browser's work dir (SidecarDir).
	StartSidecar(cmd *exec.Cmd) error
	// SidecarDir returns a directory inside the browser's work dir that the
	// browser's user may write (its cache dir).
	SidecarDir() string
}

var _ Sidecars = (*chromiumBrowser)(nil)

// errBrowserExited refuses sidecars of a browser that has exited.
var errBrowserExited = errors.New("browser: the browser has exited")

// IsolatedNetwork implements Sidecars.
func (b *chromiumBrowser) IsolatedNetwork() bool { return b.netns != nil }

// ListenLoopback implements Sidecars.
func (b *chromiumBrowser) ListenLoopback() (net.Listener, error) {
	if b.exited() {
		return nil, errBrowserExited
	}
	if b.netns == nil {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var ln net.Listener
	err := b.netns.run(func() error {
		var err error
		// A socket belongs to the namespace of the thread that made it.
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("browser %s: listen: %w", b.id, err)
	}
	return ln, nil
}

// DialLoopback implements Sidecars.
func (b *chromiumBrowser) DialLoopback(ctx context.Context, addr string) (net.Conn, error) {
	if b.exited() {
		return nil, errBrowserExited
	}
	var d net.Dialer
	if b.netns == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	var conn net.Conn
	err := b.netns.run(func() error {
		var err error
		// The socket is made, and its connection started, on this
		// thread; the rest of the handshake needs no particular thread.
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("browser %s: dial %s: %w", b.id, addr, err)
	}
	return conn, nil
}

// StartSidecar implements Sidecars.
func (b *chromiumBrowser) StartSidecar(cmd *exec.Cmd) error {
	if b.exited() {
		return errBrowserExited
	}
	if cmd.Env == nil {
		cmd.Env = browserEnv(b.workDir)
	}
	if cmd.Dir == "" {
		cmd.Dir = b.workDir
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if b.switched {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: b.user.UID, Gid: b.user.GID, Groups: []uint32{}}
	}
	if b.netns == nil {
		return cmd.Start()
	}
	return b.netns.run(cmd.Start)
}

// SidecarDir implements Sidecars.
func (b *chromiumBrowser) SidecarDir() string { return b.workDir + "/.cache" }
