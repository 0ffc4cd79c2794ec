# contextd container image. CI cannot build it (no Docker engine runs on the
# CI machines); cmd/contextd/deploy_test.go checks that its ENTRYPOINT, CMD,
# ENV and HEALTHCHECK and the README's docker commands parse as contextd
# command lines. See README "Docker".
#
# Build: docker build -t contextd .
# Run:   docker run -d --name contextd -p 127.0.0.1:7467:7467 \
#          -v ~/.pi/agent/sessions:/sessions:ro -v contextd-state:/state contextd
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# mattn/go-sqlite3 needs cgo; FTS5 needs the sqlite_fts5 tag. -buildvcs
# stamps the commit for `contextd --version` when .git is in the context.
RUN CGO_ENABLED=1 go build -tags sqlite_fts5 -trimpath -ldflags="-s -w" -o /out/contextd ./cmd/contextd

FROM debian:bookworm-slim
# CA certificates: Remote mode calls the Codex backend over HTTPS.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /state --no-create-home contextd \
 && mkdir -p /state /sessions \
 && chown contextd /state
COPY --from=build /out/contextd /usr/local/bin/contextd
# Every setting is an environment variable, so any subcommand works:
#   docker run … contextd            serve (CMD)
#   docker run … contextd reindex    rebuild the index in the /state volume
#   docker exec contextd contextd sessions
# Inside a container loopback-only binding is useless: 0.0.0.0 is allowed
# explicitly. The token (/state/token) is still required on every route but
# /healthz, and Host must be loopback (publish on 127.0.0.1) unless listed
# in CONTEXTD_ALLOWED_HOSTS.
ENV CONTEXTD_ADDR=0.0.0.0:7467 \
    CONTEXTD_ALLOW_NON_LOOPBACK=1 \
    CONTEXTD_SESSIONS_DIR=/sessions \
    CONTEXTD_STATE_DIR=/state
USER contextd
VOLUME ["/state", "/sessions"]
EXPOSE 7467
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["contextd", "healthcheck", "--quiet"]
ENTRYPOINT ["contextd"]
CMD ["serve"]
