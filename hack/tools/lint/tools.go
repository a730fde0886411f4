//go:build tools

// Package lint pins golangci-lint, built from the module proxy into bin/ by
// `make lint`. It has its own module because its many dependencies would
// otherwise move the versions the other tools are built with.
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
