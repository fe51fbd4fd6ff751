package validate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceFieldRef values, as the kubelet rounds them.
func TestResourceValue(t *testing.T) {
	c := corev1.Container{Name: "mqplan", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	tests := []struct {
		name, res, divisor, want, wantErr string
		container                         string
	}{
		{name: "a CPU limit rounds up to whole CPUs", res: "limits.cpu", want: "2"},
		{name: "a CPU request below one CPU is one", res: "requests.cpu", want: "1"},
		{name: "in millicores", res: "requests.cpu", divisor: "1m", want: "250"},
		{name: "memory in bytes", res: "limits.memory", want: "1073741824"},
		{name: "memory in MiB", res: "limits.memory", divisor: "1Mi", want: "1024"},
		{name: "a request the container does not set", res: "requests.memory", wantErr: "the container sets none"},
		{name: "another resource", res: "limits.ephemeral-storage", wantErr: "only cpu and memory"},
		{name: "another container", res: "limits.cpu", container: "sidecar", wantErr: "knows only this container's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := &corev1.ResourceFieldSelector{Resource: tt.res, ContainerName: tt.container}
			if tt.divisor != "" {
				ref.Divisor = resource.MustParse(tt.divisor)
			}
			got, err := resourceValue(c, ref)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("%s = %q, %v; want %q", tt.res, got, err, tt.want)
			}
		})
	}
}
