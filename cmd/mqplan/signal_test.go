package main

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startLongBinary starts the long plan in the built binary and waits
// until it publishes.
func startLongBinary(t *testing.T) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	var stdout bytes.Buffer
	cmd, stderr := startBinary(t, &stdout, "run", "testdata/cli/long.yaml")
	return cmd, &stdout, untilPublishing(t, stderr)
}

// TestStopSignals sends real signals to the built binary: the tests that
// need a process. SIGINT, SIGTERM and SIGHUP (a closed terminal or SSH
// session) each stop a run: the first one reports what was measured and
// exits 3, a second one exits at once; and SIGHUP stops `mqplan broker`
// cleanly. (TestInterrupt checks the same through a fake env.)
func TestStopSignals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sigs []syscall.Signal
		// report: the run's report must follow (a single signal).
		report bool
		limit  time.Duration
	}{
		{"one SIGINT: report, exit 3", []syscall.Signal{syscall.SIGINT}, true, 20 * time.Second},
		{"two SIGTERMs: exit 3 at once", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, false, 5 * time.Second},
		{"one SIGHUP: report, exit 3", []syscall.Signal{syscall.SIGHUP}, true, 20 * time.Second},
		{"two SIGHUPs: exit 3 at once", []syscall.Signal{syscall.SIGHUP, syscall.SIGHUP}, false, 5 * time.Second},
		{"SIGHUP then SIGINT: exit 3 at once", []syscall.Signal{syscall.SIGHUP, syscall.SIGINT}, false, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, stdout, lines := startLongBinary(t)
			for _, s := range tt.sigs {
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
			}
			if code := wait(t, cmd, tt.limit); code != 3 {
				t.Fatalf("exit %d, want 3", code)
			}
			for range lines {
			}
			if tt.report && !strings.Contains(stdout.String(), "INCOMPLETE") {
				t.Errorf("no report:\n%s", stdout)
			}
		})
	}
	t.Run("SIGHUP stops mqplan broker", func(t *testing.T) {
		cmd, stderr := startBinary(t, nil, "broker", "--listen", "127.0.0.1:0")
		_, rest := listening(t, stderr, 1)
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		tail, _ := io.ReadAll(rest)
		if code := wait(t, cmd, 10*time.Second); code != 0 || !strings.Contains(string(tail), "mqplan broker: received") {
			t.Fatalf("exit %d, want 0 with the closing counters: %s", code, tail)
		}
	})
}
