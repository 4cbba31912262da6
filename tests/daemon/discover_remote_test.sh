#!/usr/bin/env bash
# topotuned discovers over SNMP: a generated 10-switch tree served by a real
# snmpsimd is walked by the daemon itself, first on its own at start-up
# (discovery.seeds in its configuration), then when `topotune discover
# --remote` asks. The topology the daemon then serves (`topotune topology
# show --yaml`) must equal the generator's truth; a second discovery of the
# same network must keep the version; the metrics must count both runs.
#
#
# Then real cabling: a tree with an out-of-band management network and
# dual-homed hosts, no hosts file, every host registered by its agent
# (topotune-agent serve --once over a sysfs directory with its NICs, MPI on
# eth0). The daemon must place each dual-homed host by the MPI NIC its agent
# reported, without a warning, and serve exactly the data tree.
#
# Usage: discover_remote_test.sh TOPOTUNED TOPOTUNE SNMPREC_GEN AGENT
set -euo pipefail
topotuned=$1
topotune=$2
gen=$3
agent=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../discovery/snmpsim.sh
source "$here/../discovery/snmpsim.sh"
# shellcheck source=../testlib.sh
source "$here/../testlib.sh"
case_name=discover_remote
work=$(mktemp -d /tmp/topotune-discover-remote.XXXXXX)
chmod 755 "$work" # snmpsimd drops to nobody, who must reach the data.
daemon_pids=()
cleanup() {
  for pid in "${daemon_pids[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  snmpsim_stop
  rm -rf "$work"
}
trap cleanup EXIT

port=$(snmpsim_free_port)
"$gen" --random-switches 10 --hosts-per-switch 3 --seed 5 --layout by-address --snmp-port "$port" --out "$work/tree"
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/tree/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/tree" "${endpoints[@]}" -- --v2c-arch

# start_daemon CONFIG DIR: topotuned in the background; sets server and metrics_port.
start_daemon() {
  local config=$1 dir=$2
  mkdir -p "$dir"
  "$topotuned" --config "$config" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --database "$dir/db/topotune.db" --port-file "$dir/ports" >"$dir.log" 2>&1 &
  daemon_pids+=($!)
  for _ in $(seq 200); do
    [[ -s $dir/ports ]] && break
    kill -0 "${daemon_pids[-1]}" 2>/dev/null || fail "topotuned exited at start-up: $(cat "$dir.log")"
    sleep 0.1
  done
  server=127.0.0.1:$(sed -n 's/^grpc=//p' "$dir/ports")
  metrics_port=$(sed -n 's/^metrics=//p' "$dir/ports")
}

cat >"$work/topotuned.yaml" <<YAML
hosts_file: $work/tree/hosts.yaml
discovery:
  seeds: [127.1.0.1]
  port: $port
  timeout: 0.5s
  retries: 1
YAML
start_daemon "$work/topotuned.yaml" "$work/d1"

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

# A seed with its port (ADDRESS:PORT, as the API documents): the same tree.
run "$topotune" discover --remote --server "$server" --seed "127.1.0.1:$port" --json
((status == 0)) || fail "discover --remote --seed 127.1.0.1:$port exited $status: $(cat "$work/stderr")"
grep -Eq '"switches_walked": *10[,}]' "$work/stdout" || fail "expected 10 switches walked from 127.1.0.1:$port"

# A seed where nothing answers is the daemon's UNAVAILABLE: exit 1 with the reason.
run "$topotune" discover --remote --server "$server" --seed 127.1.0.250 --timeout 60
((status == 1)) || fail "discover from a dead seed exited $status, expected 1"
grep -q "UNAVAILABLE" "$work/stderr" || fail "expected UNAVAILABLE"

python3 - "$metrics_port" >"$work/metrics.txt" <<'PY'
import sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode(), end="")
PY
grep -q '^topotune_discovery_runs_total{result="ok"} 3$' "$work/metrics.txt" || fail "expected 3 successful discoveries"
grep -q '^topotune_discovery_runs_total{result="error"} 1$' "$work/metrics.txt" || fail "expected 1 failed discovery"
grep -q '^topotune_discovery_switches 10$' "$work/metrics.txt" || fail "expected 10 switches"
grep -q '^topotune_discovery_hosts 30$' "$work/metrics.txt" || fail "expected 30 hosts"
promtool check metrics <"$work/metrics.txt" || fail "promtool check metrics"
echo "discover_remote_test: topotuned's discovery equals the truth; counted in its metrics"

# Real cabling, hosts known from their agents only.
"$gen" --random-switches 4 --hosts-per-switch 3 --seed 11 --layout by-address --snmp-port "$port" \
  --mgmt-base 127.3.0.0 --mgmt-network --dual-homed 0.5 --hosts-mpi-mac --hosts-mgmt-macs --out "$work/mgmt"
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/mgmt/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/mgmt" "${endpoints[@]}" -- --v2c-arch
cat >"$work/mgmt.yaml" <<YAML
discovery:
  port: $port
  timeout: 0.5s
  retries: 1
YAML
start_daemon "$work/mgmt.yaml" "$work/d2"
# Each host's NICs as sysfs shows them: eth0 carries MPI (its mpi_mac), the
# others (a second data NIC, the management NIC) follow.
python3 - "$work/mgmt/hosts.yaml" "$work/sysfs" <<'PY'
import os, sys, yaml
for h in yaml.safe_load(open(sys.argv[1]))["hosts"]:
    macs = [h["mpi_mac"]] + [m for m in h["macs"] if m != h["mpi_mac"]]
    for i, mac in enumerate(macs):
        d = os.path.join(sys.argv[2], h["name"], f"eth{i}")
        os.makedirs(d)
        for name, value in (("address", mac), ("type", "1"), ("flags", "0x1003"), ("operstate", "up"),
                            ("speed", "25000" if i == 0 else "1000")):
            with open(os.path.join(d, name), "w") as f:
                f.write(value + "\n")
PY
registered=0
for dir in "$work"/sysfs/*; do
  "$agent" serve --once --no-lldp --server "$server" --hostname "$(basename "$dir")" --sysfs-net "$dir" \
    --interface eth0 >>"$work/agent.log" 2>&1 || fail "topotune-agent serve --once for $dir: $(cat "$work/agent.log")"
  registered=$((registered + 1))
done
run "$topotune" discover --remote --server "$server" --seed 127.3.0.1 --json
((status == 0)) || fail "discover --remote over the management network exited $status: $(cat "$work/stderr")"
if grep -q "placed on the faster" "$work/stdout"; then
  fail "a dual-homed host was placed without its agent's MPI NIC: $(cat "$work/stdout")"
fi
"$topotune" topology show --server "$server" --yaml >"$work/mgmt-found.yaml"
run "$topotune" topology diff "$work/mgmt/truth.yaml" "$work/mgmt-found.yaml"
((status == 0)) || fail "the discovery over the management network differs from the truth: $(cat "$work/stdout")"
grep -q "note: management links: 4" "$work/d2.log" || fail "expected a note of 4 management links in the log"
echo "discover_remote_test: $registered hosts' agents placed their dual-homed hosts; the data tree equals the truth"
