#!/usr/bin/env bash
# Builds the franz-go peer for benches/bench_scaling.py: franz-go's sticky balancer (its internal package
# pkg/kgo/internal/sticky, FRANZ_VERSION) timed by our driver (main.go.txt). The module comes from the Go
# module proxy into a temporary GOPATH; the driver is compiled inside a temporary copy of the module (an
# internal package can only be imported from its own module). Nothing is written into this repository.
#
#   tools/franz_peer/build.sh /tmp/kgbench      # then: KAFKAGROUP_FRANZ_BENCH=/tmp/kgbench pytest benches/bench_scaling.py
set -euo pipefail
out=${1:?usage: build.sh OUTPUT_BINARY}
version=${FRANZ_VERSION:-v1.22.3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
export GOPATH=$work/gopath GOFLAGS=-modcacherw
dir=$(cd "$work" && go mod download -json "github.com/twmb/franz-go@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$work/src/pkg/kgo/kgbench"
cp "$here/main.go.txt" "$work/src/pkg/kgo/kgbench/main.go"
(cd "$work/src" && go build -o "$(realpath -m "$out")" ./pkg/kgo/kgbench)
echo "built $out (franz-go $version)"
