package validate

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
)

// PodEnd is how one index's pod ended: the exit code of its one
// container as the container runtime reports it (128+N for a process
// killed by signal N: 137 for SIGKILL, 143 for SIGTERM).
type PodEnd struct {
	Index    int
	ExitCode int32
}

// JobState is what the Job controller makes of the pods that ended so
// far. Until Done the Job is running; once Done the controller stops
// the pods still running (SIGTERM, then SIGKILL after the grace period),
// whichever way the Job ended.
type JobState struct {
	Done bool
	// Condition is batchv1.JobComplete or batchv1.JobFailed, with the
	// reason and message a controller of Kubernetes 1.33 puts on it.
	Condition batchv1.JobConditionType
	Reason    string
	Message   string
	// Decided is the index whose end decided the Job (-1 while running).
	Decided int
}

// The condition reasons the emulated Job ends with (k8s.io/api's
// batchv1 names some of them, not all).
const (
	ReasonSuccessPolicy    = "SuccessCriteriaMet"
	ReasonCompletions      = "CompletionsReached"
	ReasonPodFailurePolicy = "PodFailurePolicy"
	ReasonBackoffLimit     = "BackoffLimitExceeded"
)

// DecideJob is the state of an Indexed Job whose pods ended as ends says,
// in the order they ended: the first end that meets a successPolicy
// rule, reaches completions, matches a podFailurePolicy FailJob rule or
// exceeds backoffLimit ends the Job (what ends after it changes nothing).
// What the emulator cannot follow is an error, never a guess: a failure
// the Job would retry (a new pod for that index), the Ignore and
// FailIndex actions, backoffLimitPerIndex, and pod-condition rules, which
// no exit code meets (they are skipped: a process's end has no
// DisruptionTarget condition).
func DecideJob(job *batchv1.Job, ends []PodEnd) (JobState, error) {
	spec := job.Spec
	running := JobState{Decided: -1}
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		return running, fmt.Errorf("Job %s: only an Indexed Job is emulated", job.Name)
	}
	if spec.BackoffLimitPerIndex != nil {
		return running, fmt.Errorf("Job %s: backoffLimitPerIndex is not emulated", job.Name)
	}
	completions := 1
	if spec.Completions != nil {
		completions = int(*spec.Completions)
	}
	backoffLimit := 6 // the API server's default
	if spec.BackoffLimit != nil {
		backoffLimit = int(*spec.BackoffLimit)
	}
	container := ""
	if cs := spec.Template.Spec.Containers; len(cs) == 1 {
		container = cs[0].Name
	}
	succeeded := map[int]bool{}
	failed := 0
	for _, e := range ends {
		if e.Index < 0 || e.Index >= completions {
			return running, fmt.Errorf("Job %s: index %d ended, but completions is %d", job.Name, e.Index, completions)
		}
		if e.ExitCode == 0 {
			succeeded[e.Index] = true
			met, err := successMet(spec.SuccessPolicy, succeeded, completions)
			if err != nil {
				return running, fmt.Errorf("Job %s: %w", job.Name, err)
			}
			if met >= 0 {
				return JobState{Done: true, Condition: batchv1.JobComplete, Reason: ReasonSuccessPolicy, Decided: e.Index,
					Message: fmt.Sprintf("Matched rules at index %d", met)}, nil
			}
			if len(succeeded) == completions {
				return JobState{Done: true, Condition: batchv1.JobComplete, Reason: ReasonCompletions, Decided: e.Index,
					Message: "Reached expected number of succeeded pods"}, nil
			}
			continue
		}
		action, rule := firstExitRule(spec.PodFailurePolicy, container, e.ExitCode)
		switch action {
		case batchv1.PodFailurePolicyActionFailJob:
			return JobState{Done: true, Condition: batchv1.JobFailed, Reason: ReasonPodFailurePolicy, Decided: e.Index,
				Message: fmt.Sprintf("Container %s for pod %s-%d failed with exit code %d matching FailJob rule at index %d", container, job.Name, e.Index, e.ExitCode, rule)}, nil
		case "", batchv1.PodFailurePolicyActionCount:
			if failed++; failed > backoffLimit {
				return JobState{Done: true, Condition: batchv1.JobFailed, Reason: ReasonBackoffLimit, Decided: e.Index,
					Message: "Job has reached the specified backoff limit"}, nil
			}
			return running, fmt.Errorf("Job %s: index %d failed with exit code %d, which the Job retries (backoffLimit %d): a retry is not emulated", job.Name, e.Index, e.ExitCode, backoffLimit)
		default:
			return running, fmt.Errorf("Job %s: index %d's exit code %d matches podFailurePolicy rule %d, action %s: not emulated", job.Name, e.Index, e.ExitCode, rule, action)
		}
	}
	return running, nil
}

// successMet is the index of the first successPolicy rule the succeeded
// indexes meet, or -1: a rule's succeededIndexes must all have succeeded
// or, with succeededCount, that many of them; succeededCount alone is a
// count of any indexes.
func successMet(sp *batchv1.SuccessPolicy, succeeded map[int]bool, completions int) (int, error) {
	if sp == nil {
		return -1, nil
	}
	for i, r := range sp.Rules {
		var set []int
		if r.SucceededIndexes != nil {
			var err error
			if set, err = parseIndexes(*r.SucceededIndexes, completions); err != nil {
				return -1, fmt.Errorf("successPolicy rule %d: %w", i, err)
			}
		} else {
			for j := 0; j < completions; j++ {
				set = append(set, j)
			}
		}
		want := len(set)
		if r.SucceededCount != nil {
			want = int(*r.SucceededCount)
		}
		got := 0
		for _, j := range set {
			if succeeded[j] {
				got++
			}
		}
		if got >= want {
			return i, nil
		}
	}
	return -1, nil
}

// parseIndexes reads succeededIndexes: "0", "1,3-5", ascending intervals
// of indexes below completions.
func parseIndexes(s string, completions int) ([]int, error) {
	var out []int
	last := -1
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a <= last || b < a || b >= completions {
			return nil, fmt.Errorf("succeededIndexes %q: want ascending indexes and intervals below %d, like 0,2-3", s, completions)
		}
		for j := a; j <= b; j++ {
			out = append(out, j)
		}
		last = b
	}
	return out, nil
}
