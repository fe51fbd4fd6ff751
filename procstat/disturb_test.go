package procstat

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	cases := []struct {
		name, in string
		want, n  int64
		err      string
	}{
		{"fixture idle", "testdata/schedstat", 121016, 1, ""},
		{"fixture busy", "testdata/schedstat_busy", 1903554112, 20741, ""},
		{"two fields", "=1 2\n", 0, 0, "want 3 numbers"},
		{"negative", "=1 -2 3\n", 0, 0, "not a count"},
		{"text", "=1 x 3\n", 0, 0, "not a count"},
		{"bad slices", "=1 2 x\n", 0, 0, "timeslices"},
		{"empty", "=", 0, 0, "want 3 numbers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n, err := ParseSchedstat(input(t, c.in))
			check(t, got, err, c.want, c.err)
			if err == nil && n != c.n {
				t.Fatalf("timeslices = %d, want %d", n, c.n)
			}
		})
	}
}

func TestParsePressure(t *testing.T) {
	cases := []struct {
		name, in string
		want     int64
		err      string
	}{
		{"fixture", "testdata/pressure_cpu", 20219589, ""},
		{"some only", "testdata/pressure_cpu_old", 0, ""},
		{"no some", "=full avg10=0.00 total=5\n", 0, "no some line"},
		{"no total", "=some avg10=0.00\n", 0, "has no total"},
		{"bad total", "=some total=-1\n", 0, "not a count"},
		{"empty", "=", 0, "no some line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParsePressure(input(t, c.in))
			check(t, got, err, c.want, c.err)
		})
	}
}

// input is a fixture's bytes, or the text after "=".
func input(t *testing.T, in string) []byte {
	t.Helper()
	if s, ok := strings.CutPrefix(in, "="); ok {
		return []byte(s)
	}
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func check(t *testing.T, got int64, err error, want int64, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %d, %v; want %d", got, err, want)
	}
}

func FuzzParseSchedstat(f *testing.F) {
	f.Add([]byte("0 121016 1\n"))
	f.Add([]byte("1 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, n, err := ParseSchedstat(b); err == nil && (v < 0 || n < 0) {
			t.Fatalf("negative wait %d from %q", v, b)
		}
	})
}

func FuzzParsePressure(f *testing.F) {
	f.Add([]byte("some avg10=49.14 avg60=18.37 avg300=5.22 total=20219589\nfull total=0\n"))
	f.Add([]byte("some total="))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := ParsePressure(b); err == nil && v < 0 {
			t.Fatalf("negative total %d from %q", v, b)
		}
	})
}

// TestSelfWaitSumsThreads checks that the wait is every thread's, not the
// main thread's alone, and a change between samples.
func TestSelfWaitSumsThreads(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("task/1/schedstat", "5 1000 1\n")
	write("task/2/schedstat", "5 2000 1\n")
	write("cpu", "some avg10=0 total=100\nfull total=0\n")
	w := &SelfWait{tasks: filepath.Join(dir, "task"), pressurePath: filepath.Join(dir, "cpu")}
	q, _, err := w.readQueue()
	if err != nil || q != 3000 {
		t.Fatalf("queue = %d, %v; want 3000", q, err)
	}
	w.queue = q
	w.pressure, w.hasPressure = 100, true
	w.slices = 2
	write("task/1/schedstat", "5 501000 4\n")
	write("task/2/schedstat", "5 1002000 1\n")
	write("task/3/schedstat", "5 1000 2\n")
	write("cpu", "some avg10=0 total=350\nfull total=0\n")
	got, err := w.Sample()
	if err != nil {
		t.Fatal(err)
	}
	want := Wait{Queue: 1501000, Slices: 5, Pressure: 250 * time.Microsecond, HasPressure: true}
	if got != want {
		t.Fatalf("sample = %+v, want %+v", got, want)
	}
	if err := os.Remove(filepath.Join(dir, "cpu")); err != nil {
		t.Fatal(err)
	}
	got, err = w.Sample()
	if err != nil || got.HasPressure {
		t.Fatalf("without the pressure file: %+v, %v; want no pressure", got, err)
	}
}

// TestSelfWaitLive reads this process's own figures where there is a
// /proc.
func TestSelfWaitLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := NewSelfWait(); err == nil {
			t.Fatal("NewSelfWait succeeded without /proc")
		}
		return
	}
	w, err := NewSelfWait()
	if err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	if _, err := w.Sample(); err != nil {
		t.Fatal(err)
	}
}
