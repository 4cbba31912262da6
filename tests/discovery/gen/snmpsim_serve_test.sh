#!/usr/bin/env bash
# Integration test (label snmp): generated recordings served by a real
# snmpsimd 0.4.5 and walked with net-snmp's snmpwalk and snmpbulkwalk.
#
#  1. A 7-switch, 3-level tree (seed 1, every quirk) in the by-community layout:
#     snmpsim-datafile reads every file back byte for byte (also with
#     --sort-records, so the files are in snmpsim's own OID order); one
#     snmpsimd serves all switches at 127.0.0.1, selected by community; for
#     every switch, walks of LLDP v1 (1.0.8802.1.1.2), LLDP v2, MIB-2 and the
#     LAG MIB return exactly the rows of the file, values included.
#  2. A 2-switch tree in the by-address layout: ONE snmpsimd (--v2c-arch,
#     endpoints from snmpsimd.args) serves s0 at 127.1.0.1 and s1 at
#     127.1.0.2, same port, community "public"; the LLDP management address
#     that s0 advertises leads to s1 (one crawl step).
#
# Usage: snmpsim_serve_test.sh <path to topotune-snmprec-gen>
# Exit 77 (ctest SKIP_RETURN_CODE) when a tool is missing. Every snmpsimd this
# script starts is killed by its PID on exit.
set -euo pipefail

gen=${1:?usage: snmpsim_serve_test.sh <path to topotune-snmprec-gen>}
for tool in snmpsimd snmpsim-datafile snmpwalk snmpbulkwalk snmpget python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found (apt-get install snmpsim snmp)"
    exit 77
  fi
done

# shellcheck source=../snmpsim.sh
source "$(dirname "${BASH_SOURCE[0]}")/../snmpsim.sh"
work=$(mktemp -d /tmp/snmpsim-serve-test.XXXXXX)
chmod 755 "$work"  # snmpsimd drops to nobody, who must read the data.
trap 'snmpsim_stop; rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$work"/*.log "${SNMPSIM_DIRS[@]/%//snmpsimd.log}"; do
    [ -f "$log" ] && { echo "--- tail of $log" >&2; tail -n 20 "$log" >&2; }
  done
  exit 1
}

# wait_for COMMUNITY HOST:PORT EXPECTED_SYSNAME
wait_for() {
  local i out
  for i in $(seq 1 60); do
    out=$(snmpget -m '' -v2c -c "$1" -t 1 -r 0 -Oqv "$2" 1.3.6.1.2.1.1.5.0 2>/dev/null || true)
    if [ -n "$out" ]; then
      [ "$out" = "\"$3\"" ] || [ "$out" = "$3" ] || fail "$2 community $1: sysName $out, expected $3"
      return 0
    fi
    sleep 0.5
  done
  fail "snmpsimd did not answer at $2 (community $1)"
}

# compare.py FILE WALK_OUTPUT PREFIX: the walk returned exactly the file's rows under PREFIX.
cat >"$work/compare.py" <<'EOF'
import sys

path, walk, prefix = sys.argv[1], sys.argv[2], sys.argv[3]

def under(oid):
    return oid == prefix or oid.startswith(prefix + ".")

def key(oid):
    return [int(x) for x in oid.split(".")]

expected = []
for line in open(path):
    oid, tag, value = line.rstrip("\n").split("|", 2)
    if not under(oid):
        continue
    if tag == "2":
        shown = "INTEGER: " + value
    elif tag == "66":
        shown = "Gauge32: " + value
    elif tag == "6":
        shown = "OID: ." + value
    elif tag in ("4", "4x"):
        data = bytes.fromhex(value) if tag == "4x" else value.encode()
        shown = "Hex-STRING: " + " ".join("%02X" % b for b in data) if data else '""'
    else:
        sys.exit("%s: unexpected tag %s" % (path, tag))
    expected.append((oid, shown))
expected.sort(key=lambda r: key(r[0]))

got = []
for line in open(walk):
    line = line.rstrip("\n")
    if line.startswith("."):
        oid, _, value = line[1:].partition(" = ")
        got.append([oid, value.strip()])
    elif got and line.strip():  # a long Hex-STRING continues on the next line
        got[-1][1] += " " + line.strip()
got = [(o, v) for o, v in got if under(o) and not v.startswith(("No more variables", "No Such"))]

if len(got) != len(expected):
    sys.exit("%s under %s: walk returned %d rows, the file has %d" % (path, prefix, len(got), len(expected)))
for (go, gv), (eo, ev) in zip(got, expected):
    if go != eo or " ".join(gv.split()) != " ".join(ev.split()):
        sys.exit("%s under %s: walk gave %s = %s, the file has %s = %s" % (path, prefix, go, gv, eo, ev))
print("%s under %s: %d rows match" % (path.rsplit("/", 1)[-1], prefix, len(got)))
EOF

walk_and_compare() {  # FILE COMMUNITY HOST:PORT
  local file=$1 community=$2 agent=$3 prefix tool
  for prefix in 1.0.8802.1.1.2 1.3.111.2.802.1.1.13 1.3.6.1.2.1 1.2.840.10006.300.43; do
    for tool in snmpwalk snmpbulkwalk; do
      "$tool" -m '' -v2c -c "$community" -t 2 -r 1 -On -Oe -Ox "$agent" "$prefix" >"$work/walk.out" 2>&1 ||
        fail "$tool -c $community $agent $prefix: $(tail -n 3 "$work/walk.out")"
      python3 "$work/compare.py" "$file" "$work/walk.out" "$prefix" >"$work/compare.out" ||
        fail "$tool: $(cat "$work/compare.out")"
    done
    echo "  $(cat "$work/compare.out") (snmpwalk and snmpbulkwalk)"
  done
}

chmod 755 "$work"

# --- 1. by community -------------------------------------------------------
"$gen" --random-switches 7 --depth 3 --hosts-per-switch 2 --seed 1 --out "$work/tree"
chmod -R a+rX "$work/tree"
for file in "$work"/tree/*.snmprec; do
  snmpsim-datafile --source-record-type=snmprec --destination-record-type=snmprec --input-file="$file" \
    --output-file="$work/datafile.out" >"$work/datafile.log" 2>&1 || fail "snmpsim-datafile $file: $(cat "$work/datafile.log")"
  cmp -s "$file" "$work/datafile.out" || fail "snmpsim-datafile does not reproduce $file"
  snmpsim-datafile --source-record-type=snmprec --destination-record-type=snmprec --sort-records \
    --input-file="$file" --output-file="$work/datafile.out" >"$work/datafile.log" 2>&1 ||
    fail "snmpsim-datafile --sort-records $file: $(cat "$work/datafile.log")"
  cmp -s "$file" "$work/datafile.out" || fail "$file is not in snmpsim's OID order"
done
echo "snmpsim-datafile reads back all $(ls "$work"/tree/*.snmprec | wc -l) recordings byte for byte, in order"

port=$(snmpsim_free_port)
[ -n "$port" ] || fail "no free UDP port"
SNMPSIM_COMMUNITY=s0 snmpsim_start "$work/tree" "127.0.0.1:$port" -- --v2c-arch || fail "snmpsimd did not start"
wait_for s0 "127.0.0.1:$port" s0
for file in "$work"/tree/*.snmprec; do
  community=$(basename "$file" .snmprec)
  wait_for "$community" "127.0.0.1:$port" "$community"
  walk_and_compare "$file" "$community" "127.0.0.1:$port"
done

# --- 2. by address: one snmpsimd, one address per switch -------------------
port2=$(snmpsim_free_port)
[ -n "$port2" ] || fail "no free UDP port"
"$gen" --random-switches 2 --depth 2 --hosts-per-switch 2 --seed 1 --layout by-address --mgmt-base 127.1.0.0 \
  --snmp-port "$port2" --out "$work/addr"
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/addr/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/addr" "${endpoints[@]}" -- --v2c-arch || fail "snmpsimd did not start"
wait_for public "127.1.0.1:$port2" s0
wait_for public "127.1.0.2:$port2" s1
walk_and_compare "$work/addr/public/1.3.6.1.6.1.1.0.snmprec" public "127.1.0.1:$port2"
walk_and_compare "$work/addr/public/1.3.6.1.6.1.1.1.snmprec" public "127.1.0.2:$port2"
# Crawl: the management addresses s0 advertises for its LLDP neighbours (v1 or
# v2 lldpRemManAddrTable index ends in 1.4.a.b.c.d) include 127.1.0.2, whose
# sysName is s1.
neighbours=$(snmpwalk -m '' -v2c -c public -On "127.1.0.1:$port2" 1.0.8802.1.1.2.1.4.2 2>/dev/null
  snmpwalk -m '' -v2c -c public -On "127.1.0.1:$port2" 1.3.111.2.802.1.1.13.1.4.2 2>/dev/null)
echo "$neighbours" | grep -q '\.1\.4\.127\.1\.0\.2 = ' || fail "s0 does not advertise 127.1.0.2: $neighbours"
wait_for public "127.1.0.2:$port2" s1
echo "by-address: one snmpsimd serves s0 at 127.1.0.1:$port2 and s1 at 127.1.0.2:$port2; s0's LLDP leads to s1"
echo "PASS"
