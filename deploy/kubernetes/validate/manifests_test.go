package validate

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// The shipped deployment renders, decodes strictly and keeps every
// invariant of a sharded run.
func TestShippedDeployment(t *testing.T) {
	b := render(t, deployDir)
	for _, err := range Check(b, entrypoint(t)) {
		t.Error(err)
	}
	if got := *b.Job.Spec.Completions; got != 4 {
		t.Errorf("completions %d, want the 4 of mqplan-settings' shards", got)
	}
}

// What kustomize passes through but the API types do not have, and what
// kustomize itself refuses, are errors of Render.
func TestRenderIsStrict(t *testing.T) {
	tests := []struct {
		name  string
		edits map[string][2]string
		want  string
	}{
		{"a misspelt Job field", map[string][2]string{"job.yaml": {"  backoffLimit: 0\n", "  backoffLimit: 0\n  paralellism: 4\n"}},
			`unknown field "spec.paralellism"`},
		{"a misspelt container field", map[string][2]string{"job.yaml": {"          imagePullPolicy:", "          imagePulPolicy:"}},
			`unknown field "spec.template.spec.containers[0].imagePulPolicy"`},
		{"a misspelt Service field", map[string][2]string{"service.yaml": {"  publishNotReadyAddresses:", "  publishNotReadyAdresses:"}},
			`unknown field "spec.publishNotReadyAdresses"`},
		{"a string where the API has a number", map[string][2]string{"service.yaml": {"targetPort: 7070", "targetPort: {port: 7070}"}},
			"cannot unmarshal object into Go struct field ServicePort.spec.ports.targetPort"},
		{"a misspelt kustomization field", map[string][2]string{"kustomization.yaml": {"\nresources:", "\nresource:"}},
			`unknown field "resource"`},
		{"a shards value that is not a number", map[string][2]string{"kustomization.yaml": {"shards=4", "shards=four"}},
			"cannot decode !!str `four` as a !!int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(copyDeploy(t, tt.edits))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Render: %v, want an error with %q", err, tt.want)
			}
			t.Log(err)
		})
	}
}

// Without the token file a user makes, the deployment does not render:
// `kubectl apply -k` stops before it creates anything.
func TestRenderNeedsTheToken(t *testing.T) {
	dir := copyDeploy(t, nil)
	if err := os.Remove(dir + "/token"); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(dir); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("Render without the token file: %v, want an error naming it", err)
	}
}

// Each break of an invariant is found, named, and found alone (the
// shipped bundle has none, TestShippedDeployment).
func TestCheckFindsEachBreak(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	str := func(v string) *string { return &v }
	tests := []struct {
		name  string
		edits map[string][2]string // on a copy of the files, before rendering
		edit  func(b *Bundle)      // on the rendered objects
		want  string
	}{
		{name: "a manifest left out of the kustomization",
			edits: map[string][2]string{"extra.yaml": {"", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}},
			want:  "extra.yaml is not in kustomization.yaml"},
		{name: "not Indexed", edit: func(b *Bundle) { m := batchv1.NonIndexedCompletion; b.Job.Spec.CompletionMode = &m },
			want: "completionMode must be Indexed"},
		{name: "parallelism below completions", edit: func(b *Bundle) { b.Job.Spec.Parallelism = i32(2) },
			want: "parallelism 2 differs from completions 4"},
		{name: "completions not the shards the pods read", edit: func(b *Bundle) { b.Job.Spec.Completions, b.Job.Spec.Parallelism = i32(5), i32(5) },
			want: "/4, want "},
		{name: "retries", edit: func(b *Bundle) { b.Job.Spec.BackoffLimit = i32(1) }, want: "backoffLimit must be 0"},
		{name: "restarts", edit: func(b *Bundle) { b.Job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			want: "restartPolicy must be Never"},
		{name: "exit 3 not in the FailJob rule", edit: func(b *Bundle) {
			b.Job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = []int32{1, 2, 4}
		}, want: "exit code 3 of container mqplan must fail the Job"},
		{name: "exit 4 not in the FailJob rule", edit: func(b *Bundle) {
			b.Job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values = []int32{1, 2, 3}
		}, want: "exit code 4 of container mqplan must fail the Job"},
		{name: "an earlier rule ignores exit 1", edit: func(b *Bundle) {
			p := b.Job.Spec.PodFailurePolicy
			p.Rules = append([]batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{2, 3, 4}}}}, p.Rules...)
		}, want: `exit code 1 of container mqplan must fail the Job (podFailurePolicy FailJob), its first matching rule gives "Ignore"`},
		{name: "the FailJob rule names another container", edit: func(b *Bundle) {
			b.Job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.ContainerName = str("sidecar")
		}, want: "of container mqplan must fail the Job"},
		{name: "success on any index", edit: func(b *Bundle) { b.Job.Spec.SuccessPolicy.Rules[0].SucceededIndexes = str("0-3") },
			want: `successPolicy must be the one rule succeededIndexes "0"`},
		{name: "a Service with a cluster IP", edit: func(b *Bundle) { b.Service.Spec.ClusterIP = "" }, want: "clusterIP must be None"},
		{name: "only Ready pods published", edit: func(b *Bundle) { b.Service.Spec.PublishNotReadyAddresses = false },
			want: "publishNotReadyAddresses must be true"},
		{name: "a selector that misses the pods", edit: func(b *Bundle) { b.Service.Spec.Selector = map[string]string{JobNameLabel: "other"} },
			want: "does not select pod mqplan-"},
		{name: "another subdomain", edit: func(b *Bundle) { b.Job.Spec.Template.Spec.Subdomain = "shards" },
			want: `subdomain "shards" must be the Service's name "mqplan"`},
		{name: "a coordinator that is not index 0", edit: func(b *Bundle) {
			args := b.Job.Spec.Template.Spec.Containers[0].Args
			args[slices.Index(args, "mqplan-0.mqplan:7070")] = "mqplan-1.mqplan:7070"
		}, want: `--coordinator "mqplan-1.mqplan:7070": want mqplan-0.mqplan:PORT`},
		{name: "a coordinator port the Service does not serve", edit: func(b *Bundle) {
			args := b.Job.Spec.Template.Spec.Containers[0].Args
			args[slices.Index(args, "mqplan-0.mqplan:7070")] = "mqplan-0.mqplan:7071"
		}, want: "--coordinator port 7071 is not a port of Service mqplan"},
		{name: "a run id from a label the pods lack", edit: func(b *Bundle) {
			env := b.Job.Spec.Template.Spec.Containers[0].Env
			env[2].ValueFrom.FieldRef.FieldPath = "metadata.labels['run-id']"
		}, want: `--run-id "": want the same non-empty id on every pod`},
		{name: "a run id that differs per pod", edit: func(b *Bundle) {
			env := b.Job.Spec.Template.Spec.Containers[0].Env
			env[2].ValueFrom.FieldRef.FieldPath = "metadata.name"
		}, want: `differs from index 0's "mqplan-0-emul0"`},
		// The Job controller appends JOB_COMPLETION_INDEX after the
		// container's own env, so an env value cannot use it (args can).
		{name: "an env value using the index", edit: func(b *Bundle) {
			c := &b.Job.Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "PART", Value: "$(JOB_COMPLETION_INDEX)/$(MQPLAN_SHARDS)"})
			c.Args[slices.Index(c.Args, "$(JOB_COMPLETION_INDEX)/$(MQPLAN_SHARDS)")] = "$(PART)"
		}, want: `--shard "$(JOB_COMPLETION_INDEX)/4" is not I/N`},
		{name: "the plan outside the mounts", edit: func(b *Bundle) {
			args := b.Job.Spec.Template.Spec.Containers[0].Args
			args[len(args)-1] = "/etc/plan.yaml"
		}, want: "the plan /etc/plan.yaml is not a file of any mounted volume"},
		{name: "no token", edit: func(b *Bundle) {
			c := &b.Job.Spec.Template.Spec.Containers[0]
			i := slices.Index(c.Args, "--token-file")
			c.Args = slices.Delete(c.Args, i, i+2)
		}, want: "no --token-file: the coordinator listens beyond loopback only with the run's token"},
		{name: "the token outside a Secret", edit: func(b *Bundle) {
			args := b.Job.Spec.Template.Spec.Containers[0].Args
			args[slices.Index(args, "/token/token")] = "/plan/plan.yaml"
		}, want: "--token-file /plan/plan.yaml is not a file of a mounted Secret volume"},
		{name: "no GOMAXPROCS", edit: func(b *Bundle) {
			c := &b.Job.Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMAXPROCS" })
		}, want: `GOMAXPROCS "" (set false), want 2`},
		{name: "GOMAXPROCS from the request, not the limit", edit: func(b *Bundle) {
			c := &b.Job.Spec.Template.Spec.Containers[0]
			c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
			for _, e := range c.Env {
				if e.Name == "GOMAXPROCS" {
					e.ValueFrom.ResourceFieldRef.Resource = "requests.cpu"
				}
			}
		}, want: `GOMAXPROCS "1" (set true), want 2`},
		{name: "no memory limit", edit: func(b *Bundle) {
			delete(b.Job.Spec.Template.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory)
		},
			want: "set cpu and memory requests and limits"},
		{name: "a writable root", edit: func(b *Bundle) {
			f := false
			b.Job.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &f
		}, want: "readOnlyRootFilesystem must be true"},
		{name: "root allowed", edit: func(b *Bundle) { b.Job.Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil },
			want: "runAsNonRoot must be true"},
	}
	ep := entrypoint(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := render(t, copyDeploy(t, tt.edits))
			if tt.edit != nil {
				tt.edit(b)
			}
			errs := Check(b, ep)
			// One break, one kind of error (repeated per index for
			// what each pod gets wrong).
			ok := len(errs) > 0
			for _, err := range errs {
				ok = ok && strings.Contains(err.Error(), tt.want)
			}
			if !ok {
				t.Fatalf("Check: %v\nwant errors all with %q", errors.Join(errs...), tt.want)
			}
		})
	}
}

// The emulated pods of every index, for the shipped N and others set in
// the kustomization's one place: each runs its own shard of N against
// index 0, with the plan mounted where the argv names it.
func TestEmulateEveryIndex(t *testing.T) {
	plan, err := os.ReadFile(deployDir + "/plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const uid = "5b8f0c2e-3d4a-4c1b-9e7f-0a1b2c3d4e5f"
	for _, n := range []int{1, 3, 4} {
		t.Run("shards="+strconv.Itoa(n), func(t *testing.T) {
			b := render(t, copyDeploy(t, map[string][2]string{"kustomization.yaml": {"shards=4", "shards=" + strconv.Itoa(n)}}))
			if *b.Job.Spec.Completions != int32(n) || *b.Job.Spec.Parallelism != int32(n) {
				t.Fatalf("completions %d, parallelism %d, want %d", *b.Job.Spec.Completions, *b.Job.Spec.Parallelism, n)
			}
			for i := 0; i < n; i++ {
				p, err := Emulate(b, PodOptions{Index: i, JobUID: uid, Entrypoint: []string{"/mqplan"}})
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"/mqplan", "run", "--shard", strconv.Itoa(i) + "/" + strconv.Itoa(n),
					"--coordinator", "mqplan-0.mqplan:7070", "--run-id", uid, "--token-file", "/token/token",
					"--broker", "mqtt://mosquitto:1883", "/plan/plan.yaml"}
				if !reflect.DeepEqual(p.Argv, want) {
					t.Errorf("index %d: argv\n%q, want\n%q", i, p.Argv, want)
				}
				if p.Hostname != "mqplan-"+strconv.Itoa(i) || p.Subdomain != "mqplan" {
					t.Errorf("index %d: hostname %s.%s", i, p.Hostname, p.Subdomain)
				}
				last := p.Env[len(p.Env)-1]
				if last.Name != IndexEnv || last.Value != strconv.Itoa(i) {
					t.Errorf("index %d: last env %s=%s, want the controller's %s=%d", i, last.Name, last.Value, IndexEnv, i)
				}
				if got, ok := p.File("/plan/plan.yaml"); !ok || string(got) != string(plan) {
					t.Errorf("index %d: /plan/plan.yaml is not deploy/kubernetes/plan.yaml (found %v)", i, ok)
				}
				if got, ok := p.File("/token/token"); !ok || string(got) != testToken {
					t.Errorf("index %d: /token/token is not the token file the Secret was generated from (found %v)", i, ok)
				}
				dir := t.TempDir()
				local, err := p.Materialise(dir)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := os.ReadFile(local("/plan/plan.yaml")); err != nil || string(got) != string(plan) {
					t.Errorf("index %d: materialised plan: %v", i, err)
				}
				if local("mqplan-0.mqplan:7070") != "mqplan-0.mqplan:7070" {
					t.Errorf("index %d: local() rewrote an argument outside the mounts", i)
				}
			}
			if _, err := Emulate(b, PodOptions{Index: n, JobUID: uid, Entrypoint: []string{"/mqplan"}}); err == nil {
				t.Errorf("index %d of %d emulated, want an error", n, n)
			}
		})
	}
}

// The shipped plan is plans/1to1-qos1.yaml, as the kustomization and the
// README say (kustomize reads files inside its directory only, hence the
// copy; only the schema comment's relative path differs).
func TestPlanIsTheShippedOne(t *testing.T) {
	copied, err := os.ReadFile(deployDir + "/plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(repoRoot + "/plans/1to1-qos1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(shipped), "$schema=../docs/", "$schema=../../docs/", 1)
	if string(copied) != want {
		t.Errorf("deploy/kubernetes/plan.yaml differs from plans/1to1-qos1.yaml: copy it again (with the $schema path ../../docs/), or say which plan it is in kustomization.yaml and the README")
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "EMPTY": "", "B": "$(A)"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	tests := []struct{ name, in, want string }{
		{"a defined variable", "$(A)/4", "1/4"},
		{"two", "$(A)$(A)", "11"},
		{"an empty one", "x$(EMPTY)y", "xy"},
		{"an undefined one stays as written", "$(NOPE)/4", "$(NOPE)/4"},
		{"no recursion", "$(B)", "$(A)"},
		{"$$ escapes", "$$(A)", "$(A)"},
		{"$$$$ is two", "$$$$", "$$"},
		{"a lone $ at the end", "cost$", "cost$"},
		{"a $ before another character", "$A $x", "$A $x"},
		{"an unterminated reference", "$(A", "$(A"},
		{"an unterminated reference after a good one", "$(A)$(A", "1$(A"},
		{"no reference", "plain", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Expand(tt.in, lookup); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// kubectl's own kustomize (the one `kubectl apply -k` uses, often older
// than the library here) renders the same objects.
func TestKubectlKustomizeAgrees(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: the rendering is checked with kustomize's library only")
	}
	dir := copyDeploy(t, nil)
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	b := render(t, dir)
	docs := strings.Split(string(out), "\n---\n")
	if want := 2 + len(b.ConfigMaps) + len(b.Secrets); len(docs) != want {
		t.Fatalf("kubectl kustomize gave %d objects, the library %d", len(docs), want)
	}
	for _, doc := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var got, want any
		switch meta.Kind {
		case "Job":
			got, want = new(batchv1.Job), b.Job
		case "Service":
			got, want = new(corev1.Service), b.Service
		case "ConfigMap":
			cm := new(corev1.ConfigMap)
			if err := yaml.UnmarshalStrict([]byte(doc), cm); err != nil {
				t.Fatal(err)
			}
			got, want = cm, b.ConfigMaps[cm.Name]
		case "Secret":
			sec := new(corev1.Secret)
			if err := yaml.UnmarshalStrict([]byte(doc), sec); err != nil {
				t.Fatal(err)
			}
			got, want = sec, b.Secrets[sec.Name]
		default:
			t.Fatalf("kubectl kustomize gave a %s", meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), got); err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: kubectl kustomize and the library differ:\n%s", meta.Kind, doc)
		}
	}
}
