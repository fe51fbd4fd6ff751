//go:build unix

package main

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputFiles runs `mqplan run` with --json, --out and --cpuprofile naming
// every kind of thing: bad names are refused (exit 2) before anything
// connects, standard output gets the JSON alone, and devices, FIFOs and
// links are written through, never replaced by a regular file.
func TestOutputFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const plan = "testdata/cli/pass.yaml"
	isJSON := func(t *testing.T, b []byte) {
		t.Helper()
		var doc struct{ Verdict string }
		if err := json.Unmarshal(b, &doc); err != nil || doc.Verdict != "PASS" {
			t.Errorf("not the JSON report (%v): %.200s", err, b)
		}
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a substring of standard error
		// fast: refused before the run, so no report at all.
		fast bool
		// reader, when set, reads the FIFO while mqplan runs.
		reader bool
		check  func(t *testing.T, r result)
	}{
		{name: "--json into a missing directory: 2 before the run", args: []string{"--json", filepath.Join(dir, "no", "r.json")},
			code: 2, stderr: "--json " + filepath.Join(dir, "no", "r.json") + ": the directory " + filepath.Join(dir, "no") + " does not exist", fast: true},
		{name: "--json naming a directory: 2 before the run", args: []string{"--json", dir},
			code: 2, stderr: "--json " + dir + ": is a directory", fast: true},
		{name: "--cpuprofile into a missing directory: 2 before the run", args: []string{"--cpuprofile", filepath.Join(dir, "no", "cpu.out")},
			code: 2, stderr: "--cpuprofile " + filepath.Join(dir, "no", "cpu.out") + ": the directory", fast: true},
		{name: "--cpuprofile -: 2, the profile is binary", args: []string{"--cpuprofile", "-"},
			code: 2, stderr: "name a file", fast: true},
		{name: "--json -: the JSON alone on standard output, the table on standard error", args: []string{"--json", "-"},
			code: 0, stderr: "PASS: 2 of 2 thresholds held",
			check: func(t *testing.T, r result) { isJSON(t, []byte(r.stdout)) }},
		{name: "--json /dev/stdout: the same", args: []string{"--json", "/dev/stdout"},
			code: 0, stderr: "PASS: 2 of 2 thresholds held",
			check: func(t *testing.T, r result) { isJSON(t, []byte(r.stdout)) }},
		{name: "--json /dev/full: 3, no space left, the device stays", args: []string{"--json", "/dev/full"},
			code: 3, stderr: "--json /dev/full: cannot write: no space left on device",
			check: func(t *testing.T, r result) {
				if fi, err := os.Lstat("/dev/full"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
					t.Errorf("/dev/full is no longer a device: %v %v", fi.Mode(), err)
				}
			}},
		{name: "--json through a link: the link stays, its target gets the report and keeps its mode", args: []string{"--json", link},
			code: 0,
			check: func(t *testing.T, r result) {
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Fatalf("the link was replaced: %v", err)
				}
				b, _ := os.ReadFile(real)
				isJSON(t, b)
				if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want 0640 (%v)", fi.Mode(), err)
				}
			}},
		{name: "--json into a FIFO: written through", args: []string{"--json", fifo}, code: 0, reader: true,
			check: func(t *testing.T, r result) {
				if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
					t.Errorf("the FIFO was replaced: %v", err)
				}
			}},
		{name: "--out without FORMAT=: 2 before the run", args: []string{"--out", filepath.Join(dir, "x.json")},
			code: 2, stderr: "want FORMAT=FILE", fast: true},
		{name: "--out with an unknown format: 2, naming the formats", args: []string{"--out", "pdf=" + filepath.Join(dir, "x.pdf")},
			code: 2, stderr: `unknown format "pdf": want one of json, table`, fast: true},
		{name: "--out into a missing directory: 2 before the run", args: []string{"--out", "json=" + filepath.Join(dir, "no", "r.json")},
			code: 2, stderr: "--out json=" + filepath.Join(dir, "no", "r.json") + ": the directory", fast: true},
		{name: "two outputs to standard output: 2", args: []string{"--json", "-", "--out", "table=-"},
			code: 2, stderr: "--json - and --out table=- both write to standard output", fast: true},
		{name: "two outputs to one file: 2", args: []string{"--json", filepath.Join(dir, "same"), "--out", "table=" + filepath.Join(dir, "same")},
			code: 2, stderr: "write the same file", fast: true},
		{name: "two outputs to one file named two ways: 2", args: []string{"--json", filepath.Join(dir, "same"), "--out", "table=" + dir + "/./x/../same"},
			code: 2, stderr: "write the same file", fast: true},
		{name: "an output through a link to another output: 2", args: []string{"--json", real, "--out", "md=" + link},
			code: 2, stderr: "write the same file", fast: true},
		{name: "an output over the CPU profile: 2", args: []string{"--cpuprofile", filepath.Join(dir, "cp.out"), "--out", "json=" + filepath.Join(dir, "cp.out")},
			code: 2, stderr: "would replace --cpuprofile", fast: true},
		{name: "--out json=- and --out table=FILE: both written", args: []string{"--out", "json=-", "--out", "table=" + filepath.Join(dir, "t.txt")},
			code: 0, stderr: "PASS: 2 of 2 thresholds held",
			check: func(t *testing.T, r result) {
				isJSON(t, []byte(r.stdout))
				b, err := os.ReadFile(filepath.Join(dir, "t.txt"))
				if err != nil || !strings.Contains(string(b), "\nPASS: 2 of 2 thresholds held") {
					t.Errorf("table file: %v\n%s", err, b)
				}
			}},
		{name: "--cpuprofile into a file: written whole", args: []string{"--cpuprofile", filepath.Join(dir, "cpu.out")}, code: 0,
			check: func(t *testing.T, r result) {
				if fi, err := os.Stat(filepath.Join(dir, "cpu.out")); err != nil || fi.Size() == 0 {
					t.Errorf("no profile: %v", err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			if tt.reader {
				go func() {
					f, err := os.Open(fifo)
					if err != nil {
						got <- nil
						return
					}
					defer f.Close()
					b, _ := io.ReadAll(f)
					got <- b
				}()
			}
			r := runCmd(t, append(append([]string{"run", "--quiet"}, tt.args...), plan)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("exit %d, want %d with %q on stderr\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.stderr, r.stdout, r.stderr)
			}
			if tt.fast && r.stdout != "" {
				t.Errorf("not refused before the run:\n%s", r.stdout)
			}
			if tt.reader {
				select {
				case b := <-got:
					isJSON(t, b)
				case <-time.After(time.Minute):
					t.Fatal("the FIFO's reader got nothing")
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// endless is standard input that never ends, like `yes`.
type endless struct{}

func (endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = "y\n"[i%2]
	}
	return len(b), nil
}

// TestPlanReadBound: a plan that never ends is refused at the 4 MiB
// limit with one line, exit 2, instead of growing without bound.
func TestPlanReadBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		stdin io.Reader
		file  string // named in the message
		// binary runs the built binary: /dev/stdin is a file the
		// process opens, its own standard input, not the env's.
		binary bool
	}{
		{"validate /dev/zero", []string{"validate", "/dev/zero"}, nil, "/dev/zero", false},
		{"yes | validate /dev/stdin", []string{"validate", "/dev/stdin"}, endless{}, "/dev/stdin", true},
		{"yes | run -", []string{"run", "-"}, endless{}, "-", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r result
			if tt.binary {
				cmd := exec.Command(binary(t), tt.args...)
				cmd.Stdin = tt.stdin
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cmd.Process.Kill() })
				r.code = wait(t, cmd, 30*time.Second)
				r.stderr = stderr.String()
			} else {
				c := startCmdWith(t, cmdOpts{stdin: tt.stdin}, tt.args...)
				r.code = c.wait(t, 30*time.Second)
				r.stderr = c.stderr.String()
			}
			want := tt.file + ":1:1: the plan is larger than the limit of 4 MiB (4194304 bytes): is this the right file?"
			if r.code != 2 || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, want 2 and %q\nstderr:\n%.500s", r.code, want, r.stderr)
			}
		})
	}
}
