// Package kubernetes holds boincd's Kubernetes manifest (boincd.yaml: a
// Namespace, a PriorityClass, a ConfigMap with boincd.toml, a Secret with the
// account key and a DaemonSet) and the tests that validate it. It has no code
// of its own.
//
// The tests decode every document strictly (unknown fields fail) into a
// mirror of the Kubernetes API types the manifest uses, check the security
// and lifecycle settings, and render the config the pod would see (the
// projected ConfigMap and Secret files) and load it with package config.
// They also decode the documents strictly into the real k8s.io/api types.
package kubernetes
