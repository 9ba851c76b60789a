# syntax=docker/dockerfile:1
#
# paygate's image: one static binary on a distroless base, run as a non-root
# user. Build it at the root of a git clone:
#
#   docker build -t paygate .
#
# The build context must hold .git (so not a worktree or an exported tree):
# go build stamps the module version and the VCS revision into the binary,
# which `paygate version` prints, and -buildvcs=true fails the build rather
# than ship a binary that cannot say what it is.
#
# No container runtime runs on paygate's CI machines, so this file is not
# built there; e2e/cluster runs its `go build` line, with its ENV, checks
# that the binary is static and stamped, and runs three of those binaries
# behind nginx (deploy/).

FROM golang:1.26-trixie AS build
WORKDIR /src
# Modules first: a change to the code alone reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The SQLite driver is pure Go: without cgo the binary needs no libc and
# runs on an image with no shared libraries at all.
ENV CGO_ENABLED=0
RUN go build -trimpath -buildvcs=true -ldflags="-s -w" -o /out/paygate ./cmd/paygate
# The data directory, to be owned by the runtime user: the final image has
# no shell to make it.
RUN mkdir -p /out/data

# CA certificates (for the providers' HTTPS), time zones, and /etc/passwd
# with the user nonroot (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian13:nonroot
COPY --from=build /out/paygate /usr/local/bin/paygate
COPY --from=build --chown=65532:65532 /out/data /var/lib/paygate
USER 65532:65532
# The default database, sqlite:paygate.db, is relative to the working
# directory: in the volume. PostgreSQL: set PAYGATE_DATABASE_URL, or
# PAYGATE_DATABASE_URL_FILE naming a secret (deploy/compose.yaml).
WORKDIR /var/lib/paygate
VOLUME ["/var/lib/paygate"]
# Listen on the container's interfaces; paygate's own default is loopback.
ENV PAYGATE_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/paygate"]
CMD ["serve"]
