# One image for every role: the manager (`vigil manager`, the default), a
# sidecar or init container that wraps a job (`vigil run ...`), or a ping
# client (`vigil ping ...`). Static binary, no shell, non-root.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so code changes reuse the module cache layer.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=0.0.0-dev
# The flags of make image (hack/image/build.go), so both build one binary.
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags="-s -w -buildid= -X github.com/vigil-operator/vigil/internal/version.Override=${VERSION}" \
      -o /out/vigil ./cmd/vigil

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/vigil /vigil
USER 65532:65532
ENTRYPOINT ["/vigil"]
CMD ["manager"]
