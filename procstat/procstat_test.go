package procstat

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    int64
		wantErr string
	}{
		{"plain", "42 (mosquitto) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 1000 200", 300, ""},
		{"name with spaces and parens", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1", 3, ""},
		{"no name", "7 a R 1", 0, "no command name"},
		{"too short", "7 (x) R 1 2 3", 0, "want at least 13"},
		{"negative", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 -1 2 0", 0, "not a tick count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.line), "/proc/7/stat")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStat = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    int64
		wantErr string
	}{
		{"rss", "Name:\tx\nVmPeak:\t 100 kB\nVmRSS:\t    2048 kB\nThreads: 1\n", 2048 * 1024, ""},
		{"kernel thread has none", "Name:\tkworker\nThreads: 1\n", 0, ""},
		{"bad unit", "VmRSS:\t 12 MB\n", 0, "not a size in kB"},
		{"bad number", "VmRSS:\t x kB\n", 0, "not a size in kB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.text), "/proc/7/status")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStatus = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestSelfCPU busies this process for a while and checks that the
// sampler sees it: CPU is measured, not made up.
func TestSelfCPU(t *testing.T) {
	s, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	x := 0
	for time.Since(start) < 300*time.Millisecond {
		x++
	}
	_ = x
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	// A busy loop of 300ms is near 100% of a core; a shared machine may
	// deschedule it, but never down to nothing.
	if got.CPU < 10 || got.CPU > 100*float64(runtimeCPUs()) {
		t.Errorf("CPU = %.1f%%, want a busy core", got.CPU)
	}
	if got.RSS < 1<<20 {
		t.Errorf("RSS = %d bytes, want more than 1 MB", got.RSS)
	}
}

func TestMissingPID(t *testing.T) {
	// PIDs are bounded by pid_max (at most 2^22): this one never exists.
	_, err := New(1 << 30)
	if err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("New(missing) = %v, want no such process", err)
	}
	if _, err := New(-1); err == nil {
		t.Fatal("New(-1) succeeded")
	}
}

func TestMosquitto(t *testing.T) {
	p := mosquittotest.StartProcess(t, mosquittotest.Options{})
	s, err := New(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if got.RSS < 1<<20 || got.CPU < 0 {
		t.Errorf("mosquitto sample = %+v, want RSS > 1 MB and CPU >= 0", got)
	}
	p.Kill()
	if _, err := s.Sample(); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("sample after kill = %v, want no such process", err)
	}
}

func TestFindProcess(t *testing.T) {
	// A copy of sleep under a name no other process has.
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	name := "mqpl" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = FindProcess(name)
	if err == nil || !strings.Contains(err.Error(), "no running process") {
		t.Fatalf("before start: %v, want no running process", err)
	}
	start := func() *exec.Cmd {
		c := exec.Command(bin, "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	one := start()
	pid, err := FindProcess(name)
	if err != nil || pid != one.Process.Pid {
		t.Fatalf("FindProcess = %d, %v; want %d", pid, err, one.Process.Pid)
	}
	start()
	_, err = FindProcess(name)
	if err == nil || !strings.Contains(err.Error(), "2 processes have that name") {
		t.Fatalf("two running: %v, want 2 processes", err)
	}
}

func runtimeCPUs() int { return runtime.NumCPU() }
