package validate

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// The shipped Job's outcome for each way its pods can end, as the Job
// controller decides it (the first decisive end wins).
func TestDecideJob(t *testing.T) {
	shipped := render(t, deployDir).Job
	noSuccessPolicy := shipped.DeepCopy()
	noSuccessPolicy.Spec.SuccessPolicy = nil
	retried := shipped.DeepCopy()
	retried.Spec.BackoffLimit = ptr(int32(1))
	ignore := shipped.DeepCopy()
	ignore.Spec.PodFailurePolicy.Rules[0].Action = batchv1.PodFailurePolicyActionIgnore
	badIndexes := shipped.DeepCopy()
	badIndexes.Spec.SuccessPolicy.Rules[0].SucceededIndexes = ptr("2-1")
	tests := []struct {
		name      string
		job       *batchv1.Job
		ends      []PodEnd
		running   bool
		condition batchv1.JobConditionType
		reason    string
		decided   int
		message   string
		wantErr   string
	}{
		{name: "nothing ended", job: shipped, running: true},
		{name: "the other shards done, the coordinator still judging", job: shipped,
			ends: []PodEnd{{1, 0}, {3, 0}, {2, 0}}, running: true},
		{name: "the coordinator passes: successPolicy", job: shipped,
			ends: []PodEnd{{1, 0}, {2, 0}, {0, 0}}, condition: batchv1.JobComplete, reason: ReasonSuccessPolicy, decided: 0},
		{name: "the coordinator fails a threshold: podFailurePolicy", job: shipped,
			ends: []PodEnd{{1, 0}, {0, 1}}, condition: batchv1.JobFailed, reason: ReasonPodFailurePolicy, decided: 0,
			message: "failed with exit code 1 matching FailJob rule at index 0"},
		{name: "a shard incomplete fails the Job before the coordinator ends", job: shipped,
			ends: []PodEnd{{3, 3}, {0, 3}}, condition: batchv1.JobFailed, reason: ReasonPodFailurePolicy, decided: 3,
			message: "pod mqplan-3 failed with exit code 3"},
		{name: "a shard killed: backoffLimit 0", job: shipped,
			ends: []PodEnd{{2, 137}, {0, 3}}, condition: batchv1.JobFailed, reason: ReasonBackoffLimit, decided: 2},
		{name: "without successPolicy every index must succeed", job: noSuccessPolicy,
			ends: []PodEnd{{0, 0}, {1, 0}, {2, 0}, {3, 0}}, condition: batchv1.JobComplete, reason: ReasonCompletions, decided: 3},
		{name: "a retry is not emulated", job: retried, ends: []PodEnd{{2, 137}}, wantErr: "a retry is not emulated"},
		{name: "Ignore is not emulated", job: ignore, ends: []PodEnd{{0, 1}}, wantErr: "action Ignore: not emulated"},
		{name: "an index the Job does not have", job: shipped, ends: []PodEnd{{4, 0}}, wantErr: "completions is 4"},
		{name: "succeededIndexes out of order", job: badIndexes, ends: []PodEnd{{0, 0}}, wantErr: `succeededIndexes "2-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecideJob(tt.job, tt.ends)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.running {
				if got.Done || got.Decided != -1 {
					t.Errorf("got %+v, want the Job still running", got)
				}
				return
			}
			if !got.Done || got.Condition != tt.condition || got.Reason != tt.reason || got.Decided != tt.decided || !strings.Contains(got.Message, tt.message) {
				t.Errorf("got %+v, want %s (%s) decided by index %d, message with %q", got, tt.condition, tt.reason, tt.decided, tt.message)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
