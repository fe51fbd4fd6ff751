// Package mosquittotest starts a private Mosquitto broker on 127.0.0.1 for
// interop tests. Tests skip, saying why, when mosquitto is not installed,
// except in CI (CI set in the environment), where it must be: .ci/run
// installs it.
package mosquittotest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/loopback"
)

// Binary returns the mosquitto executable, or "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto"
	}
	return ""
}

// Start runs Mosquitto with testdata/mosquitto/mosquitto.conf on a free
// loopback port until the test ends, and returns its mqtt:// URL.
func Start(t testing.TB) string {
	t.Helper()
	return StartWith(t, Options{}).MQTT
}

// Options asks for listeners beside the plain MQTT one.
type Options struct {
	// CA, Cert and Key add a TLS listener (mqtts://, and wss:// when
	// WebSocket is set); RequireCert asks clients for a certificate.
	CA, Cert, Key string
	RequireCert   bool
	// WebSocket adds a ws:// listener (and wss:// with TLS).
	WebSocket bool
	// Config holds extra mosquitto.conf lines (a message size limit, an
	// ACL file) for tests of how mqplan reports a broker's refusals.
	Config string
}

// URLs are the listeners of a started Mosquitto; a listener not asked
// for is "".
type URLs struct {
	MQTT, MQTTS, WS, WSS string
}

// StartWith is Start with the listeners opts asks for.
func StartWith(t testing.TB, opts Options) URLs {
	t.Helper()
	return StartProcess(t, opts).URLs
}

// Process is a running Mosquitto that a fault test can kill, pause,
// resume and start again on the same listeners.
type Process struct {
	URLs
	t      testing.TB
	bin    string
	conf   string
	addrs  []string
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *bytes.Buffer
}

// StartProcess is StartWith, returning the process to act on. It is
// killed (and resumed first, if paused) when the test ends.
func StartProcess(t testing.TB, opts Options) *Process {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto is not installed, but CI must run the interop tests: .ci/run installs it")
		}
		t.Skip("mosquitto is not installed (apt-get install mosquitto); skipping the Mosquitto interop test")
	}
	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var urls URLs
	var listeners []string
	var addrs []string
	listen := func(scheme string, websockets, tls bool) string {
		port := strconv.Itoa(loopback.FreePort(t))
		l := "listener " + port + " 127.0.0.1"
		if websockets {
			// socket_domain ipv4: otherwise libwebsockets ignores the
			// address and listens on every IPv6 and IPv4 interface.
			l += "\nprotocol websockets\nsocket_domain ipv4"
		}
		if tls {
			l += "\ncafile " + opts.CA + "\ncertfile " + opts.Cert + "\nkeyfile " + opts.Key +
				"\nrequire_certificate " + strconv.FormatBool(opts.RequireCert)
		}
		listeners = append(listeners, l)
		addrs = append(addrs, "127.0.0.1:"+port)
		u := scheme + "://127.0.0.1:" + port
		if websockets {
			u += "/mqtt"
		}
		return u
	}
	// The plain listener comes first and is always there: Mosquitto
	// 2.0.11 with libwebsockets 4 exits with "Unable to start any
	// listening sockets" when its only listeners are websockets ones.
	urls.MQTT = listen("mqtt", false, false)
	if opts.Cert != "" {
		// Mosquitto started as root drops to the mosquitto user, which
		// cannot read a test's private files: keep root for the test.
		listeners = append([]string{"user root"}, listeners...)
		urls.MQTTS = listen("mqtts", false, true)
	}
	if opts.WebSocket {
		urls.WS = listen("ws", true, false)
		if opts.Cert != "" {
			urls.WSS = listen("wss", true, true)
		}
	}
	path := filepath.Join(t.TempDir(), "mosquitto.conf")
	text := strings.ReplaceAll(string(conf), "{{LISTENER}}", strings.Join(listeners, "\n"))
	text += "\n" + opts.Config + "\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Process{URLs: urls, t: t, bin: bin, conf: path, addrs: addrs}
	p.start()
	t.Cleanup(p.Kill)
	return p
}

// start runs Mosquitto and waits until every listener accepts.
func (p *Process) start() {
	t := p.t
	t.Helper()
	// Go restores the original open-file limit for child processes; a
	// connection-storm plan needs Mosquitto to have the hard limit.
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n "$(ulimit -Hn)" && exec "$0" -c "$1"`, p.bin, p.conf)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when Mosquitto ends; exitErr says how.
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited, p.logs = cmd, exited, &logs
	p.mu.Unlock()
	fail := func() error { <-exited; return exitErr }
	for _, a := range p.addrs {
		waitListening(t, a, exited, fail, &logs)
	}
}

// PID is the running Mosquitto's process id (the shell that sets its
// file limit execs it, so the id is Mosquitto's own), for tests that
// read its CPU and memory.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Kill ends Mosquitto at once (SIGKILL, as a crash would) and waits
// until it has exited.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if sigCont != nil {
		_ = cmd.Process.Signal(sigCont) // a paused process dies too
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Pause stops Mosquitto (SIGSTOP): its sockets stay open, and nothing
// is read, written or acknowledged until Resume.
func (p *Process) Pause() { p.signal(sigStop) }

// Resume lets a paused Mosquitto go on (SIGCONT).
func (p *Process) Resume() { p.signal(sigCont) }

func (p *Process) signal(s os.Signal) {
	if s == nil {
		p.t.Fatalf("mosquitto cannot be paused or resumed on %s", runtime.GOOS)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Errorf("signal %v to mosquitto: %v", s, err)
	}
}

// Restart starts a killed Mosquitto again on the same listeners, with a
// fresh state (persistence is off): as a broker that crashed and was
// brought back.
func (p *Process) Restart() {
	p.t.Helper()
	p.start()
}

// waitListening waits until addr accepts TCP connections.
func waitListening(t testing.TB, addr string, exited <-chan struct{}, fail func() error, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("mosquitto exited: %v\n%s", fail(), logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto did not listen on %s within 10s\n%s", addr, logs.String())
		}
	}
}

// repoRoot is the module root, found from this file's location.
func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
