package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// objects are the manifests' objects, by kind, decoded strictly.
type objects struct {
	secrets      []*corev1.Secret
	services     []*corev1.Service
	statefulSets []*appsv1.StatefulSet
	jobs         []*batchv1.Job
	pods         []*corev1.Pod
	claims       []*corev1.PersistentVolumeClaim
}

// decode decodes one document into the API type of its kind: an unknown
// field, a duplicate key or a value of the wrong type is an error.
func (o *objects) decode(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var into any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Secret":
		v := &corev1.Secret{}
		o.secrets, into = append(o.secrets, v), v
	case "v1 Service":
		v := &corev1.Service{}
		o.services, into = append(o.services, v), v
	case "apps/v1 StatefulSet":
		v := &appsv1.StatefulSet{}
		o.statefulSets, into = append(o.statefulSets, v), v
	case "batch/v1 Job":
		v := &batchv1.Job{}
		o.jobs, into = append(o.jobs, v), v
	case "v1 Pod":
		v := &corev1.Pod{}
		o.pods, into = append(o.pods, v), v
	case "v1 PersistentVolumeClaim":
		v := &corev1.PersistentVolumeClaim{}
		o.claims, into = append(o.claims, v), v
	default:
		return fmt.Errorf("unexpected kind %q (apiVersion %q)", tm.Kind, tm.APIVersion)
	}
	return yaml.UnmarshalStrict(doc, into)
}

func load(t *testing.T) *objects {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	o := &objects{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			if err := o.decode(doc); err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
			}
		}
	}
	return o
}

// TestStrictDecoding: every manifest decodes into the real API types.
func TestStrictDecoding(t *testing.T) {
	o := load(t)
	if got := len(o.secrets) + len(o.services) + len(o.statefulSets) + len(o.jobs) + len(o.pods) + len(o.claims); got != 6 {
		t.Errorf("got %d objects; want 6 (secret, service, statefulset, job, claim, pod)", got)
	}
}

// TestStrictDecodingCatchesTypos: the decoding the test relies on fails
// on a misspelt field, so a typo in a manifest fails the build.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	cases := []struct {
		name, doc string
	}{
		// A misspelt field of a container.
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n    imagee: b\n"},
		// A field given twice.
		{"duplicate key", "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ntype: Opaque\ntype: Opaque\n"},
		// A quantity that is not one.
		{"bad quantity", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n    resources: {requests: {cpu: lots}}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := (&objects{}).decode([]byte(c.doc)); err == nil {
				t.Errorf("got no error; want one")
			}
		})
	}
}

// TestManifestsFit: the objects refer to one another correctly.
func TestManifestsFit(t *testing.T) {
	o := load(t)
	if len(o.services) != 1 || len(o.statefulSets) != 1 || len(o.jobs) != 1 || len(o.secrets) != 1 {
		t.Fatalf("got %d services, %d statefulsets, %d jobs, %d secrets; want one each", len(o.services), len(o.statefulSets), len(o.jobs), len(o.secrets))
	}
	svc, set, job, secret := o.services[0], o.statefulSets[0], o.jobs[0], o.secrets[0]
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service clusterIP %q; want None (headless: the name resolves to every agent)", svc.Spec.ClusterIP)
	}
	for k, v := range svc.Spec.Selector {
		if set.Spec.Template.Labels[k] != v {
			t.Errorf("service selects %s=%s; the agents' pods have %q", k, v, set.Spec.Template.Labels[k])
		}
	}
	if set.Spec.ServiceName != svc.Name {
		t.Errorf("statefulset serviceName %q; want %q", set.Spec.ServiceName, svc.Name)
	}
	if _, ok := secret.StringData["LOCKBENCH_AGENT_TOKEN"]; !ok {
		t.Errorf("secret has no LOCKBENCH_AGENT_TOKEN")
	}
	port := svc.Spec.Ports[0].Port
	agent := set.Spec.Template.Spec.Containers[0]
	if got, want := strings.Join(agent.Args, " "), fmt.Sprintf("agent --listen $(POD_IP):%d", port); got != want {
		t.Errorf("agent args %q; want %q", got, want)
	}
	coord := job.Spec.Template.Spec.Containers[0]
	i := slices.Index(coord.Args, "--agents")
	if want := fmt.Sprintf("%s:%d", svc.Name, port); i < 0 || i+1 >= len(coord.Args) || coord.Args[i+1] != want {
		t.Errorf("coordinator args %q; want --agents %s", coord.Args, want)
	}
	if !usesSecret(agent, secret.Name, "LOCKBENCH_AGENT_TOKEN") || !usesSecret(coord, secret.Name, "LOCKBENCH_AGENT_TOKEN") {
		t.Errorf("agent and coordinator must both take LOCKBENCH_AGENT_TOKEN from secret %s", secret.Name)
	}
	var pods []corev1.PodSpec
	pods = append(pods, set.Spec.Template.Spec, job.Spec.Template.Spec)
	for _, p := range o.pods {
		pods = append(pods, p.Spec)
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("container %s states no cpu and memory requests", c.Name)
			}
		}
	}
}

// usesSecret reports whether c gets key from the secret named name.
func usesSecret(c corev1.Container, name, key string) bool {
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil && e.SecretRef.Name == name {
			return true
		}
	}
	for _, e := range c.Env {
		if e.Name == key && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name {
			return true
		}
	}
	return false
}
