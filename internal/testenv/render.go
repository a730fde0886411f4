package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vigil-operator/vigil/internal/devenv"
)

// Tool finds a tool `make` builds from Go modules into bin/tools (kustomize,
// helm) or bin/kwok: the path in the environment variable of its name in
// capitals, which `make test` sets, or else the newest
// bin/tools/<name>-<version> (bin/kwok/<version>/kwok).
func Tool(name string) (string, error) {
	env := map[string]string{"kustomize": "KUSTOMIZE", "helm": "HELM", "kwok": "KWOK"}[name]
	if p := os.Getenv(env); env != "" && p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	pattern := filepath.Join(root, "bin", "tools", name+"-*")
	if name == "kwok" {
		pattern = filepath.Join(root, "bin", "kwok", "*", "kwok")
	}
	found, _ := filepath.Glob(pattern)
	sort.Strings(found)
	if len(found) == 0 {
		return "", fmt.Errorf("testenv: no %s under bin/tools; `make test` builds it from Go modules", name)
	}
	return found[len(found)-1], nil
}

// KustomizeBuild renders a kustomization of the repository (such as
// "config/default") with the project's kustomize.
func KustomizeBuild(ctx context.Context, dir string) ([]unstructured.Unstructured, error) {
	kustomize, err := Tool("kustomize")
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return render(ctx, exec.CommandContext(ctx, kustomize, "build", filepath.Join(root, dir)))
}

// HelmTemplate renders the chart at dir (such as "charts/vigil") as release
// name in namespace, with the project's helm and extra arguments such as
// "--set", "replicaCount=1".
func HelmTemplate(ctx context.Context, dir, name, namespace string, args ...string) ([]unstructured.Unstructured, error) {
	helm, err := Tool("helm")
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	argv := append([]string{"template", name, filepath.Join(root, dir), "--namespace", namespace}, args...)
	return render(ctx, exec.CommandContext(ctx, helm, argv...))
}

func render(_ context.Context, cmd *exec.Cmd) ([]unstructured.Unstructured, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", cmd, err, stderr.String())
	}
	return devenv.DecodeObjects(out)
}
