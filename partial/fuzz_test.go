package partial

import (
	"bytes"
	"testing"
)

// FuzzParse: whatever a partial file holds, reading and merging it
// returns a result or an error, never a panic, and never allocates
// beyond the declared bounds (histogram geometry, shard count, sizes).
func FuzzParse(f *testing.F) {
	var good bytes.Buffer
	p := part(&testing.T{}, shardStats(10, 8, []int64{100, 900}), 0, 1, []int64{100, 900})
	if err := Write(&good, p); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add([]byte(`{"mqplan_partial":1}`))
	f.Add([]byte(`{"mqplan_partial":1,"shard":{"index":0,"count":1},"phases":[],"groups":[]}`))
	f.Add([]byte(`{"mqplan_partial":2}`))
	f.Add([]byte(`{"mqplan_partial":1,"shard":{"index":0,"count":1},"phases":[],"groups":[],"broker_apart":true,"cross":{"resent":2,"resent_counted":1,"fences":3,"fences_back":3,"monitor":74,"monitor_msgs":164,"monitor_batch":40,"mosquitto":true,"start_retained":true,"end_stale":false}}`))
	f.Add([]byte(`{"mqplan_partial":1,"shard":{"index":1,"count":2},"clock":{"offset_ns":-7000000,"uncertainty_ns":20000,"drift_ns":-5,"drift_uncertainty_ns":3,"ntp":{"synced":false,"max_error_ns":16000000000,"est_error_ns":0},"from_shards":[{"shard":0,"deliveries":3,"min_ns":-9},{"shard":1,"deliveries":0,"min_ns":0}]},"phases":[],"groups":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.json", data)
		if err != nil {
			return
		}
		m, err := Merge([]*File{file}, Options{AllowMissing: true})
		if err != nil {
			return
		}
		if m.Stats == nil || len(m.Stats.Phases) == 0 {
			t.Fatalf("merged without stats")
		}
	})
}
