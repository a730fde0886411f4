// Command sign signs a release's image and SBOM with a key the release
// step is given, and verifies them: sigstore's signature library, in the
// form `cosign verify-blob` reads (a base64 ECDSA-SHA256 signature of the
// file's bytes, in <file>.sig).
//
// The image is signed through a payload naming its digest in cosign's
// "simple signing" form (image.payload.json), so the signature covers the
// image's content: a different image has a different digest.
//
//	go run ./hack/sign -key signing.pem -image-digest sha256:... -repository ghcr.io/vigil-operator/vigil -dir dist/release/0.1.0 sbom.cdx.json
//	go run ./hack/sign -verify -key signing.pub -dir dist/release/0.1.0 image.payload.json sbom.cdx.json
package main

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

func main() {
	keyPath := flag.String("key", "", "a PEM private key (PKCS#8 or EC) to sign with; with -verify, a PEM public key")
	verify := flag.Bool("verify", false, "verify <file>.sig of each file instead of signing")
	dir := flag.String("dir", ".", "the directory the files are in")
	digest := flag.String("image-digest", "", "sign the image with this digest too (writes image.payload.json)")
	repository := flag.String("repository", "", "the image's repository, named in its payload")
	flag.Parse()
	if err := run(*keyPath, *verify, *dir, *digest, *repository, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "sign:", err)
		os.Exit(1)
	}
}

// payloadName is the file the image's signed payload is written to.
const payloadName = "image.payload.json"

func run(keyPath string, verify bool, dir, digest, repository string, files []string) error {
	pem, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	if verify {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem)
		if err != nil {
			return fmt.Errorf("-key: %w", err)
		}
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return err
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return err
			}
			sig, err := os.ReadFile(filepath.Join(dir, f+".sig"))
			if err != nil {
				return err
			}
			raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sig)))
			if err != nil {
				return fmt.Errorf("%s.sig: %w", f, err)
			}
			if err := v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(data)); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			fmt.Printf("verified %s\n", f)
		}
		return nil
	}
	key, err := cryptoutils.UnmarshalPEMToPrivateKey(pem, cryptoutils.SkipPassword)
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	s, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		return err
	}
	if digest != "" {
		if err := os.WriteFile(filepath.Join(dir, payloadName), simpleSigning(repository, digest), 0o644); err != nil {
			return err
		}
		files = append(files, payloadName)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		sig, err := s.SignMessage(bytes.NewReader(data))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f+".sig"), []byte(base64.StdEncoding.EncodeToString(sig)+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Printf("signed %s\n", f)
	}
	return nil
}

// simpleSigning is cosign's payload for a container image signature: what
// is signed is the image's digest, under its repository's name.
func simpleSigning(repository, digest string) []byte {
	var p struct {
		Critical struct {
			Identity struct {
				DockerReference string `json:"docker-reference"`
			} `json:"identity"`
			Image struct {
				DockerManifestDigest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
		Optional map[string]string `json:"optional"`
	}
	p.Critical.Identity.DockerReference = repository
	p.Critical.Image.DockerManifestDigest = digest
	p.Critical.Type = "cosign container image signature"
	out, _ := json.Marshal(p)
	return out
}
