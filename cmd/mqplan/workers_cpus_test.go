package main

import (
	"slices"
	"testing"
)

// TestWorkerCPUs: the children are confined only when, at one CPU each at
// least, they would use more CPUs than the run may; then to the first
// procs CPUs this process may use.
func TestWorkerCPUs(t *testing.T) {
	tests := []struct {
		name     string
		allowed  []int
		procs, n int
		want     []int
	}{
		{"2 workers, 1 CPU of 2 (a broker on this machine)", []int{0, 1}, 1, 2, []int{0}},
		{"2 workers, 2 CPUs: one each", []int{0, 1}, 2, 2, nil},
		{"1 worker", []int{0, 1}, 1, 1, nil},
		{"4 workers, 3 of 8 CPUs", []int{0, 1, 2, 3, 4, 5, 6, 7}, 3, 4, []int{0, 1, 2}},
		{"a taskset of CPUs 2 and 5, 1 CPU for 2 workers", []int{2, 5}, 1, 2, []int{2}},
		{"as many CPUs as procs: nothing to choose", []int{3}, 1, 2, nil},
		{"affinity unknown", nil, 1, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workerCPUs(tt.allowed, tt.procs, tt.n); !slices.Equal(got, tt.want) {
				t.Errorf("workerCPUs(%v, %d, %d) = %v, want %v", tt.allowed, tt.procs, tt.n, got, tt.want)
			}
		})
	}
}
