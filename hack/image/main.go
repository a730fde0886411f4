// Command image builds Vigil's container image without a container engine:
// the vigil binary, cross-compiled for each platform, in one layer with CA
// certificates and a passwd file, written as an OCI image layout (a
// multi-platform index) with an SBOM beside it. It is reproducible: the
// same source gives the same digest (every time in the image is the
// commit's, and the files are written in one order).
//
// It uses go-containerregistry, the library ko and crane are built on, to
// assemble and write the image, and cyclonedx-go for the SBOM: no Docker
// engine, no base image pulled from a registry (the machines that build
// Vigil reach none).
//
//	go run ./hack/image -out bin/image -version 0.1.0 [-platforms linux/amd64,linux/arm64]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bin/image", "the directory to write the OCI layout (oci/) and the SBOM (sbom.cdx.json) into; it is emptied first")
	flag.StringVar(&o.version, "version", "0.0.0-dev", "the version the image and its binary carry")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "the platforms to build, comma-separated")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates to put in the image (Debian's ca-certificates)")
	flag.StringVar(&o.source, "source", "https://github.com/vigil-operator/vigil", "the source repository the image's labels name")
	flag.Parse()
	o.platforms = strings.Split(*platforms, ",")
	digest, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s\n", o.out, digest)
}
