package validate

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/types"
)

// ExampleJobUID stands for the uid the API server gives the Job, which a
// manifest cannot know: Check emulates the pods with it.
const ExampleJobUID = "0b0e1f7a-5c1d-4e0a-9f3b-2d6c8a4e1b00"

// VerdictCodes are mqplan's exit codes that carry a verdict (threshold
// failed, invalid plan, incomplete run, inconclusive run): each must fail
// the Job at once, never be retried.
var VerdictCodes = []int32{1, 2, 3, 4}

// Shard is one index's mqplan command line, read back from its argv.
type Shard struct {
	Index, Count int
	Coordinator  string
	RunID        string
	// TokenFile is --token-file: the run's token, from a Secret volume.
	TokenFile string
	Plan      string
	// Flags are every --name value pair, in order.
	Flags [][2]string
}

// ParseShardArgv reads `ENTRYPOINT run --flag value ... PLAN` as the
// sharded run's command line (issue 11): every flag takes a value
// (as --name value or --name=value), and one plan comes last.
func ParseShardArgv(argv []string) (*Shard, error) {
	if len(argv) < 2 || argv[1] != "run" {
		return nil, fmt.Errorf("argv %q: want ENTRYPOINT run ...", argv)
	}
	s := &Shard{Index: -1}
	rest := argv[2:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		name, value, eq := strings.Cut(strings.TrimLeft(rest[0], "-"), "=")
		if !eq {
			if len(rest) < 2 {
				return nil, fmt.Errorf("argv %q: --%s has no value", argv, name)
			}
			value, rest = rest[1], rest[1:]
		}
		rest = rest[1:]
		s.Flags = append(s.Flags, [2]string{name, value})
		switch name {
		case "shard":
			i, n, ok := strings.Cut(value, "/")
			var err1, err2 error
			s.Index, err1 = strconv.Atoi(i)
			s.Count, err2 = strconv.Atoi(n)
			if !ok || err1 != nil || err2 != nil {
				return nil, fmt.Errorf("argv %q: --shard %q is not I/N", argv, value)
			}
		case "coordinator":
			s.Coordinator = value
		case "run-id":
			s.RunID = value
		case "token-file":
			s.TokenFile = value
		}
	}
	if len(rest) != 1 {
		return nil, fmt.Errorf("argv %q: want one plan after the flags, got %q", argv, rest)
	}
	s.Plan = rest[0]
	return s, nil
}

// Check returns every way the bundle breaks what a sharded run needs, all
// at once. entrypoint is the image's ENTRYPOINT (ReadDockerfile).
func Check(b *Bundle, entrypoint []string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	job, svc := b.Job, b.Service
	spec := job.Spec
	pod := spec.Template.Spec

	// Every file beside the kustomization is part of it: a manifest left
	// out would silently not be applied.
	listed := map[string]bool{}
	for _, r := range b.Kustomization.Resources {
		listed[filepath.Clean(r)] = true
	}
	var generated []types.GeneratorArgs
	for _, g := range b.Kustomization.ConfigMapGenerator {
		generated = append(generated, g.GeneratorArgs)
	}
	for _, g := range b.Kustomization.SecretGenerator {
		generated = append(generated, g.GeneratorArgs)
	}
	for _, g := range generated {
		for _, f := range g.FileSources {
			_, file, ok := strings.Cut(f, "=")
			if !ok {
				file = f
			}
			listed[filepath.Clean(file)] = true
		}
	}
	entries, err := os.ReadDir(b.Dir)
	if err != nil {
		bad("%v", err)
	}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || name == "kustomization.yaml" || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		if !listed[name] {
			bad("%s is not in kustomization.yaml (neither a resource nor a generator's file)", name)
		}
	}

	n := int32(0)
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		bad("Job %s: completionMode must be Indexed (the index is the shard)", job.Name)
	}
	switch {
	case spec.Completions == nil || *spec.Completions < 1:
		bad("Job %s: completions must be set, at least 1", job.Name)
	case spec.Parallelism == nil || *spec.Parallelism != *spec.Completions:
		bad("Job %s: parallelism %v differs from completions %d: every shard must run at once, or the coordinator waits for shards that are not started", job.Name, deref(spec.Parallelism), *spec.Completions)
	default:
		n = *spec.Completions
	}
	if spec.BackoffLimit == nil || *spec.BackoffLimit != 0 {
		bad("Job %s: backoffLimit must be 0: a retried shard replays its load into a run that has moved on", job.Name)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		bad("Job %s: restartPolicy must be Never, got %q", job.Name, pod.RestartPolicy)
	}
	container := ""
	if len(pod.Containers) == 1 {
		container = pod.Containers[0].Name
	} else {
		bad("Job %s: want one container, got %d", job.Name, len(pod.Containers))
	}
	for _, code := range VerdictCodes {
		if a, _ := firstExitRule(spec.PodFailurePolicy, container, code); a != batchv1.PodFailurePolicyActionFailJob {
			bad("Job %s: exit code %d of container %s must fail the Job (podFailurePolicy FailJob), its first matching rule gives %q", job.Name, code, container, a)
		}
	}
	if sp := spec.SuccessPolicy; sp == nil || len(sp.Rules) != 1 || sp.Rules[0].SucceededIndexes == nil || *sp.Rules[0].SucceededIndexes != "0" ||
		(sp.Rules[0].SucceededCount != nil && *sp.Rules[0].SucceededCount != 1) {
		bad("Job %s: successPolicy must be the one rule succeededIndexes \"0\": the coordinator's exit carries the verdict", job.Name)
	}

	// The Service names the pods.
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		bad("Service %s: clusterIP must be None (headless): pod names resolve only through a headless Service", svc.Name)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		bad("Service %s: publishNotReadyAddresses must be true: the pods have no readiness probe, and shards dial the coordinator before it could be Ready", svc.Name)
	}
	if pod.Subdomain != svc.Name {
		bad("Job %s: subdomain %q must be the Service's name %q", job.Name, pod.Subdomain, svc.Name)
	}

	// Every index, as the kubelet would start it.
	var runID string // index 0's
	for i := 0; i < int(n); i++ {
		p, err := Emulate(b, PodOptions{Index: i, JobUID: ExampleJobUID, Entrypoint: entrypoint})
		if err != nil {
			bad("index %d: %v", i, err)
			continue
		}
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels)) {
			bad("Service %s: selector %v does not select pod %s (labels %v)", svc.Name, svc.Spec.Selector, p.Hostname, p.Labels)
		}
		s, err := ParseShardArgv(p.Argv)
		if err != nil {
			bad("index %d: %v", i, err)
			continue
		}
		if s.Index != i || s.Count != int(n) {
			bad("index %d: --shard %d/%d, want %d/%d: the index, and N = the Job's completions %d", i, s.Index, s.Count, i, n, n)
		}
		host, port, err := net.SplitHostPort(s.Coordinator)
		if want := job.Name + "-0." + svc.Name; err != nil || host != want {
			bad("index %d: --coordinator %q: want %s:PORT, the name of index 0's pod", i, s.Coordinator, want)
		} else if !servesPort(svc, pod.Containers[0], port) {
			bad("index %d: --coordinator port %s is not a port of Service %s reaching a containerPort", i, port, svc.Name)
		}
		switch {
		case s.RunID == "" || strings.Contains(s.RunID, "$("):
			bad("index %d: --run-id %q: want the same non-empty id on every pod", i, s.RunID)
		case i > 0 && s.RunID != runID:
			bad("index %d: --run-id %q differs from index 0's %q", i, s.RunID, runID)
		}
		if i == 0 {
			runID = s.RunID
		}
		if _, ok := p.File(s.Plan); !ok {
			bad("index %d: the plan %s is not a file of any mounted volume", i, s.Plan)
		}
		// The coordinator's port is reachable from the whole cluster:
		// without the run's token, mqplan refuses to listen beyond
		// loopback, and anyone could join the run.
		if s.TokenFile == "" {
			bad("index %d: no --token-file: the coordinator listens beyond loopback only with the run's token", i)
		} else if !secretFile(b, pod, pod.Containers[0], s.TokenFile) {
			bad("index %d: --token-file %s is not a file of a mounted Secret volume", i, s.TokenFile)
		}
		for _, a := range p.Argv {
			if strings.Contains(a, "$(") {
				bad("index %d: argument %q still has a $(VAR) that nothing defines", i, a)
			}
		}
		// mqplan takes every CPU of the node unless GOMAXPROCS says
		// otherwise: a shard must use the CPUs it is given.
		cpus := pod.Containers[0].Resources.Limits.Cpu()
		want := strconv.FormatInt((cpus.MilliValue()+999)/1000, 10)
		if got, ok := envValue(p.Env, "GOMAXPROCS"); !ok || got != want {
			bad("index %d: GOMAXPROCS %q (set %v), want %s, the CPU limit: mqplan otherwise runs a thread per CPU of the node", i, got, ok, want)
		}
	}

	// A shard is a process that must not be throttled into measuring
	// itself, nor run as root.
	for _, c := range pod.Containers {
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() ||
			c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			bad("container %s: set cpu and memory requests and limits", c.Name)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("container %s: readOnlyRootFilesystem must be true", c.Name)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("container %s: allowPrivilegeEscalation must be false", c.Name)
		}
		nonRoot := pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot
		if sc != nil && sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		if !nonRoot {
			bad("container %s: runAsNonRoot must be true", c.Name)
		}
	}
	return errs
}

// secretFile: name is a file of a Secret volume the container mounts (a
// token in a ConfigMap would be readable by whoever may read ConfigMaps).
func secretFile(b *Bundle, pod corev1.PodSpec, c corev1.Container, name string) bool {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(name, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			files, err := projectSecret(b, v.Secret)
			if _, has := files[rel]; err == nil && has {
				return true
			}
		}
	}
	return false
}

func envValue(env []corev1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// firstExitRule is the action of the first podFailurePolicy rule that
// matches container's exit code, and that rule's index, as the Job
// controller evaluates them (in order; an onExitCodes rule without
// containerName matches every container). No match is "" and -1 (the
// failure counts against backoffLimit).
func firstExitRule(p *batchv1.PodFailurePolicy, container string, code int32) (batchv1.PodFailurePolicyAction, int) {
	if p == nil {
		return "", -1
	}
	for i, r := range p.Rules {
		oe := r.OnExitCodes
		if oe == nil || (oe.ContainerName != nil && *oe.ContainerName != container) {
			continue
		}
		in := slices.Contains(oe.Values, code)
		if (oe.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) == in {
			return r.Action, i
		}
	}
	return "", -1
}

// servesPort: the Service has a port numbered port whose target is a
// port the container declares.
func servesPort(svc *corev1.Service, c corev1.Container, port string) bool {
	for _, sp := range svc.Spec.Ports {
		if strconv.Itoa(int(sp.Port)) != port {
			continue
		}
		target := sp.TargetPort
		if target.IntValue() == 0 && target.StrVal == "" {
			target = intstr.FromInt32(sp.Port) // the API server's default
		}
		for _, cp := range c.Ports {
			if target.IntValue() == int(cp.ContainerPort) || (target.StrVal != "" && target.StrVal == cp.Name) {
				return true
			}
		}
	}
	return false
}

func deref(p *int32) any {
	if p == nil {
		return "unset"
	}
	return *p
}
