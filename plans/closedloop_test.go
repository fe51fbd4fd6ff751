package plans

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
)

// TestClosedLoopLoad checks what rate: max and inflight load into, and
// what they compile to: no schedule, the window per client, and
// expectations per message as for the open loop.
func TestClosedLoopLoad(t *testing.T) {
	p := loadFixture(t, filepath.Join(validDir, "closed_loop.yaml"))
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		group         string
		max           bool
		inflight      int
		count         int
		expectedPerMs int
	}{
		{group: "q1", max: true, inflight: 8, expectedPerMs: 1},
		{group: "q1default", max: true, inflight: defInflight, count: 100, expectedPerMs: 1},
		{group: "q0", max: true, inflight: 0, expectedPerMs: 1},
		{group: "open", max: false, inflight: 0, expectedPerMs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.group, func(t *testing.T) {
			var gp *GroupProgram
			for i := range prog.Groups {
				if prog.Groups[i].Name == tc.group {
					gp = &prog.Groups[i]
				}
			}
			if gp == nil {
				t.Fatalf("no group %s", tc.group)
			}
			g := p.Groups[gp.Index]
			if g.Publish.Max != tc.max || g.Publish.Inflight != tc.inflight || g.Publish.ClosedLoop() != tc.max {
				t.Errorf("plan: max %v inflight %d, want %v %d", g.Publish.Max, g.Publish.Inflight, tc.max, tc.inflight)
			}
			if gp.Max != tc.max || gp.Inflight != tc.inflight {
				t.Errorf("group program: max %v inflight %d, want %v %d", gp.Max, gp.Inflight, tc.max, tc.inflight)
			}
			for _, c := range prog.Clients[gp.First : gp.First+gp.Count] {
				pub := c.Publish
				if pub.Max != tc.max || pub.Inflight != tc.inflight || pub.Schedule.Count != tc.count || pub.Expected != tc.expectedPerMs {
					t.Errorf("%s: max %v inflight %d count %d expected %d", c.ID, pub.Max, pub.Inflight, pub.Schedule.Count, pub.Expected)
				}
				_, has := pub.Schedule.At(0)
				if has == tc.max {
					t.Errorf("%s: schedule has a first message: %v; a closed loop has no timetable, an open loop one", c.ID, has)
				}
				if n := pub.Schedule.Messages(0, time.Hour); tc.max && n != 0 {
					t.Errorf("%s: closed loop plans %d messages, want none (known after the run)", c.ID, n)
				}
			}
		})
	}
	if !prog.ClosedLoop() {
		t.Error("Program.ClosedLoop() is false")
	}
	// The phases count the open-loop group's messages only: 10/s over
	// warmup (1s) and steady (2s).
	var planned int64
	for _, ph := range prog.Phases {
		planned += ph.Messages
	}
	if planned != 30 {
		t.Errorf("planned messages %d, want 30 (the open group's; the closed loop's are known after the run)", planned)
	}
}

// TestClosedLoopErrors checks that every misuse of rate: max and
// inflight is reported, positioned, all at once.
func TestClosedLoopErrors(t *testing.T) {
	for _, name := range []string{"closed_loop", "closed_loop_no_duration"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(invalidDir, name+".yaml")
			_, err := Load(path, LoadOptions{})
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Load(%s) = %v, want Errors", path, err)
			}
			checkPositioned(t, es)
			golden.Check(t, filepath.Join(goldenDir, name+".txt"), []byte(err.Error()+"\n"))
		})
	}
}
