#!/usr/bin/env bash
# End to end over UDP: a generated 10-switch tree with every quirk, served by
# one real snmpsimd at one loopback address per switch (its LLDP management
# address), is crawled by `topotune discover` from a single seed, plus a seed
# where nothing answers. The discovered tree must equal the generator's truth
# (topotune topology diff), and the dead seed must be a warning, not a failure.
#
# Usage: crawl_snmpsim_test.sh TOPOTUNE SNMPREC_GEN
set -euo pipefail
topotune=$1
gen=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=snmpsim.sh
source "$here/snmpsim.sh"
work=$(mktemp -d /tmp/topotune-crawl.XXXXXX)
chmod 755 "$work"  # snmpsimd drops to nobody, who must reach the data.
trap 'snmpsim_stop; rm -rf "$work"' EXIT

port=$(snmpsim_free_port)
"$gen" --random-switches 10 --hosts-per-switch 3 --seed 3 --layout by-address --snmp-port "$port" --out "$work/tree"
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/tree/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/tree" "${endpoints[@]}" -- --v2c-arch

"$topotune" discover --seed "127.1.0.1,127.1.0.250" --port "$port" --timeout 0.5 --retries 1 \
  --hosts "$work/tree/hosts.yaml" --out "$work/found.yaml" 2>"$work/stderr" || {
  cat "$work/stderr"
  exit 1
}
cat "$work/stderr"
grep -q "127.1.0.250: not walked" "$work/stderr"
grep -q "discovered 10 switch(es), 30 host(s)" "$work/stderr"
"$topotune" topology diff "$work/tree/truth.yaml" "$work/found.yaml"
echo "crawl_snmpsim_test: the discovered tree equals the truth"
