package procstat

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/wait"
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
		{"sleeping", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 4 2 0", 6, ""},
		{"zombie", "7 (x) Z 1 7 7 0 -1 0 0 0 0 0 4 2 0", 0, "no such process: it exited and is a zombie"},
		{"zombie named Z", "7 (a) Z) Z 1 7 7 0 -1 0 0 0 0 0 4 2 0", 0, "zombie"},
		{"dead", "7 (x) X 1 7 7 0 -1 0 0 0 0 0 4 2 0", 0, "no such process: it exited"},
		{"dead before Linux 3.14", "7 (x) x 1 7 7 0 -1 0 0 0 0 0 4 2 0", 0, "no such process: it exited"},
		{"running, named like a zombie", "7 (Z) R 1 7 7 0 -1 0 0 0 0 0 4 2 0", 6, ""},
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
	for time.Since(start) < MinCPUWindow+100*time.Millisecond {
		x++
	}
	_ = x
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	// A busy loop of 600ms (longer than MinCPUWindow) is near 100% of a core; a shared machine may
	// deschedule it, but never down to nothing.
	if !got.HasCPU || got.CPU < 10 || got.CPU > 100*float64(runtimeCPUs()) {
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

// fakeProc is a process directory with the given CPU ticks and RSS, as
// /proc/PID/stat and /proc/PID/status show them.
func fakeProc(t *testing.T, dir string, ticks int64, rssKB int64) {
	t.Helper()
	stat := fmt.Sprintf("42 (broker) S 1 42 42 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 100 1000 200\n", ticks)
	status := fmt.Sprintf("Name:\tbroker\nState:\tS (sleeping)\nVmRSS:\t%d kB\n", rssKB)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCPUWindow reads a fake /proc entry on an injected clock: a window
// shorter than MinCPUWindow (a run's last, partial second) gives no CPU
// figure, however few ticks it saw, and its ticks count in the next
// window, so that no CPU time is lost; RSS is read every time.
func TestCPUWindow(t *testing.T) {
	type step struct {
		after  time.Duration // since the previous sample
		ticks  int64         // utime+stime now (cumulative)
		hasCPU bool
		cpu    float64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"whole seconds", []step{{time.Second, 50, true, 50}, {time.Second, 150, true, 100}}},
		{"one tick in a 30ms last window", []step{{time.Second, 20, true, 20}, {30 * time.Millisecond, 21, false, 0}}},
		{"just under the minimum", []step{{MinCPUWindow - time.Nanosecond, 1, false, 0}}},
		{"at the minimum", []step{{MinCPUWindow, 1, true, 2}}},
		{"a short window folds into the next", []step{
			{200 * time.Millisecond, 10, false, 0},
			{800 * time.Millisecond, 40, true, 40},   // 40 ticks over the whole second
			{time.Second, 40, true, 0},               // idle
			{100 * time.Millisecond, 41, false, 0},   // a late snapshot's short window
			{1900 * time.Millisecond, 80, true, 20}}, // 40 ticks over 2s
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fakeProc(t, dir, 0, 2048)
			clock := time.Unix(1_000_000, 0)
			s := &Sampler{pid: 42, dir: dir, first: true, now: func() time.Time { return clock }}
			if got, err := s.Sample(); err != nil || got.HasCPU {
				t.Fatalf("first sample = %+v, %v; want no CPU figure", got, err)
			}
			for i, st := range tt.steps {
				clock = clock.Add(st.after)
				fakeProc(t, dir, st.ticks, 2048+int64(i))
				got, err := s.Sample()
				if err != nil {
					t.Fatal(err)
				}
				if got.HasCPU != st.hasCPU || got.CPU < st.cpu-1e-9 || got.CPU > st.cpu+1e-9 {
					t.Errorf("step %d (%v later, %d ticks): CPU %.3f (has %v), want %.3f (has %v)", i, st.after, st.ticks, got.CPU, got.HasCPU, st.cpu, st.hasCPU)
				}
				if want := (2048 + int64(i)) * 1024; got.RSS != want {
					t.Errorf("step %d: RSS %d, want %d", i, got.RSS, want)
				}
			}
		})
	}
}

// procState is the state letter of /proc/PID/stat, "" when unreadable.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if f := strings.Fields(string(b[i+1:])); i >= 0 && len(f) > 0 {
		return f[0]
	}
	return ""
}

// TestZombie samples a real child process that exits while the test
// holds off reaping it: from the sample where it is a zombie it is gone
// (ErrGone), never read as a live process with no memory and no CPU; a
// sampler cannot be started on it either.
func TestZombie(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := os.StartProcess(bin, []string{"sleep", "60"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = p.Kill()
			_, _ = p.Wait()
		}
	})
	s, err := New(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sample(); err != nil {
		t.Fatalf("sample of a running child: %v", err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not reaped (no Wait yet): the child stays a zombie.
	wait.Until(t, "the child to be a zombie", func() bool { return procState(p.Pid) == "Z" })
	got, err := s.Sample()
	if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "zombie") {
		t.Errorf("sample of a zombie = %+v, %v; want ErrGone naming the zombie", got, err)
	}
	if _, err := New(p.Pid); !errors.Is(err, ErrGone) {
		t.Errorf("New on a zombie: %v, want ErrGone", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	reaped = true
	if _, err := s.Sample(); !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("sample once reaped: %v, want no such process", err)
	}
}
