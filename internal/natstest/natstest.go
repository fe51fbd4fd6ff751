// Package natstest starts a private NATS server with its MQTT gateway on
// 127.0.0.1 for interop tests: a second, independent broker whose MQTT
// differs from Mosquitto's and mochi's in ways mqplan must report (MQTT
// 3.1.1 only, a copy per matching subscription, no shared subscriptions).
// Tests skip, saying why, when nats-server is not installed, except in CI
// (CI set in the environment), where it must be: .ci/run installs it.
package natstest

import (
	"bytes"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/loopback"
)

// Version is the nats-server release .ci/run installs (go install
// github.com/nats-io/nats-server/v2@Version).
const Version = "v2.15.2"

// Binary returns the nats-server executable, or "" when it is not
// installed: on the PATH, or where go install puts it.
func Binary() string {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	gobin := os.Getenv("GOBIN")
	if gobin == "" {
		gobin = filepath.Join(build.Default.GOPATH, "bin")
	}
	p := filepath.Join(gobin, "nats-server")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// Start runs nats-server with JetStream (which its MQTT gateway needs) and
// an MQTT listener on free loopback ports until the test ends, and returns
// the MQTT listener's mqtt:// URL.
func Start(t testing.TB) string {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed, but CI must run the NATS interop tests: .ci/run installs it")
		}
		t.Skip("nats-server is not installed (go install github.com/nats-io/nats-server/v2@" + Version + "); skipping the NATS interop test")
	}
	dir := t.TempDir()
	mqttAddr := "127.0.0.1:" + strconv.Itoa(loopback.FreePort(t))
	conf := fmt.Sprintf(`listen: "127.0.0.1:%d"
server_name: "mqplan_test"
jetstream { store_dir: %q }
mqtt { listen: %q }
`, loopback.FreePort(t), filepath.Join(dir, "js"), mqttAddr)
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", mqttAddr, time.Second)
		if err == nil {
			c.Close()
			return "mqtt://" + mqttAddr
		}
		select {
		case <-exited:
			t.Fatalf("nats-server exited:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server did not listen on %s within 20s\n%s", mqttAddr, logs.String())
		}
	}
}
