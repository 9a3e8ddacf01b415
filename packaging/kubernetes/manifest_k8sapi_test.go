// This file checks boincd.yaml against the real Kubernetes API types
// (k8s.io/api, strict decoding: an unknown or misspelt field fails), the
// schema kubectl and the API server apply.

package kubernetes

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/yaml"
)

// typedObject returns an empty API object for a document's apiVersion and
// kind, or nil when the manifest should not contain that kind.
func typedObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "apps/v1 DaemonSet":
		return &appsv1.DaemonSet{}
	case "scheduling.k8s.io/v1 PriorityClass":
		return &schedulingv1.PriorityClass{}
	}
	return nil
}

func TestManifestAgainstK8sAPI(t *testing.T) {
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	docs, lines := splitDocuments(data)
	var ds *appsv1.DaemonSet
	for i, doc := range docs {
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("document %d (line %d): %v", i+1, lines[i], err)
		}
		obj := typedObject(tm.APIVersion, tm.Kind)
		if obj == nil {
			t.Fatalf("document %d (line %d): unexpected %s %s", i+1, lines[i], tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Errorf("document %d (line %d), %s: not valid against k8s.io/api: %v", i+1, lines[i], tm.Kind, err)
		}
		if d, ok := obj.(*appsv1.DaemonSet); ok {
			ds = d
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet")
	}
	// The mirror types and the real ones must read the same values.
	sc := ds.Spec.Template.Spec.Containers[0].SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("typed DaemonSet container securityContext = %+v", sc)
	}
	if g := ds.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < stopTimeout+20 {
		t.Errorf("typed terminationGracePeriodSeconds = %v", g)
	}
	if q := ds.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu(); q.IsZero() {
		t.Error("typed CPU request is zero")
	}
	bad := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      terminationGracePeriod: 90\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &appsv1.DaemonSet{}); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("strict decoding of an unknown field: err = %v", err)
	}
}
