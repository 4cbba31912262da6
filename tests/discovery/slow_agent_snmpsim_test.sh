#!/usr/bin/env bash
# A slow switch does not cost discovery its subtree. A tree of four switches
# (core, then agg, with leaf0 and leaf1 behind agg) is served by a real
# snmpsimd; agg's agent sits behind udp_delay_proxy.py, which holds every
# answer 1.2 s. `topotune discover --timeout 1 --retries 0` from the core gets
# no answer from agg within 1 s (the progress line says it will try again),
# tries it again when nothing else is left with three times the timeout (3 s,
# which a 1.2 s answer meets), and goes on to the leaves behind it: the tree
# equals the truth, and the summary says that one switch answered only on
# retry. Deterministic on any machine: no answer can come before the proxy's
# 1.2 s, after the first try gave up; a loaded machine has 1.8 s more before
# the retry would give up.
#
# Usage: slow_agent_snmpsim_test.sh TOPOTUNE SNMPREC_GEN
set -euo pipefail
topotune=$1
gen=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_name=slow_agent
# shellcheck source=snmpsim.sh
source "$here/snmpsim.sh"
# shellcheck source=../testlib.sh
source "$here/../testlib.sh"
work=$(mktemp -d /tmp/topotune-slow-agent.XXXXXX)
chmod 755 "$work"  # snmpsimd drops to nobody, who must reach the data.
proxy_pid=
cleanup() {
  if [[ -n $proxy_pid ]]; then
    kill "$proxy_pid" 2>/dev/null || true
    wait "$proxy_pid" 2>/dev/null || true
  fi
  snmpsim_stop
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/topology.yaml" <<'EOF'
switches:
  - name: core
  - name: agg
  - name: leaf0
  - name: leaf1
hosts:
  - {name: h0}
  - {name: h1}
  - {name: h2}
  - {name: h3}
  - {name: h4}
  - {name: h5}
links:
  - [core, agg, 10Gbps]
  - [agg, leaf0, 10Gbps]
  - [agg, leaf1, 10Gbps]
  - [core, h0, 1Gbps]
  - [agg, h1, 1Gbps]
  - [leaf0, h2, 1Gbps]
  - [leaf0, h3, 1Gbps]
  - [leaf1, h4, 1Gbps]
  - [leaf1, h5, 1Gbps]
EOF

port=$(snmpsim_free_port)
run "$gen" --topology "$work/topology.yaml" --no-quirks --fdb-only-fraction 0 --layout by-address \
  --snmp-port "$port" --out "$work/tree"
((status == 0)) || fail "the generator failed"
# Each switch's management address, by name.
address_of() {
  python3 -c 'import sys, yaml
print(next(s["address"] for s in yaml.safe_load(open(sys.argv[1]))["switches"] if s["name"] == sys.argv[2]))' \
    "$work/tree/switches.yaml" "$1"
}
core=$(address_of core)
agg=$(address_of agg)
# snmpsimd serves agg's recording at 127.3.0.x instead; the proxy takes its
# place at agg's management address, the one LLDP names.
hidden=127.3.0.${agg##*.}
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/tree/snmpsimd.args")
endpoints=("${endpoints[@]/#$agg:/$hidden:}")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/tree" "${endpoints[@]}" -- --v2c-arch
python3 "$here/udp_delay_proxy.py" "$agg:$port" "$hidden:$port" 1.2 >"$work/proxy.out" 2>&1 &
proxy_pid=$!
for _ in $(seq 100); do
  grep -q ready "$work/proxy.out" && break
  kill -0 "$proxy_pid" 2>/dev/null || fail "udp_delay_proxy.py exited: $(cat "$work/proxy.out")"
  sleep 0.1
done
grep -q ready "$work/proxy.out" || fail "udp_delay_proxy.py is not ready"

run "$topotune" discover --seed "$core" --port "$port" --timeout 1 --retries 0 --out "$work/found.yaml"
cat "$work/stderr"
((status == 0)) || fail "discover failed"
grep -q "^discover: .* $agg: no response; tried again when the crawl ends, with a 3 s timeout$" "$work/stderr" ||
  fail "agg ($agg) answered the first try: it was not slow enough for the test"
grep -q "^warning: agg at $agg answered only when tried again with a 3 s timeout" "$work/stderr" ||
  fail "no warning that agg answered only when tried again"
grep -q "^discovered 4 switch(es), 6 host(s) .* 0 unreachable, 1 answered only on retry (1 switch(es) that did not answer tried again with a 3 s timeout)" "$work/stderr" ||
  fail "the summary does not count agg as answering only on retry"
run "$topotune" topology diff "$work/tree/truth.yaml" "$work/found.yaml"
((status == 0)) || fail "the discovered tree differs from the truth: $(cat "$work/stdout")"
echo "slow_agent_snmpsim_test: agg answered only when tried again; the tree behind it equals the truth"
