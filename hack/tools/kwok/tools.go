//go:build tools

// Package kwok pins kwok (sigs.k8s.io/kwok), which simulates nodes and
// pods in `make dev`: there is no kubelet there, so without it a CronJob's
// pods would never run and its Jobs never end.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
