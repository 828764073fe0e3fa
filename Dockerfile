# syntax=docker/dockerfile:1
#
# fex-server image: a release build in the official Rust image, copied into a
# distroless runtime that holds only glibc, libgcc, libstdc++ (SentencePiece,
# linked statically, is C++) and CA certificates and runs
# as the unprivileged "nonroot" user (65532). No shell and no HEALTHCHECK:
# Kubernetes probes the gRPC health service (see helm/fex).
#
#   docker build -t fex-server:0.1.0 .
#   docker run --rm -p 50051:50051 -p 9090:9090 fex-server:0.1.0
#   docker run --rm -v "$PWD/models:/etc/fex/models:ro" fex-server:0.1.0 --models /etc/fex/models --check-config

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src
# librdkafka (the request log's Kafka producer) and SentencePiece (`op:
# tokenize` with sentencepiece models) are built from their vendored source
# with cmake; the slim image has a C compiler but neither cmake nor a C++
# compiler.
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake g++ make \
    && rm -rf /var/lib/apt/lists/*
# Only what the build needs (.dockerignore keeps everything else out).
COPY . .
# The registry and target caches persist between builds (BuildKit); the binary
# is copied out of the cached target dir, which the final stage cannot see.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p fex-server \
    && install -D -m 0755 target/release/fex-server /out/fex-server

# glibc of bookworm, like the build stage.
FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="fex-server" \
      org.opencontainers.image.description="gRPC feature-extraction server: Monolith samples to packed tensors" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/fex-server /usr/local/bin/fex-server
USER 65532:65532
# gRPC (with grpc.health.v1 and reflection), Prometheus /metrics.
EXPOSE 50051 9090
ENTRYPOINT ["/usr/local/bin/fex-server"]
