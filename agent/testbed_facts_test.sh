#!/usr/bin/env bash
# `topotune-agent facts` on every host of the emulated cluster (label
# testbed): real lldpd in network namespaces, so the LLDP neighbour each host
# reports must be the switch port the topology file plugs it into.
#
# Usage: testbed_facts_test.sh TOPOTUNE_AGENT TESTBED_PY
#   deploy/examples/two-switch-4x4.yaml: h0..h3 on s0 ports p2..p5, h4..h7 on
#   s1 ports p2..p5 (p1 of each switch is the inter-switch link).
# Needs root (exit 77 = skipped otherwise). Brings the testbed up with its own
# namespace prefix and always brings it down.
set -euo pipefail

agent=$1 testbed=$2
topology=$(dirname "$testbed")/../examples/two-switch-4x4.yaml
python=${PYTHON:-python3}
prefix=tta-
state=/run/topotune-testbed/$prefix
case_name=agent_facts
work=$(mktemp -d)

[[ $(id -u) -eq 0 ]] || { echo "SKIP: the testbed needs root"; exit 77; }

# shellcheck source=../tests/testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tests/testlib.sh"

cleanup() {
  "$python" "$testbed" --prefix "$prefix" down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

run "$python" "$testbed" --prefix "$prefix" up --no-snmp "$topology"
[[ $status -eq 0 ]] || fail "testbed up failed"

for i in 0 1 2 3 4 5 6 7; do
  host=${prefix}h$i
  if ((i < 4)); then switch=${prefix}s0; else switch=${prefix}s1; fi
  port=p$((i % 4 + 2))
  ok=0
  # The host's lldpd hears its switch within a few transmit intervals (1 s).
  for _ in $(seq 1 20); do
    run "$python" "$testbed" --prefix "$prefix" exec "h$i" -- "$agent" facts --lldpd-socket "$state/$host.lldpd.sock"
    [[ $status -eq 0 ]] || fail "facts on $host exited with $status"
    if "$python" - "$work/stdout" "$host" "$switch" "$port" <<'EOF'; then ok=1; break; fi
import json, sys
facts = json.load(open(sys.argv[1]))
host, switch, port = sys.argv[2:5]
assert facts["hostname"] == host, facts["hostname"]
assert facts["interface"] == "eth0", facts["interface"]
assert len(facts["macs"]) == 1 and facts["macs"][0].startswith("02:74:74:03:"), facts["macs"]
assert facts["nic_speed_bps"] > 0, facts["nic_speed_bps"]
n = facts["lldp_neighbor"]
if n is None:
    sys.exit(1)  # not heard yet
assert n["system_name"] == switch, n
assert n["port_id_subtype"] == "LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME" and n["port_id"] == port, n
assert n["chassis_id_subtype"] == "LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS", n
assert n["management_address"].startswith("198.18.0."), n
assert facts["warnings"] == [], facts["warnings"]
EOF
    sleep 0.5
  done
  [[ $ok -eq 1 ]] || fail "$host does not report $switch port $port as its LLDP neighbour"
  echo "ok: $host -> $switch $port"
done
