# A static mqplan image: the binary alone (no shell, no libc), run as a
# non-root user. It is what deploy/kubernetes/ runs.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t mqplan:dev .
#   docker run --rm mqplan:dev version
#
# deploy/kubernetes/validate's TestDockerfile builds the binary with this
# file's own build line and checks that it is static; the image itself is
# not built by CI (no container engine there). Keep the build line plain
# (NAME=VALUE ... go build ..., double quotes, ${ARG}): that test reads it.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version `mqplan version` and every report print: pass it with
# --build-arg VERSION=... (.git is not in the build context, so there is
# no VCS stamp to read it from; without it the version says "unknown").
ARG VERSION=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION}" -o /out/mqplan ./cmd/mqplan

FROM scratch
ARG VERSION=unknown
LABEL org.opencontainers.image.title="mqplan" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# For mqtts:// and wss:// brokers whose certificates chain to a public CA.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/mqplan /mqplan
# The licence travels with the binary, as in the release archives.
COPY LICENSE NOTICE /licenses/
# 65532: the conventional "nonroot" of distroless images, and the
# runAsUser of deploy/kubernetes/job.yaml.
USER 65532:65532
ENTRYPOINT ["/mqplan"]
