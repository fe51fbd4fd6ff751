package wait

import (
	"sync/atomic"
	"testing"
)

// TestUntilSeesAnotherGoroutine checks that Until returns once another
// goroutine makes the condition true.
func TestUntilSeesAnotherGoroutine(t *testing.T) {
	var flag atomic.Bool
	go flag.Store(true)
	Until(t, "the flag", flag.Load)
}

// fatalRecorder records Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

// TestUntilFailsAtTheDeadline checks that a condition that never holds
// fails the test with what was awaited, rather than hanging.
func TestUntilFailsAtTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits the whole Timeout")
	}
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != rec {
				t.Fatalf("Until did not fail: recovered %v", r)
			}
		}()
		Until(rec, "something that never happens", func() bool { return false })
	}()
	if rec.msg != "timed out waiting for %s" {
		t.Errorf("failed with %q", rec.msg)
	}
}
