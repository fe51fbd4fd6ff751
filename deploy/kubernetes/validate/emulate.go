package validate

import (
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The names the Job controller gives an Indexed Job's pods (Kubernetes
// 1.27 and later put the batch.kubernetes.io/ labels on pods; 1.28 and
// later the completion-index label).
const (
	IndexEnv        = "JOB_COMPLETION_INDEX"
	IndexAnnotation = "batch.kubernetes.io/job-completion-index"
	IndexLabel      = "batch.kubernetes.io/job-completion-index"
	JobNameLabel    = "batch.kubernetes.io/job-name"
	JobUIDLabel     = "batch.kubernetes.io/controller-uid"
)

// PodOptions are what the API server and the Job controller decide and a
// manifest cannot: which index, the Job's uid, the namespace.
type PodOptions struct {
	Index     int
	JobUID    string
	Namespace string
	// Entrypoint is the image's ENTRYPOINT, used when the container sets
	// no command (see ReadDockerfile).
	Entrypoint []string
}

// Pod is what one index of the Job runs: the pod's identity as the Job
// controller sets it, and its container's argv and environment as the
// kubelet computes them.
type Pod struct {
	Name, Hostname, Subdomain, Namespace, UID string
	Labels, Annotations                       map[string]string
	// Container is the container's name.
	Container string
	// Argv is the process's argument vector: the command (or the image's
	// entrypoint) and the args, with $(VAR) expanded.
	Argv []string
	// Env is the container's environment in order, values resolved.
	Env []corev1.EnvVar
	// Mounts maps each mount path to the files the volume shows there
	// (relative name to content): the ConfigMaps, as the kubelet projects
	// them.
	Mounts map[string]map[string][]byte
}

// Emulate returns what the Job's pod for opts.Index runs. It follows the
// Job controller (index annotation and label, hostname JOB-INDEX,
// JOB_COMPLETION_INDEX appended to each container's env unless already
// there) and the kubelet (env resolved in order, each value expanded
// with the variables before it; command and args expanded with all of
// them; ConfigMap and Secret volumes projected as one file per key). What
// it does not know (another volume type, envFrom, a node's figures) is an
// error, never a guess. The variables the runtime adds (HOSTNAME, PATH,
// the Services' *_SERVICE_HOST) are not in Env.
func Emulate(b *Bundle, opts PodOptions) (*Pod, error) {
	job := b.Job
	spec := job.Spec.Template.Spec
	n := int32(1)
	if job.Spec.Completions != nil {
		n = *job.Spec.Completions
	}
	if opts.Index < 0 || opts.Index >= int(n) {
		return nil, fmt.Errorf("index %d: the Job has completions %d, so indexes 0..%d", opts.Index, n, n-1)
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		return nil, fmt.Errorf("the emulator runs pods of one container, got %d containers and %d init containers", len(spec.Containers), len(spec.InitContainers))
	}
	idx := strconv.Itoa(opts.Index)
	p := &Pod{
		Name:        fmt.Sprintf("%s-%d-emul0", job.Name, opts.Index),
		Hostname:    fmt.Sprintf("%s-%d", job.Name, opts.Index),
		Subdomain:   spec.Subdomain,
		Namespace:   opts.Namespace,
		UID:         "pod-" + idx + "-of-" + opts.JobUID,
		Labels:      map[string]string{},
		Annotations: map[string]string{},
		Mounts:      map[string]map[string][]byte{},
	}
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	for k, v := range job.Spec.Template.Labels {
		p.Labels[k] = v
	}
	for k, v := range job.Spec.Template.Annotations {
		p.Annotations[k] = v
	}
	p.Labels[JobUIDLabel], p.Labels["controller-uid"] = opts.JobUID, opts.JobUID
	p.Labels[JobNameLabel], p.Labels["job-name"] = job.Name, job.Name
	p.Labels[IndexLabel] = idx
	p.Annotations[IndexAnnotation] = idx

	c := spec.Containers[0]
	p.Container = c.Name
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not emulated", c.Name)
	}
	env := append([]corev1.EnvVar(nil), c.Env...)
	if !hasEnv(env, IndexEnv) {
		env = append(env, corev1.EnvVar{Name: IndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + IndexAnnotation + "']"}}})
	}
	vars := map[string]string{}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, e := range env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = Expand(e.Value, lookup)
		case e.ValueFrom.FieldRef != nil:
			fv, err := p.field(e.ValueFrom.FieldRef.FieldPath)
			if err != nil {
				return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
			}
			v = fv
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := b.ConfigMaps[ref.Name]
			val, has := "", false
			if ok {
				val, has = cm.Data[ref.Key]
			}
			if !has {
				if ref.Optional != nil && *ref.Optional {
					continue
				}
				// The kubelet refuses to start the container
				// (CreateContainerConfigError).
				return nil, fmt.Errorf("container %s: env %s: no key %q in ConfigMap %s (rendered: %s)", c.Name, e.Name, ref.Key, ref.Name, strings.Join(b.ConfigMapNames(), ", "))
			}
			v = val
		case e.ValueFrom.ResourceFieldRef != nil:
			rv, err := resourceValue(c, e.ValueFrom.ResourceFieldRef)
			if err != nil {
				return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
			}
			v = rv
		default:
			return nil, fmt.Errorf("container %s: env %s: this valueFrom is not emulated (only fieldRef, configMapKeyRef and resourceFieldRef)", c.Name, e.Name)
		}
		vars[e.Name] = v
		p.Env = append(p.Env, corev1.EnvVar{Name: e.Name, Value: v})
	}

	if len(c.Command) > 0 {
		for _, a := range c.Command {
			p.Argv = append(p.Argv, Expand(a, lookup))
		}
	} else {
		if len(opts.Entrypoint) == 0 {
			return nil, fmt.Errorf("container %s sets no command and no image entrypoint was given", c.Name)
		}
		p.Argv = append(p.Argv, opts.Entrypoint...)
	}
	for _, a := range c.Args {
		p.Argv = append(p.Argv, Expand(a, lookup))
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("container %s: volumeMount %s: no such volume", c.Name, m.Name)
		case m.SubPath != "" || m.SubPathExpr != "":
			return nil, fmt.Errorf("container %s: volumeMount %s: subPath is not emulated", c.Name, m.Name)
		case v.ConfigMap == nil && v.Secret == nil:
			return nil, fmt.Errorf("container %s: volume %s: only ConfigMap and Secret volumes are emulated", c.Name, m.Name)
		}
		var files map[string][]byte
		var err error
		if v.Secret != nil {
			files, err = projectSecret(b, v.Secret)
		} else {
			files, err = projectConfigMap(b, v.ConfigMap)
		}
		if err != nil {
			return nil, fmt.Errorf("container %s: volume %s: %w", c.Name, m.Name, err)
		}
		p.Mounts[path.Clean(m.MountPath)] = files
	}
	return p, nil
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// field is a downward API fieldRef of this pod, as far as an emulated
// pod has it (no node, no IP).
func (p *Pod) field(fp string) (string, error) {
	switch fp {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return p.UID, nil
	}
	for _, m := range []struct {
		prefix string
		from   map[string]string
	}{{"metadata.labels['", p.Labels}, {"metadata.annotations['", p.Annotations}} {
		if key, ok := strings.CutPrefix(fp, m.prefix); ok && strings.HasSuffix(key, "']") {
			// A missing key is the empty string, as in the kubelet.
			return m.from[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %s is not emulated", fp)
}

// resourceValue is a resourceFieldRef's value as the kubelet computes it:
// the container's cpu or memory request or limit divided by the divisor
// (default 1), rounded up.
func resourceValue(c corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		return "", fmt.Errorf("resourceFieldRef of container %s: the emulator knows only this container's", ref.ContainerName)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := map[string]corev1.ResourceList{"limits": c.Resources.Limits, "requests": c.Resources.Requests}[kind]
	q, ok := list[corev1.ResourceName(name)]
	switch {
	case name != "cpu" && name != "memory":
		return "", fmt.Errorf("resourceFieldRef %s is not emulated (only cpu and memory)", ref.Resource)
	case !ok || q.IsZero():
		// The kubelet would give the node's allocatable, unknown here.
		return "", fmt.Errorf("resourceFieldRef %s: the container sets none", ref.Resource)
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if name == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(div.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(div.Value()))), 10), nil
}

// projectConfigMap is the files a ConfigMap volume shows: one per key, or
// the listed items at their paths.
func projectConfigMap(b *Bundle, src *corev1.ConfigMapVolumeSource) (map[string][]byte, error) {
	cm, ok := b.ConfigMaps[src.Name]
	if !ok {
		if src.Optional != nil && *src.Optional {
			return map[string][]byte{}, nil
		}
		return nil, fmt.Errorf("no ConfigMap %s (rendered: %s)", src.Name, strings.Join(b.ConfigMapNames(), ", "))
	}
	all := map[string][]byte{}
	for k, v := range cm.Data {
		all[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		all[k] = v
	}
	if len(src.Items) == 0 {
		return all, nil
	}
	files := map[string][]byte{}
	for _, it := range src.Items {
		v, ok := all[it.Key]
		if !ok {
			return nil, fmt.Errorf("ConfigMap %s has no key %q", src.Name, it.Key)
		}
		files[it.Path] = v
	}
	return files, nil
}

// projectSecret is the files a Secret volume shows: one per key, or the
// listed items at their paths.
func projectSecret(b *Bundle, src *corev1.SecretVolumeSource) (map[string][]byte, error) {
	sec, ok := b.Secrets[src.SecretName]
	if !ok {
		if src.Optional != nil && *src.Optional {
			return map[string][]byte{}, nil
		}
		// The kubelet leaves the pod in ContainerCreating.
		return nil, fmt.Errorf("no Secret %s (rendered: %s)", src.SecretName, strings.Join(b.SecretNames(), ", "))
	}
	all := map[string][]byte{}
	for k, v := range sec.Data {
		all[k] = v
	}
	for k, v := range sec.StringData {
		all[k] = []byte(v)
	}
	if len(src.Items) == 0 {
		return all, nil
	}
	files := map[string][]byte{}
	for _, it := range src.Items {
		v, ok := all[it.Key]
		if !ok {
			return nil, fmt.Errorf("Secret %s has no key %q", src.SecretName, it.Key)
		}
		files[it.Path] = v
	}
	return files, nil
}

// Materialise writes the pod's mounts under root (mount path /plan
// becomes root/plan) and returns a function mapping an argument that
// names a mounted file to that copy, leaving other arguments alone.
func (p *Pod) Materialise(root string) (local func(string) string, err error) {
	mounts := make([]string, 0, len(p.Mounts))
	for mp, files := range p.Mounts {
		mounts = append(mounts, mp)
		for name, data := range files {
			dst := filepath.Join(root, filepath.FromSlash(mp), filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(dst, data, 0o444); err != nil {
				return nil, err
			}
		}
	}
	// The longest mount path first, as a nested mount hides its parent.
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return func(arg string) string {
		for _, mp := range mounts {
			if arg == mp || strings.HasPrefix(arg, mp+"/") {
				return filepath.Join(root, filepath.FromSlash(arg))
			}
		}
		return arg
	}, nil
}

// File is the content of the file at an absolute path in the container,
// if a mount shows one there.
func (p *Pod) File(name string) ([]byte, bool) {
	name = path.Clean(name)
	for mp, files := range p.Mounts {
		if rel, ok := strings.CutPrefix(name, mp+"/"); ok {
			if data, ok := files[rel]; ok {
				return data, true
			}
		}
	}
	return nil, false
}
