#!/usr/bin/env bash
# Writes a release of Vigil into a directory: what `make release` runs.
#
#   vigil-<version>.tgz            the Helm chart, version and appVersion
#                                  set, the image pinned by digest
#   install.yaml,                  config/default and config/postgres with
#   install-postgres.yaml          the image pinned by digest
#   vigil-<version>.sbom.cdx.json  the image's SBOM (CycloneDX)
#   image.payload.json, *.sig      with SIGNING_KEY (a PEM private key):
#                                  signatures of the image and the SBOM
#   image/oci                      the image: an OCI layout, every platform
#   SHA256SUMS                     the checksums of the files above
#
# Usage: hack/release.sh <version> <out>   (GO, HELM, KUSTOMIZE, PLATFORMS,
# IMAGE_REPOSITORY for where the image will be pushed, and SIGNING_KEY,
# from make)
set -euo pipefail

version=${1:?usage: hack/release.sh <version> <out>}
out=${2:?usage: hack/release.sh <version> <out>}
repo=${IMAGE_REPOSITORY:-ghcr.io/vigil-operator/vigil}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "hack/release.sh: VERSION=$version is not a semantic version (x.y.z or x.y.z-pre)" >&2
	exit 2
fi

rm -rf "$out"
mkdir -p "$out"
"${GO:-go}" run ./hack/image -out "$out/image" -version "$version" -platforms "${PLATFORMS:-linux/amd64,linux/arm64}"
digest=$(cat "$out/image/digest")
ref="$repo:$version@$digest"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The chart: pulled by digest, its version and appVersion the release's.
cp -r charts/vigil "$tmp/vigil"
sed -i "s|^  repository: .*|  repository: $repo|; s|^  digest: \"\"|  digest: \"$digest\"|" "$tmp/vigil/values.yaml"
grep -q "^  digest: \"$digest\"" "$tmp/vigil/values.yaml" || { echo "hack/release.sh: could not pin the digest in values.yaml" >&2; exit 1; }
sed -i "s|image: ghcr.io/vigil-operator/vigil:.*|image: $ref|" "$tmp/vigil/Chart.yaml"
"$HELM" package "$tmp/vigil" --version "$version" --app-version "$version" -d "$out" >/dev/null

# The manifests: the same image.
cp -r config "$tmp/config"
for overlay in default postgres; do
	(cd "$tmp/config/$overlay" && "$KUSTOMIZE" edit set image "vigil=$ref")
done
"$KUSTOMIZE" build "$tmp/config/default" >"$out/install.yaml"
"$KUSTOMIZE" build "$tmp/config/postgres" >"$out/install-postgres.yaml"
for f in install.yaml install-postgres.yaml; do
	grep -q "image: $ref" "$out/$f" || { echo "hack/release.sh: $f does not name $ref" >&2; exit 1; }
done

cp "$out/image/sbom.cdx.json" "$out/vigil-$version.sbom.cdx.json"
signed=()
if [ -n "${SIGNING_KEY:-}" ]; then
	# The SBOM, and the image through a payload naming its digest, each
	# with a <file>.sig that `cosign verify-blob --key <public key>` reads.
	"${GO:-go}" run ./hack/sign -key "$SIGNING_KEY" -dir "$out" -image-digest "$digest" -repository "$repo" \
		"vigil-$version.sbom.cdx.json"
	signed=(image.payload.json image.payload.json.sig "vigil-$version.sbom.cdx.json.sig")
fi
(cd "$out" && sha256sum "vigil-$version.tgz" install.yaml install-postgres.yaml "vigil-$version.sbom.cdx.json" "${signed[@]}" >SHA256SUMS)
echo "release $version in $out: image $ref"
