# contextd container image. Not exercised by CI (no Docker engine runs on the
# CI machines); see README "Docker".
#
# Build: docker build -t contextd .
# Run:   docker run -p 127.0.0.1:7467:7467 \
#          -v ~/.pi/agent/sessions:/sessions:ro -v contextd-state:/state contextd
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# mattn/go-sqlite3 needs cgo; FTS5 needs the sqlite_fts5 tag.
RUN CGO_ENABLED=1 go build -tags sqlite_fts5 -trimpath -ldflags="-s -w" -o /out/contextd ./cmd/contextd

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home /state contextd \
 && mkdir -p /state /sessions && chown contextd /state
COPY --from=build /out/contextd /usr/local/bin/contextd
USER contextd
VOLUME ["/state", "/sessions"]
EXPOSE 7467
# Inside a container loopback-only binding is useless: --allow-non-loopback
# permits 0.0.0.0. The token (in /state/token) is still required on every
# route but /healthz, and Host must be loopback unless listed in
# --allowed-hosts.
ENTRYPOINT ["contextd", "serve", "--addr", "0.0.0.0:7467", "--allow-non-loopback", \
            "--sessions-dir", "/sessions", "--state-dir", "/state"]
