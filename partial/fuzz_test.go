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
