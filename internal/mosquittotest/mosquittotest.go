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
	"testing"
	"time"
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
	port := freePort(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mosquitto.conf")
	text := strings.ReplaceAll(string(conf), "{{LISTENER}}", "listener "+strconv.Itoa(port)+" 127.0.0.1")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Go restores the original open-file limit for child processes; a
	// connection-storm plan needs Mosquitto to have the hard limit.
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n "$(ulimit -Hn)" && exec "$0" -c "$1"`, bin, path)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Wait for the listener: Mosquitto gives no other sign that it is ready.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("mosquitto exited: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto did not listen on %s within 10s\n%s", addr, logs.String())
		}
	}
	return "mqtt://" + addr
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// repoRoot is the module root, found from this file's location.
func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
