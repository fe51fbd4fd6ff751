package runner

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/procstat"
)

// TestGenSamples: on Linux every second of a run that has mqplan's CPU
// figure also has its own disturbance (the wait of its threads, its CPU
// as a share of GOMAXPROCS), read over the same window; elsewhere none.
func TestGenSamples(t *testing.T) {
	t.Parallel()
	st, _ := runWith(t, compile(t, e2ePlan(2, 1, 2*time.Second)), broker.Options{}, Options{})
	_, err := procstat.NewSelfWait()
	measured := 0
	for i, s := range st.Timeline {
		if s.Gen.Sampled != (s.Self.Sampled && err == nil) {
			t.Errorf("second %d: gen sampled %v, self sampled %v (schedstat: %v)", i, s.Gen.Sampled, s.Self.Sampled, err)
		}
		if !s.Gen.Sampled {
			continue
		}
		measured++
		procs := float64(runtime.GOMAXPROCS(0))
		if s.Gen.Wait < 0 || s.Gen.Delay < 0 || s.Gen.Delay > s.Gen.Wait || math.Abs(s.Gen.Busy*procs*100-s.Self.CPU) > 1e-9 {
			t.Errorf("second %d: gen %+v with self CPU %v%% of %v CPUs", i, s.Gen, s.Self.CPU, procs)
		}
	}
	if err == nil && measured == 0 {
		t.Errorf("no second measured the disturbance: %+v", st.Timeline)
	}
}
