//go:build tools

// Package helm pins Helm (helm.sh/helm/v4), which `make lint` uses to lint
// charts/vigil and the tests in test/chart use to render it.
package helm

import _ "helm.sh/helm/v4/cmd/helm"
