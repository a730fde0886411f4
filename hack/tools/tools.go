//go:build tools

// Package tools pins the code generators and build tools Vigil's Makefile runs.
// They are built from the Go module proxy into bin/ (nothing is downloaded as a
// binary), at the versions go.mod records here.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
