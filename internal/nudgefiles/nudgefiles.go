// Package nudgefiles decides which files of a nudged repository may hold image
// references, by Konflux's rules: the nudged component's annotated ConfigMap
// replaces the namespace-wide one; a `fileMatch` key there wins over the default.
package nudgefiles

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// NamespaceWideConfigMap is the mandatory name of the namespace-wide Renovate settings.
const NamespaceWideConfigMap = "namespace-wide-nudging-renovate-config"

// Default is build-service's DefaultNudgeFiles.
const Default = ".*Dockerfile.*, .*.yaml, .*Containerfile.*"

// Split parses a comma-separated pattern list as Konflux does (split, trimmed).
func Split(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ConfigMapFor returns the Renovate settings ConfigMap that applies to a nudged
// component, or nil when none does. An annotated ConfigMap that is missing means
// built-in defaults (it does not fall back to the namespace-wide one).
func ConfigMapFor(ctx context.Context, c ctrlclient.Reader, nudged *mirrorv1alpha1.Component) (*corev1.ConfigMap, error) {
	name := NamespaceWideConfigMap
	if n := nudged.Annotations[mirrorv1alpha1.AnnotationNudgeRenovateConfigMap]; n != "" {
		name = n
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: nudged.Namespace, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", nudged.Namespace, name, err)
	}
	return &cm, nil
}

// For returns the file patterns for a nudged component.
func For(ctx context.Context, c ctrlclient.Reader, nudged *mirrorv1alpha1.Component) ([]string, error) {
	cm, err := ConfigMapFor(ctx, c, nudged)
	if err != nil {
		return nil, err
	}
	if cm != nil {
		if fm := Split(cm.Data["fileMatch"]); len(fm) > 0 {
			return fm, nil
		}
	}
	return Split(Default), nil
}
