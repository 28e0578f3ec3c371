# syntax=docker/dockerfile:1
# sdnlb: REST API on :8080 (needs SDNLB_API_TOKEN), OpenFlow 1.3 controller
# on :6653, SQLite in /data.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# go-sqlite3 is cgo: the binary links glibc, which the bookworm runtime has.
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/sdnlb ./cmd/sdnlb

FROM debian:bookworm-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends ca-certificates \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin sdnlb \
	&& mkdir -p /data \
	&& chown sdnlb:sdnlb /data
COPY --from=build /out/sdnlb /usr/local/bin/sdnlb
USER sdnlb
VOLUME /data
EXPOSE 8080 6653
# The API listens on every interface of the container, so sdnlb refuses to
# start without SDNLB_API_TOKEN (or an explicit SDNLB_API_INSECURE=true).
ENTRYPOINT ["sdnlb", "--db", "/data/sdnlb.db", "--api-addr", ":8080"]
