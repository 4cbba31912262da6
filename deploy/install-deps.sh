#!/usr/bin/env bash
# Installs every Debian package topotune needs to build, test and run its
# emulated-cluster demo. Idempotent: packages already present are skipped, and
# `apt-get update` runs at most once per invocation (and only when something is
# missing).
#
# Usage: deploy/install-deps.sh [--check]
#   --check   only report which packages are missing; exit 1 if any are.
set -euo pipefail

PACKAGES=(
  # Toolchain
  build-essential cmake ninja-build pkg-config git clang clang-format libclang-rt-14-dev
  # Compiler cache: CMake compiles through it when present (cmake/TopotuneCcache.cmake)
  ccache
  # RPC and serialisation
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # Storage
  libsqlite3-dev sqlite3
  # Compression (bench/plan_load measures gzip of plans)
  zlib1g-dev
  # MPI; gfortran for the Fortran bindings' tests (tests/shim/fcoll_check.F90);
  # MPICH for libtopotune-mpich.so (its alternatives priority, 40, is below
  # Open MPI's 50: mpicc, mpirun and mpi.h stay Open MPI's)
  openmpi-bin libopenmpi-dev gfortran libmpich-dev mpich
  # Metrics
  prometheus-cpp-dev
  # SNMP client and test peers (python3-gdbm: snmpsimd indexes its recordings
  # with gdbm; without it, dbm.dumb makes it several times slower)
  libsnmp-dev snmp snmpd snmpsim python3-gdbm lldpd
  # Config, CLI, JSON, logging
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  # Linear programs (tuner/fractional_bound.cc: the fractional phase cover)
  libglpk-dev
  # Tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # Simulation of large platforms
  libsimgrid-dev
  # Emulated cluster
  iproute2 util-linux procps python3 python3-yaml
  # The Python example client and its test (tests/clients/python): gRPC and
  # protobuf for /usr/bin/python3; its stubs come from protobuf-compiler and
  # protobuf-compiler-grpc's grpc_python_plugin (above), not python3-grpc-tools
  python3-grpcio python3-protobuf
  # Monitoring tests
  prometheus
  # Slurm integration test: a single-node cluster of its own (slurmctld,
  # slurmd, srun, MPI plugins, munge). slurmd and slurmctld.service start only
  # with /etc/slurm/slurm.conf; munge.service may start, on its own socket
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
  # Plots for benchmark reports
  gnuplot-nox
  # Install and packaging tests (tests/install): dpkg-shlibdeps for the .deb's
  # Depends, systemd-analyze and systemd-sysusers for the units, curl for /metrics
  dpkg-dev systemd curl
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [[ "${1:-}" == "--check" ]]; then
  if ((${#missing[@]})); then
    echo "missing packages: ${missing[*]}"
    exit 1
  fi
  echo "all ${#PACKAGES[@]} packages installed"
  exit 0
fi

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO="sudo"
  else
    echo "install-deps: must run as root (or with sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# --no-install-recommends keeps optional daemons (e.g. node exporters) off the
# machine; services are not started by the package install in containers.
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
