#!/usr/bin/env bash
# `cmake --install` of the build tree (DESTDIR, prefix /usr): the exact file
# list with every mode (common.sh), the units rewritten for /usr, --help of
# every installed program and script, shared libraries all resolved from the
# system with no path into the build tree, and the installed topotuned
# started with the installed topotuned.yaml the way its systemd unit starts it
# (STATE_DIRECTORY set, no database flag): it serves /metrics, takes the
# installed agent's registration, and stops on SIGTERM with exit 0. Meanwhile
# the installed Slurm/MPI scripts run from where they are installed (the
# TaskProlog, topotune-mpirun with a real one-rank mpirun job, and
# topotune-export-rules against the installed topotuned), and promtool checks
# the installed Prometheus files.
#
# Usage: layout_test.sh BUILD_DIR SOURCE_DIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
need curl curl
need mpirun openmpi-bin
need promtool prometheus
install_tree

case_name="file list"
(cd "$root" && find . ! -type d -printf '%m %P\n') | check_files
units=$root/usr/lib/systemd/system
grep -qx 'ExecStart=/usr/sbin/topotuned --config /etc/topotune/topotuned.yaml' "$units/topotuned.service" ||
  fail "topotuned.service does not start /usr/sbin/topotuned"
grep -qx 'ExecStart=/usr/bin/topotune-agent serve --config /etc/topotune/agent.yaml' "$units/topotune-agent.service" ||
  fail "topotune-agent.service does not start /usr/bin/topotune-agent"
grep -q '^ExecStart=/usr/bin/topotune-export-rules ' "$units/topotune-export-rules.service" ||
  fail "topotune-export-rules.service does not start /usr/bin/topotune-export-rules"
doc=$(sed -n 's|^Documentation=file:||p' "$units/topotune-export-rules.service")
[[ -f $root$doc ]] || fail "topotune-export-rules.service: Documentation=file:$doc is not installed"
if local_paths=$(grep -n /usr/local "$units"/*); then
  fail "an installed unit still names /usr/local: $local_paths"
fi
echo "ok: $(wc -l <<<"$expected_files") files with the expected modes; the units name /usr"

case_name="--help"
for p in usr/bin/topotune usr/bin/topotune-agent usr/bin/topotune-bench usr/sbin/topotuned \
  usr/bin/topotune-mpirun usr/bin/topotune-export-rules usr/share/topotune/slurm/topotune-task-prolog.sh; do
  run "$root/$p" --help
  ((status == 0)) || fail "$p --help exited $status"
  grep -q "$(basename "$p")" "$work/stdout" || fail "$p --help does not name the program"
done
echo "ok: every installed program answers --help"

case_name="shared libraries"
for p in usr/bin/topotune usr/bin/topotune-agent usr/bin/topotune-bench usr/sbin/topotuned \
  usr/lib/libtopotune-mpi.so usr/lib/libtopotune-mpich.so usr/lib/libtopotune-mpi-client.so; do
  run ldd "$root/$p"
  ((status == 0)) || fail "ldd $p exited $status"
  ! grep -q 'not found' "$work/stdout" || fail "$p: a library is not found: $(grep 'not found' "$work/stdout")"
  ! grep -qF -e "$build" -e "$source" "$work/stdout" || fail "$p loads a library from the build or source tree"
  run readelf -d "$root/$p"
  ((status == 0)) || fail "readelf -d $p exited $status"
  if grep -E '\((RPATH|RUNPATH)\)' "$work/stdout" | grep -v -E '\[\$ORIGIN[^]]*\]'; then
    fail "$p has an RPATH/RUNPATH other than \$ORIGIN"
  fi
done
echo "ok: every installed ELF file resolves its libraries from the system, without RPATH"

case_name="installed topotuned"
state=$work/state # What systemd's StateDirectory=topotune makes.
mkdir -m 0750 "$state"
STATE_DIRECTORY=$state "$root/usr/sbin/topotuned" --config "$root/etc/topotune/topotuned.yaml" \
  --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/ports" >"$work/topotuned.log" 2>&1 &
daemon=$!
pids+=("$daemon")
for _ in $(seq 200); do
  [[ -s $work/ports ]] && break
  kill -0 "$daemon" 2>/dev/null || fail "topotuned exited before it served"
  sleep 0.1
done
[[ -s $work/ports ]] || fail "topotuned wrote no port file within 20 s"
grpc=$(sed -n 's/^grpc=//p' "$work/ports")
metrics=$(sed -n 's/^metrics=//p' "$work/ports")
[[ -f $state/topotune.db ]] || fail "the database is not \$STATE_DIRECTORY/topotune.db: $(ls -A "$state")"
grep -qF "config $root/etc/topotune/topotuned.yaml" "$work/topotuned.log" || fail "topotuned did not load the installed configuration"

run curl -sS --max-time 10 "http://127.0.0.1:$metrics/metrics"
((status == 0)) || fail "GET /metrics failed (curl exit $status)"
grep -q '^# TYPE topotune_' "$work/stdout" || fail "/metrics has no topotune_ metric"
echo "ok: the installed topotuned serves /metrics on port $metrics with its database in \$STATE_DIRECTORY"

# The installed agent with the installed agent.yaml registers and heartbeats
# once (no lldpd here: --no-lldp).
case_name="installed topotune-agent"
run "$root/usr/bin/topotune-agent" serve --once --config "$root/etc/topotune/agent.yaml" \
  --server "127.0.0.1:$grpc" --no-lldp --hostname install-test-node
if ((status != 0)) && grep -q 'no MAC address found' "$work/stderr"; then
  # A network namespace with loopback only: no facts to register.
  echo "note: no network interface but loopback here; the agent's registration is not checked"
else
  ((status == 0)) || fail "topotune-agent serve --once exited $status"
  grep -qF "config $root/etc/topotune/agent.yaml" "$work/stderr" || fail "the agent did not load the installed agent.yaml"
  echo "ok: the installed agent registered with the installed topotuned"
fi

# The scripts find each other, the library and the CLI from where they are
# installed (here under a DESTDIR, which the .deb's /usr only shortens): the
# TaskProlog the library in ../../../lib, topotune-mpirun the prolog in
# ../share/topotune/slurm, topotune-export-rules the topotune beside it. Jobs
# see the library as a plain path (<prefix>/lib/..., no "..").
case_name="installed scripts"
library=$(realpath "$root/usr/lib/libtopotune-mpi.so")
grep -v '^TOPOTUNE_LIBRARY=' "$root/usr/share/topotune/slurm/job.env.example" >"$work/job.env"
run env -u LD_PRELOAD -u TOPOTUNE_SERVER TOPOTUNE_JOB_ENV="$work/job.env" \
  "$root/usr/share/topotune/slurm/topotune-task-prolog.sh"
((status == 0)) || fail "topotune-task-prolog.sh exited $status"
preload=$(sed -n 's/^export LD_PRELOAD=//p' "$work/stdout")
[[ $preload == "$library" ]] || fail "the prolog's LD_PRELOAD is '$preload', not the installed $library"
grep -qx 'export TOPOTUNE_SERVER=head:50051' "$work/stdout" || fail "the prolog did not pass the site file's TOPOTUNE_SERVER"
# A real one-rank job: the rank's environment as mpirun gave it (the rank's
# shell expands it: SC2016).
# shellcheck disable=SC2016
run env -u LD_PRELOAD TOPOTUNE_JOB_ENV="$work/job.env" TOPOTUNE_SERVER="127.0.0.1:$grpc" \
  timeout 60 "$root/usr/bin/topotune-mpirun" --allow-run-as-root --oversubscribe -np 1 \
  sh -c 'echo "LD_PRELOAD=$LD_PRELOAD"; echo "TOPOTUNE_SERVER=$TOPOTUNE_SERVER"'
((status == 0)) || fail "topotune-mpirun exited $status"
preload=$(sed -n 's/^LD_PRELOAD=//p' "$work/stdout")
[[ $preload == "$library" ]] || fail "the rank's LD_PRELOAD is '$preload', not the installed $library"
grep -qx "TOPOTUNE_SERVER=127.0.0.1:$grpc" "$work/stdout" || fail "the rank did not get the caller's TOPOTUNE_SERVER"
# PATH without the build tree: the export reaches the installed topotuned,
# which has no topology, so it fails and writes nothing.
mkdir "$work/rules"
run env -u TOPOTUNE PATH=/usr/bin:/bin "$root/usr/bin/topotune-export-rules" "$work/rules/ompi-rules.txt" \
  -- --server "127.0.0.1:$grpc"
((status == 1)) || fail "topotune-export-rules exited $status, expected 1 (no topology)"
grep -q 'has no topology yet' "$work/stderr" || fail "topotune-export-rules did not run the installed topotune export"
[[ -z $(ls -A "$work/rules") ]] || fail "topotune-export-rules left files: $(ls -A "$work/rules")"
echo "ok: the installed prolog, topotune-mpirun (one rank) and topotune-export-rules find the library, each other and topotune"

# The monitoring files name each other relatively, so they work where installed.
case_name="installed monitoring files"
prom=$root/usr/share/topotune/prometheus
run promtool check config "$prom/prometheus.yml"
((status == 0)) || fail "promtool check config exited $status"
run promtool test rules "$prom/topotune.rules.test.yml"
((status == 0)) || fail "promtool test rules exited $status"
for f in "$root"/usr/share/topotune/grafana/dashboards/*.json; do
  python3 -m json.tool "$f" >/dev/null || fail "$f is not JSON"
done
# Grafana's file provider reads the dashboards where the package puts them.
provider_path=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["providers"][0]["options"]["path"])' \
  "$root/usr/share/topotune/grafana/provisioning/dashboards/topotune.yaml")
[[ $provider_path == /usr/share/topotune/grafana/dashboards && -n $(ls "$root$provider_path"/*.json) ]] ||
  fail "the Grafana provider reads '$provider_path', where the package installs no dashboard"
echo "ok: promtool accepts the installed prometheus.yml with its rules and their tests pass; the dashboards are JSON where Grafana's provider reads them"

case_name="SIGTERM"
kill -TERM "$daemon"
set +e
timeout 15 tail --pid="$daemon" -f /dev/null
wait "$daemon"
rc=$?
set -e
pids=()
((rc == 0)) || fail "topotuned exited $rc after SIGTERM, expected 0"
echo "ok: topotuned stopped on SIGTERM with exit 0"
