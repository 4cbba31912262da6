#!/usr/bin/env bash
# Generates the Python stubs of topotuned's gRPC API (proto/topotune/v1/*.proto)
# into OUT_DIR: OUT_DIR/topotune/v1/{common,plans,admin,agents}_pb2.py and
# *_pb2_grpc.py, with __init__.py files so that `import topotune.v1.plans_pb2`
# works with OUT_DIR on sys.path (the modules import each other as
# topotune.v1.*, as the protos do).
#
# It needs protoc 3.15 or newer: plans.proto and agents.proto have proto3
# `optional` fields. Debian 12's protoc (package protobuf-compiler, 3.21) and
# grpc_python_plugin (package protobuf-compiler-grpc) do it. The protoc bundled
# in python3-grpc-tools (`python3 -m grpc_tools.protoc`) is 3.5 and rejects
# them. The generated code needs python3-protobuf 3.20 or newer at run time
# (Debian 12: python3-protobuf, python3-grpcio).
#
# Usage: generate_stubs.sh OUT_DIR
#   PROTOC=path and GRPC_PYTHON_PLUGIN=path override the programs found on PATH.
set -euo pipefail

prog=generate_stubs.sh
if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  echo "usage: $prog OUT_DIR    (Python stubs of proto/topotune/v1/*.proto into OUT_DIR)" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
proto_dir=$root/proto

protoc=${PROTOC:-protoc}
if ! command -v "$protoc" >/dev/null; then
  echo "$prog: no $protoc on PATH; on Debian 12: apt install protobuf-compiler protobuf-compiler-grpc" >&2
  exit 1
fi
plugin=${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || true)}
if [[ -z $plugin || ! -x $plugin ]]; then
  echo "$prog: no grpc_python_plugin${GRPC_PYTHON_PLUGIN:+ at $GRPC_PYTHON_PLUGIN};" \
    "on Debian 12: apt install protobuf-compiler-grpc" >&2
  exit 1
fi

# "libprotoc 3.21.12"; from 22.0 on, protoc numbers its releases 22.x, 23.x, ...
version=$("$protoc" --version 2>/dev/null | sed -n 's/^libprotoc \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p')
if [[ -z $version ]]; then
  echo "$prog: cannot read the version of $(command -v "$protoc") ('$("$protoc" --version 2>&1 | head -1)')" >&2
  exit 1
fi
read -r major minor <<<"$version"
if ((major < 3 || (major == 3 && minor < 15))); then
  echo "$prog: $(command -v "$protoc") is protoc $major.$minor; the topotune protos need 3.15 or newer" \
    "(proto3 \`optional\` fields in plans.proto and agents.proto). On Debian 12 use /usr/bin/protoc 3.21:" \
    "apt install protobuf-compiler protobuf-compiler-grpc (not python3-grpc-tools, whose protoc is 3.5)" >&2
  exit 1
fi

mkdir -p "$out"
protos=("$proto_dir"/topotune/v1/*.proto)
"$protoc" -I "$proto_dir" --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" "${protos[@]}"
touch "$out/topotune/__init__.py" "$out/topotune/v1/__init__.py"
echo "$prog: ${#protos[@]} protos, protoc $major.$minor: Python stubs in $out/topotune/v1"
