package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type options struct {
	out, version, caBundle, source string
	platforms                      []string
}

// The image's user: the same as distroless's nonroot, which the chart's
// securityContext names.
const (
	uid  = 65532
	user = "65532:65532"
)

// build writes the image and its SBOM and returns the index's digest.
func build(o options) (v1.Hash, error) {
	revision, created, err := commit()
	if err != nil {
		return v1.Hash{}, err
	}
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("the CA certificates (Debian's ca-certificates package): %w", err)
	}
	if err := os.RemoveAll(o.out); err != nil {
		return v1.Hash{}, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "vigil",
		"org.opencontainers.image.description": "Vigil: monitors recurring jobs from inside Kubernetes, speaking the Healthchecks API",
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.url":         o.source,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "NOASSERTION",
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	var sbomFrom string
	for _, p := range o.platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return v1.Hash{}, err
		}
		bin := filepath.Join(o.out, "bin", plat.OS+"-"+plat.Architecture, "vigil")
		if err := compile(bin, plat, o.version); err != nil {
			return v1.Hash{}, err
		}
		if sbomFrom == "" {
			sbomFrom = bin
		}
		img, err := image(bin, ca, plat, created, labels)
		if err != nil {
			return v1.Hash{}, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	lp, err := layout.Write(filepath.Join(o.out, "oci"), empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	// The name podman, skopeo and crane find it by: oci:<dir>:<version>.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.version})); err != nil {
		return v1.Hash{}, err
	}
	if err := writeSBOM(filepath.Join(o.out, "sbom.cdx.json"), sbomFrom, digest, o, created); err != nil {
		return v1.Hash{}, err
	}
	return digest, os.WriteFile(filepath.Join(o.out, "digest"), []byte(digest.String()+"\n"), 0o644)
}

// commit is the source's revision and its commit time: every time the image
// holds is that one, so that a build of the same commit is the same image.
// A tree with changes not committed says so in its revision.
func commit() (string, time.Time, error) {
	out, err := exec.CommandContext(context.Background(), "git", "log", "-1", "--format=%H %ct").Output()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading the commit: %w", err)
	}
	rev, secs, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "", time.Time{}, err
	}
	if status, err := exec.CommandContext(context.Background(), "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		rev += "-dirty"
	}
	return rev, time.Unix(n, 0).UTC(), nil
}

// compile builds a static vigil for the platform: no cgo (the embedded
// store's SQLite is pure Go), no paths of this machine (-trimpath), no VCS
// stamp that a checkout's state would change.
func compile(out string, p *v1.Platform, version string) error {
	cmd := exec.CommandContext(context.Background(), "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid= -X github.com/vigil-operator/vigil/internal/version.Override="+version,
		"-o", out, "./cmd/vigil")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building vigil for %s: %w", p, err)
	}
	return nil
}

// image is one platform's image: a single layer, the config of a non-root
// process with no shell.
func image(bin string, ca []byte, p *v1.Platform, created time.Time, labels map[string]string) (v1.Image, error) {
	data, err := rootfs(bin, ca, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "hack/image: the vigil binary, CA certificates, passwd", Comment: "vigil",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       user,
		Entrypoint: []string{"/vigil"},
		Cmd:        []string{"manager"},
		Env:        []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		WorkingDir: "/",
		Labels:     labels,
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the layer: the binary, the CA bundle, passwd and group with
// the nonroot user, and the store's directory owned by it. Every entry
// has the commit's time and a fixed owner, in a fixed order.
func rootfs(bin string, ca []byte, created time.Time) ([]byte, error) {
	vigil, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner,
			ModTime: created, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
			ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("etc/ssl", 0o755, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0) },
		func() error { return file("etc/ssl/certs/ca-certificates.crt", 0o644, ca) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, uid) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/lib", 0o755, 0) },
		func() error { return dir("var/lib/vigil", 0o750, uid) },
		func() error { return file("vigil", 0o755, vigil) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
