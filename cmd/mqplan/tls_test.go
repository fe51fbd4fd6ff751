package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTLSFilesArePlanErrors: broker.tls files that are missing or not PEM
// are plan errors (exit 2, positioned) for validate, explain and run, and
// for the emqtt commands' --cacertfile, found before anything connects.
func TestTLSFilesArePlanErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "tls.yaml")
	text := "name: tls\nbroker:\n  url: mqtts://127.0.0.1:1\n  tls: {ca: nope.pem}\n" +
		"groups:\n  - {name: pub, count: 1, publish: {topic: t, every: 1s}}\nduration: 1s\n"
	if err := os.WriteFile(plan, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := plan + ":4:13: broker.tls.ca: cannot read " + filepath.Join(dir, "nope.pem") + ": no such file or directory"
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"validate", []string{"validate", plan}, missing},
		{"explain", []string{"explain", plan}, missing},
		{"run", []string{"run", "--quiet", plan}, missing},
		{"run, CA not PEM by --set", []string{"run", "--quiet", "--set", "broker.tls.ca=" + notPEM, plan}, "--set: broker.tls.ca: " + notPEM + " holds no PEM certificate"},
		{"conn --cacertfile", []string{"conn", "-S", "--cacertfile", filepath.Join(dir, "nope.pem"), "-h", "127.0.0.1", "-p", "1", "--duration", "1s"},
			"--cacertfile: cannot read " + filepath.Join(dir, "nope.pem") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) || r.stdout != "" {
				t.Fatalf("exit %d, want 2 with %q and no report\nstdout:\n%s\nstderr:\n%s", r.code, tt.stderr, r.stdout, r.stderr)
			}
		})
	}
}

// TestBrokerOptions: a --listen address that cannot be listened on is a
// command-line error (exit 2); an --auth file with no users is accepted
// with a warning, since every client would be refused.
func TestBrokerOptions(t *testing.T) {
	tests := []struct {
		name   string
		listen string
		stderr string
	}{
		{"no port", "nonsense", "missing port in address"},
		{"port out of range", "127.0.0.1:99999", "invalid port"},
		{"not a host", "256.1.1.1:80", "256.1.1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, "broker", "--listen", tt.listen)
			if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("exit %d, want 2 with %q\nstderr:\n%s", r.code, tt.stderr, r.stderr)
			}
		})
	}
	t.Run("an --auth file with no users warns", func(t *testing.T) {
		auth := filepath.Join(t.TempDir(), "users")
		if err := os.WriteFile(auth, []byte("# nobody yet\n\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := startCmd(t, "broker", "--listen", "127.0.0.1:0", "--auth", auth)
		lines := make(chan string, 10)
		go func() {
			sc := bufio.NewScanner(cmd.stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var seen []string
		deadline := time.After(30 * time.Second)
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				seen = append(seen, l)
				if strings.Contains(l, "listening on") {
					break read
				}
			case <-deadline:
				t.Fatal("the broker did not start in 30s")
			}
		}
		want := "mqplan: warning: --auth " + auth + " lists no users"
		if len(seen) == 0 || !strings.HasPrefix(seen[0], want) {
			t.Errorf("stderr %q, want a first line starting %q", seen, want)
		}
		cmd.signal(t, syscall.SIGINT)
		code := cmd.wait(t, 10*time.Second)
		for range lines {
		}
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	})
}
