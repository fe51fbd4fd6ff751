package report

import (
	"slices"
	"testing"
)

// TestThin: the chart thinning's aggregation rules, bucket by bucket:
// maximums and sums kept, means exact, nulls left out (a bucket of nulls
// stays null), a short last bucket aggregated alone.
func TestThin(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	show := func(vals []*float64) []any {
		out := make([]any, len(vals))
		for i, v := range vals {
			if v != nil {
				out[i] = *v
			}
		}
		return out
	}
	seven := []*float64{f(1), f(9), f(2), nil, nil, nil, f(4)}
	tests := []struct {
		name string
		in   []*float64
		size int
		agg  aggregate
		want []any
	}{
		{"size 1 keeps every value", seven, 1, aggMax, []any{1.0, 9.0, 2.0, nil, nil, nil, 4.0}},
		{"max keeps the peak", seven, 3, aggMax, []any{9.0, nil, 4.0}},
		{"min keeps the dip", seven, 3, aggMin, []any{1.0, nil, 4.0}},
		{"sum keeps every count", seven, 3, aggSum, []any{12.0, nil, 4.0}},
		{"mean of the values, nulls left out", []*float64{f(1), nil, f(2), f(10), f(20), f(30)}, 3, aggMean, []any{1.5, 20.0}},
		{"mean rounded to three decimals", []*float64{f(1), f(1), f(2)}, 3, aggMean, []any{1.333}},
		{"first is the bucket's start", []*float64{f(1), f(2), f(3), f(4), f(5)}, 2, aggFirst, []any{1.0, 3.0, 5.0}},
		{"empty", nil, 24, aggSum, []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(thinPtr(tt.in, tt.size, tt.agg)); !slices.Equal(got, tt.want) {
				t.Errorf("thinPtr(size %d) = %v, want %v", tt.size, got, tt.want)
			}
		})
	}
	t.Run("counts every second", func(t *testing.T) {
		if got, want := thinNum([]int64{3, 0, 0, 5, 1, 0, 0, 0}, 4, aggSum), []float64{8, 1}; !slices.Equal(got, want) {
			t.Errorf("sums %v, want %v", got, want)
		}
		if got, want := thinNum([]int{8, 7, 8, 8}, 2, aggMin), []float64{7, 8}; !slices.Equal(got, want) {
			t.Errorf("minimums %v, want %v", got, want)
		}
	})
}

func TestBucketSize(t *testing.T) {
	for _, tt := range []struct{ n, want int }{{0, 1}, {1, 1}, {maxChartPoints, 1}, {maxChartPoints + 1, 2}, {24 * 3600, 24}, {7 * 24 * 3600, 168}} {
		if got := bucketSize(tt.n); got != tt.want {
			t.Errorf("bucketSize(%d) = %d, want %d", tt.n, got, tt.want)
		}
		if got := (tt.n + bucketSize(tt.n) - 1) / bucketSize(tt.n); got > maxChartPoints {
			t.Errorf("%d seconds give %d points, more than %d", tt.n, got, maxChartPoints)
		}
	}
}
