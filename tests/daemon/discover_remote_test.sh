#!/usr/bin/env bash
# topotuned discovers over SNMP: a generated 10-switch tree served by a real
# snmpsimd is walked by the daemon itself, first on its own at start-up
# (discovery.seeds in its configuration), then when `topotune discover
# --remote` asks. The topology the daemon then serves (`topotune topology
# show --yaml`) must equal the generator's truth; a second discovery of the
# same network must keep the version; the metrics must count both runs.
#
# Usage: discover_remote_test.sh TOPOTUNED TOPOTUNE SNMPREC_GEN
set -euo pipefail
topotuned=$1
topotune=$2
gen=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../discovery/snmpsim.sh
source "$here/../discovery/snmpsim.sh"
# shellcheck source=../testlib.sh
source "$here/../testlib.sh"
case_name=discover_remote
work=$(mktemp -d /tmp/topotune-discover-remote.XXXXXX)
chmod 755 "$work" # snmpsimd drops to nobody, who must reach the data.
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  snmpsim_stop
  rm -rf "$work"
}
trap cleanup EXIT

port=$(snmpsim_free_port)
"$gen" --random-switches 10 --hosts-per-switch 3 --seed 5 --layout by-address --snmp-port "$port" --out "$work/tree"
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/tree/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/tree" "${endpoints[@]}" -- --v2c-arch

cat >"$work/topotuned.yaml" <<YAML
hosts_file: $work/tree/hosts.yaml
discovery:
  seeds: [127.1.0.1]
  port: $port
  timeout: 0.5s
  retries: 1
YAML
"$topotuned" --config "$work/topotuned.yaml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --database "$work/db/topotune.db" --port-file "$work/ports" >"$work/topotuned.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do
  [[ -s $work/ports ]] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "topotuned exited at start-up"
  sleep 0.1
done
server=127.0.0.1:$(sed -n 's/^grpc=//p' "$work/ports")
metrics_port=$(sed -n 's/^metrics=//p' "$work/ports")

# The discovery at start-up: wait for its topology.
for _ in $(seq 300); do
  "$topotune" topology show --server "$server" --yaml >"$work/found.yaml" 2>/dev/null && break
  sleep 0.1
done
[[ -s $work/found.yaml ]] || fail "no topology from the start-up discovery"
run "$topotune" topology diff "$work/tree/truth.yaml" "$work/found.yaml"
((status == 0)) || fail "the start-up discovery differs from the truth"

# Asked from the command line: the same network keeps the same version.
run "$topotune" discover --remote --server "$server" --json
((status == 0)) || fail "discover --remote exited $status"
grep -Eq '"topology_version": *"?1"?[,}]' "$work/stdout" || fail "expected topology version 1"
grep -Eq '"changed": *false' "$work/stdout" || fail "expected an unchanged topology"
grep -Eq '"switches_walked": *10[,}]' "$work/stdout" || fail "expected 10 switches walked"

# A seed where nothing answers is the daemon's UNAVAILABLE: exit 1 with the reason.
run "$topotune" discover --remote --server "$server" --seed 127.1.0.250 --timeout 60
((status == 1)) || fail "discover from a dead seed exited $status, expected 1"
grep -q "UNAVAILABLE" "$work/stderr" || fail "expected UNAVAILABLE"

python3 - "$metrics_port" >"$work/metrics.txt" <<'PY'
import sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode(), end="")
PY
grep -q '^topotune_discovery_runs_total{result="ok"} 2$' "$work/metrics.txt" || fail "expected 2 successful discoveries"
grep -q '^topotune_discovery_runs_total{result="error"} 1$' "$work/metrics.txt" || fail "expected 1 failed discovery"
grep -q '^topotune_discovery_switches 10$' "$work/metrics.txt" || fail "expected 10 switches"
grep -q '^topotune_discovery_hosts 30$' "$work/metrics.txt" || fail "expected 30 hosts"
promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
echo "discover_remote_test: topotuned's discovery equals the truth; counted in its metrics"
