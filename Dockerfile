# quarry's container image: `quarry serve` on Debian 12 with Chromium.
# Build (docs/operations.md, "Install"; no image was built where this file
# was written, so it is untested):
#   make image
# or by hand, stamping the version as make dist does:
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DATE="$(date -u -d @"$(git log -1 --format=%ct)" +%Y-%m-%dT%H:%M:%SZ)" \
#     -t quarry .
# Run: docker run --cap-add SYS_ADMIN -p 127.0.0.1:8080:8080 -v quarry-data:/var/lib/quarry quarry

# The build stage: the same static, reproducible build as scripts/dist.sh.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/quarry ./cmd/quarry

# The run stage: Chromium, its fonts and chromedriver (the sessions'
# Selenium endpoints) for Wallcrawler, tini as PID 1 to
# reap the browsers' orphaned helpers, curl for the health check.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium chromium-driver fonts-liberation tini curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin --comment "quarry browsers" quarry-browser \
 && install -d -m 0700 /var/lib/quarry \
 && install -d -m 0711 /var/lib/quarry-browsers
COPY --from=build /out/quarry /usr/bin/quarry

# quarry runs as root inside the container, as under systemd: it starts
# every browser as the unprivileged quarry-browser user and, given
# CAP_SYS_ADMIN (docker run --cap-add SYS_ADMIN; compose.yaml grants it),
# in a network namespace of its own; Docker's default seccomp profile also
# lets Chromium's sandbox make its user namespaces only with that
# capability. Without it quarry still serves, with the browsers' confinement
# degraded, and says so in its start banner and /healthz.
USER root

# Listen on every address of the container: the API, and the embedded
# store's DynamoDB endpoint, which takes unauthenticated requests unless
# QUARRY_CREDENTIALS names a key file: publish 8000 only where that is
# meant (compose.yaml binds both ports to the host's loopback).
ENV QUARRY_LISTEN=0.0.0.0:8080 \
    QUARRY_DDB_LISTEN=0.0.0.0:8000 \
    QUARRY_DATA_DIR=/var/lib/quarry \
    QUARRY_WALLCRAWLER_BROWSER_DIR=/var/lib/quarry-browsers
EXPOSE 8080 8000
VOLUME ["/var/lib/quarry"]

# Any answer from /healthz counts as alive: it answers 503 while a backend
# (PostgreSQL, S3) is down, which a restart would not mend
# (docs/operations.md, "Health"). No answer within 5 s is unhealthy.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["curl", "--silent", "--output", "/dev/null", "--max-time", "5", "http://127.0.0.1:8080/healthz"]

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/bin/quarry"]
CMD ["serve"]
