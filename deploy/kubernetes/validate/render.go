// Package validate checks mqplan's Kubernetes deployment offline: it
// renders deploy/kubernetes with kustomize, decodes every object strictly
// into the Kubernetes API types, checks the invariants a sharded run
// depends on (index 0 is the coordinator, one N everywhere, exit codes 1-4
// fail the Job, the headless Service names the pods), emulates what the
// Job controller and the kubelet make of the pod template for each
// completion index and what the controller makes of the pods' exit codes
// (DecideJob), and reads the repository's Dockerfile. Its tests run the
// Job for real: on loopback and, as root, across network namespaces.
//
// It is its own module so that mqplan's module does not carry k8s.io/api
// and kustomize. It owns no behaviour of mqplan: it only checks that the
// manifests would start mqplan the way they claim to.
package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Bundle is a kustomization rendered the way `kubectl apply -k` renders
// it, every object decoded strictly into its API type.
type Bundle struct {
	// Dir is the kustomization's directory.
	Dir string
	// Kustomization is kustomization.yaml, decoded strictly.
	Kustomization types.Kustomization
	// Job and Service are the one Job and the one Service the deployment
	// consists of.
	Job     *batchv1.Job
	Service *corev1.Service
	// ConfigMaps are the rendered ConfigMaps by their rendered names
	// (generated ones carry kustomize's content hash).
	ConfigMaps map[string]*corev1.ConfigMap
	// Secrets are the rendered Secrets by their rendered names (the
	// run's token, generated with kustomize's content hash).
	Secrets map[string]*corev1.Secret
}

// Render builds the kustomization in dir with kustomize's own library
// and decodes the result strictly: a field the API types do not have (a
// typo that kustomize passes through and an API server might drop or
// refuse) is an error naming the object.
func Render(dir string) (*Bundle, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	b := &Bundle{Dir: dir, ConfigMaps: map[string]*corev1.ConfigMap{}, Secrets: map[string]*corev1.Secret{}}
	if err := yaml.UnmarshalStrict(raw, &b.Kustomization); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "kustomization.yaml"), err)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
		}
		what := r.GetKind() + " " + r.GetName()
		switch r.GetKind() {
		case "Job":
			if b.Job != nil {
				return nil, fmt.Errorf("%s: a second Job (the first is %s)", what, b.Job.Name)
			}
			b.Job = new(batchv1.Job)
			err = strict(y, b.Job)
		case "Service":
			if b.Service != nil {
				return nil, fmt.Errorf("%s: a second Service (the first is %s)", what, b.Service.Name)
			}
			b.Service = new(corev1.Service)
			err = strict(y, b.Service)
		case "ConfigMap":
			cm := new(corev1.ConfigMap)
			err = strict(y, cm)
			b.ConfigMaps[cm.Name] = cm
		case "Secret":
			sec := new(corev1.Secret)
			err = strict(y, sec)
			b.Secrets[sec.Name] = sec
		default:
			err = fmt.Errorf("a kind this deployment does not consist of (Job, Service, ConfigMap, Secret)")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if b.Job == nil || b.Service == nil {
		return nil, fmt.Errorf("kustomize build %s: want one Job and one Service, got Job %v, Service %v", dir, b.Job != nil, b.Service != nil)
	}
	return b, nil
}

// decoder decodes as the API server's strict field validation does
// (kubectl's default since 1.27): a duplicate key or a field the type does
// not have is an error naming the field's path.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{batchv1.AddToScheme, corev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the scheme of two built-in groups: cannot fail
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// strict decodes one object into into, which must be of the object's
// kind.
func strict(y []byte, into runtime.Object) error {
	obj, gvk, err := decoder.Decode(y, nil, into)
	if err != nil {
		return err
	}
	if obj != into {
		return fmt.Errorf("decoded a %v, not the %T expected", gvk, into)
	}
	return nil
}

// SecretNames are the rendered Secrets' names, sorted.
func (b *Bundle) SecretNames() []string {
	names := make([]string, 0, len(b.Secrets))
	for n := range b.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ConfigMapNames are the rendered ConfigMaps' names, sorted.
func (b *Bundle) ConfigMapNames() []string {
	names := make([]string, 0, len(b.ConfigMaps))
	for n := range b.ConfigMaps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
