package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/testparallel"
)

// The built binary, for the few tests that need a real process: real
// signals (TestStopSignals) and a file the process itself opens
// (/dev/stdin in TestPlanReadBound). Every other test runs the commands
// in-process (inprocess_test.go).

// minParallel is how many parallel tests TestMain lets run at once at
// least.
const minParallel = 4

var (
	buildOnce sync.Once
	buildDir  string // removed by TestMain
	builtPath string
	buildErr  error
)

// TestMain runs every test from the repository root, where plans/ and
// testdata/ are, so that no test needs t.Chdir (which a parallel test
// may not call) and the tests that mostly wait on a broker or a timeline
// can run side by side. It also lets at least minParallel such tests run
// at once unless -test.parallel was given: the default is GOMAXPROCS, 2
// here, while these tests spend most of their time waiting, not on a CPU.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "cmd/mqplan tests: the repository root:", err)
		os.Exit(2)
	}
	testparallel.AtLeast(minParallel)
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binary returns the mqplan binary, built on first use (with the race
// detector when the tests have it).
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mqplan-cli")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		builtPath = filepath.Join(dir, "mqplan")
		args := []string{"build", "-o", builtPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, "./cmd/mqplan")...).CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: out}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtPath
}

// buildError is a failed go build, with its output.
type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

// startBinary starts mqplan with args in the repository root, its
// standard output to stdout (when not nil), and returns its standard
// error as a pipe. The process is killed when the test ends.
func startBinary(t *testing.T, stdout io.Writer, args ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stderr
}

// wait waits for the process to exit and returns its code.
func wait(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("still running %v after the signal", limit)
	}
	return -1
}
