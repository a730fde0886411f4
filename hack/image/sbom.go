package main

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// writeSBOM writes a CycloneDX SBOM of the image: the Go modules its
// binary was built from (read from the binary itself, as `go version -m`
// does) and the Go toolchain. Reproducible too: its serial number comes
// from the image's digest and its time is the commit's.
func writeSBOM(path, bin string, digest v1.Hash, o options, created time.Time) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading the modules built into %s: %w", bin, err)
	}
	bom := cdx.NewBOM()
	// A UUID made of the digest's first 16 bytes, with the version bits
	// of a name-based UUID: the same image has the same serial number.
	h := digest.Hex
	bom.SerialNumber = fmt.Sprintf("urn:uuid:%s-%s-5%s-8%s-%s", h[0:8], h[8:12], h[13:16], h[17:20], h[20:32])
	purl := func(path, version string) string { return "pkg:golang/" + path + "@" + version }
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Tools:     &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "hack/image", Group: "vigil"}}},
		Component: &cdx.Component{
			BOMRef: "pkg:oci/vigil@" + digest.String(), Type: cdx.ComponentTypeContainer, Name: "vigil", Version: o.version,
			PackageURL: "pkg:oci/vigil@" + strings.ReplaceAll(digest.String(), ":", "%3A") + "?repository_url=ghcr.io/vigil-operator/vigil",
			Properties: &[]cdx.Property{{Name: "org.opencontainers.image.source", Value: o.source}},
		},
	}
	components := []cdx.Component{{
		BOMRef: purl(info.Main.Path, o.version), Type: cdx.ComponentTypeApplication, Name: info.Main.Path, Version: o.version,
		PackageURL: purl(info.Main.Path, o.version),
	}, {
		BOMRef: "pkg:golang/stdlib@" + info.GoVersion, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: info.GoVersion,
		PackageURL: "pkg:golang/stdlib@" + info.GoVersion,
	}}
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		c := cdx.Component{BOMRef: purl(m.Path, m.Version), Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version,
			PackageURL: purl(m.Path, m.Version)}
		if m.Sum != "" {
			// go.sum's hash of the module (h1:, SHA-256 of its file list),
			// which CycloneDX's hashes, of the artifact's bytes, are not.
			c.Properties = &[]cdx.Property{{Name: "go.sum", Value: m.Sum}}
		}
		components = append(components, c)
	}
	slices.SortStableFunc(components[2:], func(a, b cdx.Component) int { return strings.Compare(a.Name, b.Name) })
	bom.Components = &components
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
