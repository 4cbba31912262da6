#!/usr/bin/env bash
# End to end over UDP: a generated 10-switch tree with every quirk, served by
# one real snmpsimd at one loopback address per switch (its LLDP management
# address), is crawled by `topotune discover` from a single seed, plus a seed
# where nothing answers. The discovered tree must equal the generator's truth
# (topotune topology diff), and the dead seed must be a warning, not a failure.
# Then a tree cabled like a real cluster (a management network, dual-homed
# hosts, duplicate sysNames, MACs ending in 00, a sysName with control bytes),
# with and without a hosts file: the data tree exactly, YAML that PyYAML
# parses, and no unprintable byte on stderr or in the file.
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

# Real cabling: the same kind of tree with an out-of-band management network
# (every switch's mgmt0, not a bridge port, and every host's management NIC
# on a management switch), dual-homed hosts, three hosts named 'axis', MACs
# ending in 00 and a sysName with control bytes. Crawled from one seed, with
# and without a hosts file, the data tree must come out exactly, the
# management network only as a note, and the YAML must parse strictly.
"$gen" --random-switches 8 --hosts-per-switch 3 --seed 7 --layout by-address --snmp-port "$port" \
  --mgmt-base 127.2.0.0 --fdb-only-fraction 0 --mgmt-network --dual-homed 0.3 --hosts-mpi-mac \
  --hosts-mgmt-macs --duplicate-sysnames --mac-00 --control-bytes --out "$work/mgmt"
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/mgmt/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/mgmt" "${endpoints[@]}" -- --v2c-arch
for with_hosts in yes no; do
  # Without a hosts file the host whose sysName is FF FE 00 41 is named by
  # the safe form of those bytes.
  hosts_args=()
  sed 's/ctrlbytes/"---A"/' "$work/mgmt/truth.yaml" >"$work/mgmt/truth-$with_hosts.yaml"
  if [[ $with_hosts == yes ]]; then
    hosts_args=(--hosts "$work/mgmt/hosts.yaml")
    cp "$work/mgmt/truth.yaml" "$work/mgmt/truth-$with_hosts.yaml"
  fi
  "$topotune" discover --seed 127.2.0.1 --port "$port" --timeout 0.5 --retries 1 "${hosts_args[@]}" \
    --out "$work/mgmt-found.yaml" 2>"$work/stderr" || {
    cat "$work/stderr"
    exit 1
  }
  cat "$work/stderr"
  grep -q "discovered 8 switch(es)" "$work/stderr"
  grep -q "management links: 8" "$work/stderr"
  grep -q "management network: 1 switch" "$work/stderr"
  grep -q "both call themselves 'axis'; the second is named 'axis-2bbb10'" "$work/stderr"
  # Dual-homed hosts: placed by mpi_mac in silence, else on the faster link with a warning each.
  placed=$(grep -c "placed on the faster" "$work/stderr" || true)
  if [[ $with_hosts == yes ]]; then
    ((placed == 0))
  else
    ((placed == 7))
  fi
  "$topotune" topology diff "$work/mgmt/truth-$with_hosts.yaml" "$work/mgmt-found.yaml"
  python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1], encoding="utf-8"))' "$work/mgmt-found.yaml"
  LC_ALL=C grep -q '[^ -~]' "$work/mgmt-found.yaml" "$work/stderr" && {
    echo "a byte outside 0x20-0x7e reached the YAML or stderr" >&2
    exit 1
  }
  echo "crawl_snmpsim_test: management network, hosts file: $with_hosts: the data tree equals the truth"
done
