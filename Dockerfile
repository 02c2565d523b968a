# One image for the operator and its steps: /manager runs the controller;
# /autoresearch runs the git and compliance steps in pods of this image and is
# copied into user images to wrap their training and evaluation commands.
#
# hack/image.sh (`make image`) builds the same image without Docker, as a
# docker-archive: keep the two describing the same files, user and entrypoint.
#
# Base images are pinned by the digest of their multi-platform index, so that
# a tag moved upstream changes nothing here. To move to a newer one:
#   docker buildx imagetools inspect golang:1.26 --format '{{json .Manifest.Digest}}'
# and the same for debian:trixie-slim.

FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3aff6657219a4d9c14e27fb1d8976c49c29fddb70ba835014f477e1c70636647 AS builder
ARG TARGETOS
ARG TARGETARCH
# The version the binaries report (`make docker-build` passes git describe).
ARG VERSION=devel
WORKDIR /src
# The image's Go may be older than go.mod's: fetch go.mod's toolchain (from
# the module proxy, checked against the checksum database) when it is.
ENV GOTOOLCHAIN=auto

# Dependencies first, so that source changes reuse this layer.
COPY go.mod go.sum ./
RUN go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/

# Static binaries: the step wrapper must run in any user image, whatever its libc.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -X github.com/autoresearch-dev/autoresearch-operator/internal/version.version=${VERSION}" -o /out/manager ./cmd/manager && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -X github.com/autoresearch-dev/autoresearch-operator/internal/version.version=${VERSION}" -o /out/autoresearch ./cmd/autoresearch

# Debian rather than distroless: the step pods need git, and ssh for clones
# with an ssh-privatekey credential. The workspace volume is shared by pods
# that may run as other users, so git must not refuse it as a repository of
# "dubious ownership".
FROM debian:trixie-slim@sha256:a29215f6a35e51e22adffa17f89e9d2ef06214e64a2bad10d765c46aea49f11f
RUN apt-get update && \
    apt-get install -y --no-install-recommends ca-certificates git openssh-client && \
    rm -rf /var/lib/apt/lists/* && \
    groupadd --gid 65532 nonroot && \
    useradd --uid 65532 --gid 65532 --create-home --home-dir /home/nonroot nonroot && \
    git config --system safe.directory '*'

COPY --from=builder /out/manager /out/autoresearch /

USER 65532:65532
ENV HOME=/home/nonroot
ENTRYPOINT ["/manager"]
