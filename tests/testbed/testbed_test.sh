#!/usr/bin/env bash
# Tests of the emulated cluster (deploy/testbed/testbed.py), one case per
# ctest test. Every case uses its own namespace prefix (tt<pid>-), and an EXIT
# trap always runs `testbed.py down`, so a failing test leaves nothing behind.
#
# Usage: testbed_test.sh CASE [TOPOLOGY]
#   topology TOPOLOGY  brings TOPOLOGY up and checks, from the head namespace:
#                      on every switch, lldpRemTable (1.0.8802.1.1.2.1.4.1.1)
#                      lists exactly its topology neighbours and sysName is its
#                      namespace name (SNMPv2c and SNMPv3 authPriv); on both ends
#                      of every inter-switch link, ifName finds the recorded port,
#                      ifHighSpeed is the link speed in Mbit/s and lldpRemTable
#                      has the other switch on that port; a host pings a host
#                      behind another switch; `exec` sets the hostname; a TCP
#                      transfer across switches is no faster than the slowest
#                      link on its path; every namespace runs cubic (or reno,
#                      with a warning) without slow-start restart after idle.
#                      Then `down` must leave no namespace,
#                      process or state directory with the prefix, twice.
#   bad_input          `up` refuses a missing file, a cycle, a name with '_',
#                      a too-long prefix, an existing namespace and a non-root
#                      user, with a clear message and nothing created.
#   discover TOPOLOGY TOPOTUNE
#                      `topotune discover` from the head finds exactly the
#                      file's tree (v2c and v3); see case_discover
#   discover_mgmt TOPOLOGY TOPOTUNE
#                      the same with `up --mgmt-network`: every switch's mgmt0
#                      (not a bridge port) and every host's eth1 on a management
#                      switch; the data tree exactly, with and without a hosts
#                      file, and notes on the management network
#   e2e TOPOLOGY TOPOTUNE SHIM COLL_CHECK
#                      the whole product: topotuned's SNMP discovery equals the
#                      file's tree, tuning completes, a job with the shim runs
#                      the tuned algorithms with byte-identical data and its
#                      report reaches the daemon, faults mid-tuning (see case_e2e)
#   fail_midway        `up` failing at each step (TOPOTUNE_TESTBED_FAIL_AT),
#                      and `up` killed with SIGKILL then `down`, leave nothing.
# Exit status 77 (skipped) when not root or `ip netns` is unavailable.
# Environment: PYTHON (default python3) runs testbed.py.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
testbed=$root/deploy/testbed/testbed.py
transfer=$here/tcp_transfer.py
python=${PYTHON:-python3}
case_name=${1:?usage: testbed_test.sh CASE [TOPOLOGY]}
topology=${2:-}

if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: the testbed needs root" >&2
  exit 77
fi
if ! ip netns list >/dev/null 2>&1; then
  echo "SKIP: ip netns is unavailable" >&2
  exit 77
fi

prefix="tt$$-"
state=/run/topotune-testbed/$prefix
work=$(mktemp -d /tmp/topotune-testbed-test.XXXXXX)

tb() { "$python" "$testbed" --prefix "$prefix" "$@"; }
in_head() { tb exec head -- "$@"; }
prom_pid=""  # The e2e case's Prometheus (in the head namespace).

stop_prometheus() {
  [[ -n $prom_pid ]] || return 0
  kill "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true  # 143: ended by the TERM above
  prom_pid=""
}

cleanup() {
  local status=$?
  set +e  # clean up as much as possible
  if [[ $status -ne 0 && -d $state ]]; then
    for f in "$state"/*.log; do
      if [[ -s $f ]]; then
        echo "--- $f" >&2
        tail -n 20 "$f" >&2
      fi
    done
  fi
  stop_prometheus
  local pids
  mapfile -t pids < <(jobs -p)
  ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null
  tb down --kill-strays >/dev/null 2>&1
  local left
  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix")
  [[ -z $left ]] || echo "cleanup: namespaces left: $left" >&2
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# shellcheck source=../testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../testlib.sh"

expect_failure_with() {
  [[ $status -eq 1 ]] || fail "exit status $status, expected 1 ($(head -c 600 "$work/stderr"))"
  grep -qF -- "$1" "$work/stderr" || fail "stderr lacks '$1': $(head -c 600 "$work/stderr")"
}

expect_nothing_left() {
  local left
  left=$(ip netns list | awk '{print $1}' | grep "^$prefix" || true)
  [[ -z $left ]] || fail "namespaces left after $1: $left"
  left=$(pgrep -af -- "$prefix" || true)
  [[ -z $left ]] || fail "processes left after $1: $left"
  # lldpd rewrites its command line, but its log stays open: any process
  # with a file of the state directory open is left over.
  left=$(find /proc/[0-9]*/fd -lname "$state/*" 2>/dev/null || true)
  [[ -z $left ]] || fail "processes with files in $state open after $1: $left"
  [[ ! -e $state ]] || fail "state directory $state left after $1"
}

# Evaluates a Python expression over testbed.json (bound to d), e.g.
# state_get 'd["switches"]["s0"]["ip"]'.
state_get() {
  "$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
    "$state/testbed.json" "$1"
}

snmp() { in_head "$1" -v2c -c public -On -Oq -t 2 -r 2 "${@:2}"; }

# The tree discovery must find for a topology file: every name prefixed, one
# slot per host and no latencies (SNMP carries neither).
write_truth() {
  "$python" - "$1" "$prefix" <<'EOF'
import sys, yaml
t = yaml.safe_load(open(sys.argv[1]))
p = sys.argv[2]
print("switches:")
for s in t["switches"]:
    print(f"  - name: {p}{s['name']}")
print("hosts:")
for h in t["hosts"]:
    print(f"  - name: {p}{h['name']}")
print("links:")
for l in t["links"]:
    a, b, speed = (l[0], l[1], l[2]) if isinstance(l, list) else (l["a"], l["b"], l["speed"])
    print(f"  - [{p}{a}, {p}{b}, {speed}]")
EOF
}

case_topology() {
  [[ -f $topology ]] || fail "no topology file '$topology'"
  local t0=$SECONDS
  run tb up --no-services "$topology"
  [[ $status -eq 0 ]] || fail "up failed: $(tail -n 20 "$work/stderr")"
  echo "up took $((SECONDS - t0)) s; $(grep -o 'testbed up in .*' "$work/stderr")"

  # TCP as on a Debian cluster in every namespace: cubic where this machine
  # allows it in namespaces (else reno, with the warning), and no slow-start
  # restart after idle.
  local cc ns
  cc=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["tcp"]["congestion_control"])' \
    "$state/testbed.json")
  if grep -qw cubic /proc/sys/net/ipv4/tcp_allowed_congestion_control; then
    [[ $cc == cubic ]] || fail "congestion control $cc where cubic is allowed"
  else
    [[ $cc == reno ]] || fail "congestion control $cc where cubic is not allowed"
    grep -qF "the testbed's TCP runs reno" "$work/stderr" || fail "no warning about reno"
  fi
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix"); do
    [[ $(ip netns exec "$ns" sysctl -n net.ipv4.tcp_congestion_control) == "$cc" ]] || fail "$ns does not run $cc"
    [[ $(ip netns exec "$ns" sysctl -n net.ipv4.tcp_slow_start_after_idle) == 0 ]] ||
      fail "$ns restarts slow start after idle"
  done
  echo "TCP in every namespace: $cc, no slow-start restart after idle"

  # What the topology file says, independently of testbed.py: per switch its
  # neighbours; per inter-switch link its speed; a host pair across switches
  # with the slowest link on its path.
  "$python" - "$topology" >"$work/expect" <<'EOF'
import sys, yaml
t = yaml.safe_load(open(sys.argv[1]))
switches = [s["name"] for s in t["switches"]]
hosts = [h["name"] for h in t["hosts"]]
def speed(text):
    units = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}
    for u in sorted(units, key=len, reverse=True):
        if text.lower().endswith(u):
            return float(text[:-len(u)]) * units[u]
links = [(l["a"], l["b"], speed(l["speed"])) if isinstance(l, dict) else (l[0], l[1], speed(l[2]))
         for l in t["links"]]
adj = {n: [] for n in switches + hosts}
for a, b, bps in links:
    adj[a].append((b, bps)); adj[b].append((a, bps))
for s in switches:
    print("switch", s, *sorted(n for n, _ in adj[s]))
for a, b, bps in links:
    if a in switches and b in switches:
        print("isl", a, b, int(bps // 1e6))
def path_min(src, dst):  # the slowest link on the tree path
    stack = [(src, None, float("inf"))]
    while stack:
        n, parent, low = stack.pop()
        if n == dst:
            return low
        stack += [(m, n, min(low, bps)) for m, bps in adj[n] if m != parent]
switch_of = {h: adj[h][0][0] for h in hosts}
src = hosts[0]
dst = next(h for h in reversed(hosts) if switch_of[h] != switch_of[src])
print("pair", src, dst, int(path_min(src, dst) // 1e6))
EOF

  local kind s a b mbps neighbours ip ns got want rows
  while read -r kind s neighbours; do
    [[ $kind == switch ]] || continue
    ip=$(state_get "d['switches']['$s']['ip']")
    ns=$prefix$s
    got=$(snmp snmpget "$ip" 1.3.6.1.2.1.1.5.0 | awk '{print $2}' | tr -d '"')
    [[ $got == "$ns" ]] || fail "sysName of $s ($ip) is '$got', expected '$ns'"
    got=$(in_head snmpget -v3 -l authPriv -u topotune -a SHA -A topotune-auth -x AES -X topotune-priv \
      -On -Oqv "$ip" 1.3.6.1.2.1.1.5.0 | tr -d '"')
    [[ $got == "$ns" ]] || fail "SNMPv3 sysName of $s ($ip) is '$got', expected '$ns'"
    snmp snmpwalk "$ip" 1.0.8802.1.1.2.1.4.1.1 >"$work/rem.$s"
    rows=$(grep -c '^\.1\.0\.8802\.1\.1\.2\.1\.4\.1\.1\.9\.' "$work/rem.$s" || true)
    got=$(grep '^\.1\.0\.8802\.1\.1\.2\.1\.4\.1\.1\.9\.' "$work/rem.$s" | awk '{print $2}' | tr -d '"' | sort | xargs)
    want=$(for n in $neighbours; do echo "$prefix$n"; done | sort | xargs)
    [[ $got == "$want" ]] || fail "lldpRemSysName of $s: '$got', expected '$want'"
    echo "switch $s: lldpRemTable has $rows neighbours ($(wc -l <"$work/rem.$s") values), sysName ok, v3 ok"
  done <"$work/expect"

  local end other port index speed
  while read -r kind a b mbps; do
    for end in "$a" "$b"; do
      other=$([[ $end == "$a" ]] && echo "$b" || echo "$a")
      ip=$(state_get "d['switches']['$end']['ip']")
      port=$(state_get "next(l['interfaces']['$end'] for l in d['links'] if {l['a'], l['b']} == {'$a', '$b'})")
      index=$(snmp snmpwalk "$ip" 1.3.6.1.2.1.31.1.1.1.1 |
        awk -v p="$port" '{gsub(/"/, "", $2)} $2 == p {n = split($1, o, "."); print o[n]}')
      [[ -n $index ]] || fail "ifName of $end has no port '$port'"
      speed=$(snmp snmpget "$ip" "1.3.6.1.2.1.31.1.1.1.15.$index" | awk '{print $2}')
      [[ $speed == "$mbps" ]] || fail "ifHighSpeed of $end:$port is '$speed', expected $mbps"
      # lldpRemTable's index is (time mark, local port = ifIndex, remote index).
      got=$(grep "^\.1\.0\.8802\.1\.1\.2\.1\.4\.1\.1\.9\.[0-9]*\.$index\." "$work/rem.$end" |
        awk '{print $2}' | tr -d '"')
      [[ $got == "$prefix$other" ]] ||
        fail "lldpRemTable of $end port $port (ifIndex $index): '$got', expected $prefix$other"
      echo "link $a-$b: $end:$port is ifIndex $index, ifHighSpeed $speed, LLDP neighbour $got"
    done
  done < <(grep '^isl ' "$work/expect")

  local src dst
  read -r _ src dst mbps < <(grep '^pair ' "$work/expect")
  run tb ping "$src" "$dst"
  [[ $status -eq 0 ]] || fail "ping $src -> $dst failed: $(cat "$work/stdout" "$work/stderr")"
  echo "ping $src -> $dst: $(cat "$work/stdout")"
  got=$(tb exec "$src" -- hostname)
  [[ $got == "$prefix$src" ]] || fail "exec $src -- hostname printed '$got'"

  # Shaping: about 0.4 s of traffic at the path's slowest link, at least 5 MB.
  local bytes=$((mbps * 50000)) rate
  ((bytes >= 5000000)) || bytes=5000000
  ip=$(state_get "d['hosts']['$dst']['ip']")
  tb exec "$dst" -- "$python" "$transfer" serve 5201 >"$work/server" 2>&1 &
  for _ in $(seq 50); do grep -q listening "$work/server" && break; sleep 0.1; done
  got=$(tb exec "$src" -- "$python" "$transfer" send "$ip" 5201 "$bytes")
  wait
  rate=$(awk '{print $(NF-1)}' <<<"$got")
  echo "transfer $src -> $dst (slowest link $mbps Mbit/s): $got"
  awk -v r="$rate" -v m="$mbps" 'BEGIN {exit !(r <= 1.1 * m)}' ||
    fail "$rate Mbit/s from $src to $dst exceeds the $mbps Mbit/s link: links are not shaped"
  awk -v r="$rate" -v m="$mbps" 'BEGIN {exit !(r >= 0.2 * m)}' ||
    fail "$rate Mbit/s from $src to $dst is far below the $mbps Mbit/s link"

  run tb down
  [[ $status -eq 0 ]] || fail "down failed: $(cat "$work/stderr")"
  expect_nothing_left down
  run tb down
  [[ $status -eq 0 ]] || fail "a second down failed: $(cat "$work/stderr")"
}

case_bad_input() {
  local example=$root/deploy/examples/two-switch-4x4.yaml
  run tb up --no-services "$work/missing.yaml"
  expect_failure_with "cannot read topology file"
  expect_nothing_left "a missing file"

  cat >"$work/cycle.yaml" <<'EOF'
switches:
  - name: s0
  - name: s1
hosts:
  - name: h0
links:
  - [s0, s1, 1Gbps]
  - [s1, s0, 1Gbps]
  - [h0, s0, 1Gbps]
EOF
  run tb up --no-services "$work/cycle.yaml"
  expect_failure_with "cycle.yaml:8: links: [s1, s0] closes a cycle"
  expect_nothing_left "a cycle"

  sed 's/\bh0\b/h_0/' "$example" >"$work/underscore.yaml"
  run tb up --no-services "$work/underscore.yaml"
  expect_failure_with "name 'h_0' cannot be a hostname"
  expect_nothing_left "a name with '_'"

  run "$python" "$testbed" --prefix "tt$$-$(printf 'x%.0s' $(seq 60))-" up --no-services "$example"
  expect_failure_with "is too long"
  expect_nothing_left "a long prefix"

  # An existing namespace with one of the names: refused, and left alone.
  ip netns add "${prefix}h3"
  run tb up --no-services "$example"
  ip netns list | grep -q "^${prefix}h3" || fail "up deleted a namespace it did not create"
  ip netns del "${prefix}h3"
  expect_failure_with "namespaces already exist: ${prefix}h3"
  expect_nothing_left "an existing namespace"

  # topotuned and the agent not where --bin-dir says: refused before anything.
  mkdir -p "$work/empty"
  run tb up --bin-dir "$work/empty" "$example"
  expect_failure_with "topotuned not found (looked at $work/empty/topotuned"
  expect_nothing_left "missing binaries"

  if command -v setpriv >/dev/null && /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
    run setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 "$testbed" --prefix "$prefix" up --no-services "$example"
    expect_failure_with "must run as root"
    expect_nothing_left "a non-root user"
  else
    echo "not checked: non-root user (no setpriv, or /usr/bin/python3 without yaml)"
  fi
  echo "bad input: all refused cleanly"
}

case_fail_midway() {
  local example=$root/deploy/examples/two-switch-4x4.yaml step
  local bin_dir=${TOPOTUNE_BIN_DIR:?the build tree, for topotuned and topotune-agent}
  for step in namespaces links shaping snmpd lldpd converge services; do
    run env TOPOTUNE_TESTBED_FAIL_AT=$step "$python" "$testbed" --prefix "$prefix" up --bin-dir "$bin_dir" "$example"
    expect_failure_with "failing at step '$step'"
    expect_nothing_left "a failure at step $step"
    echo "failure at $step: cleaned up"
  done
  # Killed without a chance to clean up: `down` works from the state file.
  # A simple command, so that $! is testbed.py itself (not a subshell).
  "$python" "$testbed" --prefix "$prefix" up --bin-dir "$bin_dir" "$example" >/dev/null 2>"$work/up.err" &
  local pid=$!
  for _ in $(seq 300); do grep -q "starting topotune-agent on ${prefix}h0" "$work/up.err" && break; sleep 0.1; done
  kill -KILL "$pid"
  { wait "$pid"; } 2>/dev/null || true
  ip netns list | grep -q "^$prefix" || fail "up was killed before it created anything"
  run tb down
  [[ $status -eq 0 ]] || fail "down after a killed up failed: $(cat "$work/stderr")"
  expect_nothing_left "down after a killed up"
  echo "killed up: down cleaned up"
}

# Discovery end to end: `topotune discover` in the head namespace crawls the
# emulated switches (real snmpd serving lldpd's LLDP-MIB over AgentX) from the
# first switch, over SNMP v2c and then v3 authPriv, and must find exactly the
# topology file's tree (names carry the testbed's prefix: sysName, LLDP system
# name and hostname are the namespace names). A seed where nothing answers is
# a warning, not a failure; a wrong v3 pass phrase is a clear error.
case_discover() {
  local topotune=${3:?usage: testbed_test.sh discover TOPOLOGY TOPOTUNE}
  [[ -f $topology ]] || fail "no topology file '$topology'"
  run tb up --no-services "$topology"
  [[ $status -eq 0 ]] || fail "up failed: $(tail -n 20 "$work/stderr")"
  write_truth "$topology" >"$work/truth.yaml"
  local seed=198.18.0.1 t0=$EPOCHREALTIME
  run in_head "$topotune" discover --seed "$seed,198.18.0.250" --timeout 0.5 --retries 1 --out "$work/v2c.yaml"
  [[ $status -eq 0 ]] || fail "discover (v2c) failed: $(cat "$work/stderr")"
  echo "v2c: $(grep '^discovered' "$work/stderr") [$("$python" -c "print(f'{$EPOCHREALTIME - $t0:.2f}')") s wall]"
  grep -q "198.18.0.250: not walked" "$work/stderr" || fail "the dead seed is not reported: $(cat "$work/stderr")"
  run "$topotune" topology diff "$work/truth.yaml" "$work/v2c.yaml"
  [[ $status -eq 0 ]] || fail "v2c discovery differs from the truth: $(cat "$work/stdout")"

  run in_head "$topotune" discover --seed "$seed" --timeout 2 --v3-user topotune --v3-auth topotune-auth \
    --v3-priv topotune-priv --out "$work/v3.yaml"
  [[ $status -eq 0 ]] || fail "discover (v3) failed: $(cat "$work/stderr")"
  echo "v3:  $(grep '^discovered' "$work/stderr")"
  run "$topotune" topology diff "$work/truth.yaml" "$work/v3.yaml"
  [[ $status -eq 0 ]] || fail "v3 discovery differs from the truth: $(cat "$work/stdout")"

  run in_head "$topotune" discover --seed "$seed" --v3-user topotune --v3-auth wrong-pass-phrase \
    --v3-priv topotune-priv --timeout 0.5 --retries 0
  [[ $status -eq 1 ]] || fail "discover with a wrong pass phrase: exit $status, expected 1"
  grep -q "no switch could be walked" "$work/stderr" || fail "no clear error: $(cat "$work/stderr")"
  run tb down
  [[ $status -eq 0 ]] || fail "down failed: $(cat "$work/stderr")"
  expect_nothing_left "down"
}

# Discovery with a management network (up --mgmt-network; issue 18): every
# switch's mgmt0, which its snmpd leaves out of dot1dBasePortIfIndex, and
# every host's eth1 go to the management switch <prefix>mgmt, which runs snmpd
# and lldpd like any switch and which the head can reach. `topotune discover`
# from the first data switch, without and with a hosts file that lists both
# NICs of every host (mpi_mac: the data NIC's), must find exactly the file's
# tree (no cycle through the management switch, no host placed on it), and
# say in notes that it left out one management link per switch and the
# management switch.
case_discover_mgmt() {
  local topotune=${3:?usage: testbed_test.sh discover_mgmt TOPOLOGY TOPOTUNE}
  [[ -f $topology ]] || fail "no topology file '$topology'"
  run tb up --no-services --mgmt-network "$topology"
  [[ $status -eq 0 ]] || fail "up --mgmt-network failed: $(tail -n 20 "$work/stderr")"
  grep -o 'testbed up in .*' "$work/stderr" || true
  write_truth "$topology" >"$work/truth.yaml"
  local seed nswitches mgmt_ip want got mgmt_index
  seed=$(state_get 'next(iter(d["switches"].values()))["ip"]')
  nswitches=$(state_get 'len(d["switches"])')
  mgmt_ip=$(state_get 'd["mgmt"]["ip"]')

  # What makes mgmt0 a management port: the seed's BRIDGE-MIB lists every
  # port of its br0 (bridge port = ifIndex), and not mgmt0.
  want=$(state_get '" ".join(str(i) for i in sorted(p["ifindex"] for p in next(iter(d["switches"].values()))["ports"].values()))')
  got=$(snmp snmpwalk "$seed" 1.3.6.1.2.1.17.1.4.1.2 |
    awk '$1 ~ /^\.1\.3\.6\.1\.2\.1\.17\.1\.4\.1\.2\./ {print $2}' | sort -n | xargs)
  [[ $got == "$want" ]] || fail "dot1dBasePortIfIndex of $seed: '$got', expected '$want' (its br0 ports)"
  mgmt_index=$(state_get 'next(iter(d["switches"].values()))["mgmt"]["ifindex"]')
  echo "BRIDGE-MIB of $seed: bridge ports $got; mgmt0 (ifIndex $mgmt_index) is not one"
  # The head reaches the management switch, as it would reach a real one.
  got=$(snmp snmpget "$mgmt_ip" 1.3.6.1.2.1.1.5.0 | awk '{print $2}' | tr -d '"')
  [[ $got == "${prefix}mgmt" ]] || fail "sysName of the management switch ($mgmt_ip) is '$got', expected ${prefix}mgmt"

  # A hosts file as an inventory has it: both NICs, the one MPI uses named.
  "$python" - "$state/testbed.json" >"$work/hosts.yaml" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("hosts:")
for h in d["hosts"].values():
    print(f"  - name: {h['namespace']}")
    print(f"    macs: [\"{h['mac']}\", \"{h['mgmt']['mac']}\"]")
    print(f"    mpi_mac: \"{h['mac']}\"")
EOF

  local kind t0 args
  for kind in lldp-only with-hosts; do
    args=()
    [[ $kind == with-hosts ]] && args=(--hosts "$work/hosts.yaml")
    t0=$EPOCHREALTIME
    run in_head "$topotune" discover --seed "$seed" --timeout 0.5 --retries 1 "${args[@]}" \
      --out "$work/mgmt-$kind.yaml"
    cp "$work/stderr" "$work/mgmt-$kind.log"
    [[ $status -eq 0 ]] || fail "discover ($kind) with a management network failed: $(cat "$work/stderr")"
    echo "$kind: $(grep '^discovered' "$work/stderr") [$("$python" -c "print(f'{$EPOCHREALTIME - $t0:.2f}')") s wall]"
    run "$topotune" topology diff "$work/truth.yaml" "$work/mgmt-$kind.yaml"
    [[ $status -eq 0 ]] || fail "discovery ($kind) with a management network differs from the truth: $(cat "$work/stdout")"
    grep -q "^note: management links: $nswitches " "$work/mgmt-$kind.log" ||
      fail "discover ($kind) printed no 'note: management links: $nswitches ...' (one mgmt0 per switch)"
    grep -q "^note: management network: 1 switch," "$work/mgmt-$kind.log" ||
      fail "discover ($kind) printed no 'note: management network: 1 switch, ...' (${prefix}mgmt)"
    grep '^note: ' "$work/mgmt-$kind.log" | sed 's/^/  /'
  done
  run tb down
  [[ $status -eq 0 ]] || fail "down failed: $(cat "$work/stderr")"
  expect_nothing_left "down"
}

# The whole product on the emulated cluster: `up` with topotuned and the
# agents; the topology topotuned discovered over SNMP is the file's tree;
# tuning alltoall and allgather completes; a plain MPI job with
# libtopotune-mpi.so runs the tuned plan's algorithms at large sizes (and,
# forced, the contention-free schedule) with data byte-identical to a run
# without it, and its report reaches the daemon; an agent and a benchmark
# rank killed mid-tuning end the sweep cleanly while topotuned stays up.
case_e2e() {
  local topotune=${3:?usage: testbed_test.sh e2e TOPOLOGY TOPOTUNE SHIM COLL_CHECK}
  local shim=${4:?} coll_check=${5:?}
  local bin_dir=${TOPOTUNE_BIN_DIR:?the build tree, for topotuned and topotune-agent}
  local large=262144
  [[ -f $topology ]] || fail "no topology file '$topology'"
  local tool
  for tool in prometheus promtool; do
    command -v "$tool" >/dev/null || { echo "SKIP: no $tool (Debian package prometheus)" >&2; exit 77; }
  done
  # Cabled like a real cluster: every switch's mgmt0 and every host's eth1 on
  # an out-of-band management network, which discovery must leave out.
  run tb up --bin-dir "$bin_dir" --mgmt-network "$topology"
  [[ $status -eq 0 ]] || fail "up failed: $(tail -n 20 "$work/stderr")"
  echo "$(grep -o 'testbed up in .*' "$work/stderr")"
  start_prometheus
  local token=$state/token nhosts
  nhosts=$(state_get 'len(d["hosts"])')
  admin() { in_head "$topotune" "$@" --token-file "$token"; }

  # Discovery by topotuned itself, over SNMP from the first switch.
  write_truth "$topology" >"$work/truth.yaml"
  run admin topology show --yaml
  [[ $status -eq 0 ]] || fail "topology show: $(cat "$work/stderr")"
  cp "$work/stdout" "$work/discovered.yaml"
  run "$topotune" topology diff "$work/truth.yaml" "$work/discovered.yaml"
  [[ $status -eq 0 ]] || fail "the topology topotuned discovered differs from the truth: $(cat "$work/stdout")"
  grep -q "discovery: note: management links: $(state_get 'len(d["switches"])') " "$state/topotuned.log" ||
    fail "topotuned logged no note of one management link per switch"
  echo "discovery: topotuned's topology equals the file's tree; the management network left out"

  # Tuning, as an admin would start it.
  local t0=$SECONDS
  run admin tune start --collective alltoall,allgather --nodes "$nhosts" --ranks-per-node 1 \
    --sizes "1KiB,$large" --iterations 5 --skip-refinement --wait
  [[ $status -eq 0 ]] || fail "tuning failed: $(tail -n 5 "$work/stdout") $(cat "$work/stderr")"
  echo "tuning: $(tail -n 1 "$work/stdout") in $((SECONDS - t0)) s"
  run admin decisions show --json
  [[ $status -eq 0 ]] || fail "decisions show: $(cat "$work/stderr")"
  cp "$work/stdout" "$work/decisions.json"

  # A job with the shim, against the same job without it.
  local mpirun=$state/mpirun job
  for job in native tuned forced; do
    mkdir -p "$work/$job"
    local env=()
    if [[ $job != native ]]; then
      env=(-x "LD_PRELOAD=$shim" -x "TOPOTUNE_SERVER=$(state_get 'd["services"]["server"]')"
        -x "TOPOTUNE_STATS_FILE=$work/$job/stats.json" -x "TOPOTUNE_JOB_ID=e2e-$job")
      [[ $job == forced ]] && env+=(-x TOPOTUNE_FORCE_ALLTOALL=tree_scheduled
        -x TOPOTUNE_FORCE_ALLGATHER=switch_ordered_ring)
    fi
    run timeout 600 "$mpirun" -np "$nhosts" --hostfile "$state/hostfile" "${env[@]}" \
      "$coll_check" --out "$work/$job" --world-sizes "65536,$large"
    [[ $status -eq 0 ]] || fail "$job job: exit $status: $(tail -n 20 "$work/stderr")"
    echo "$job job: $(grep -o 'all data correct' "$work/stdout")"
  done
  local r
  for ((r = 0; r < nhosts; r++)); do
    for job in tuned forced; do
      cmp -s "$work/native/rank$r.bin" "$work/$job/rank$r.bin" ||
        fail "$job job: rank $r received other bytes than without the shim"
    done
  done
  "$python" - "$work/decisions.json" "$work/tuned/stats.json" "$work/forced/stats.json" "$large" <<'EOF' ||
import json, sys
decisions, tuned, forced = (json.load(open(f)) for f in sys.argv[1:4])
large = int(sys.argv[4])

def used(stats, coll):
    """Algorithms the job's world calls of `large` bytes per block used."""
    return {s["algorithm"] for s in stats["stats"]
            if s["collective"] == coll and int(s["msize"]) == large and s["calls"] > 0}

def table_choice(coll):
    for d in decisions["decisions"]:
        if d["collective"] == "COLLECTIVE_" + coll.upper():
            for r in d["table"]["ranges"]:
                lo, hi = int(r["min_msize"]), int(r["max_msize"])
                if lo <= large and (hi == 0 or large < hi):
                    return r["algorithm"]
    sys.exit(f"no {coll} decision table")

for coll in ("alltoall", "allgather"):
    want = table_choice(coll)
    got = used(tuned, coll)
    if got != {want}:
        sys.exit(f"tuned job: {coll} at {large} B used {sorted(got)}, the decision table says {want}")
    print(f"tuned job: {coll} at {large} B ran {want}, as the decision table says")
for coll, alg in (("alltoall", "tree_scheduled"), ("allgather", "switch_ordered_ring")):
    got = used(forced, coll)
    if got != {alg}:
        sys.exit(f"forced job: {coll} at {large} B used {sorted(got)}, expected {alg}")
for name, stats in (("tuned", tuned), ("forced", forced)):
    # Elsewhere coll_check also makes calls that kernels decline on purpose
    # (mismatched type signatures): only the large world calls must not.
    falls = sum(s["fallbacks"] for s in stats["stats"] if int(s["msize"]) == large)
    if stats["plan"]["status"] != "ok" or falls:
        sys.exit(f"{name} job: plan {stats['plan']}, {falls} fallbacks at {large} B")
print(f"forced job: the contention-free schedule ran at {large} B with no fallback")
EOF
    fail "the jobs did not run the expected algorithms"
  local db=$state/topotune.db reports
  reports=$(sqlite3 -cmd '.timeout 5000' "$db" \
    "SELECT count(*) FROM job_reports WHERE job_id IN ('e2e-tuned', 'e2e-forced')")
  [[ $reports -eq 2 ]] || fail "$reports job reports at the daemon, expected 2"
  echo "job reports: both jobs' reports are in topotuned's database"

  # Every shipped expression on the healthy cluster: data, or empty for the
  # reason monitoring/expected_empty.yml states.
  sleep 3  # a few scrapes and rule evaluations after the jobs' reports
  promql_check --expected-empty "$here/../monitoring/expected_empty.yml" ||
    fail "dashboard and alert expressions on the healthy cluster (table above)"

  # Faults: an agent and one benchmark rank killed while a sweep runs.
  run admin tune start --collective alltoall --nodes "$nhosts" --ranks-per-node 1 --sizes "$large" \
    --iterations 20 --skip-refinement
  [[ $status -eq 0 ]] || fail "second tuning did not start: $(cat "$work/stderr")"
  local sweep agent_pid victim="" pid
  sweep=$(tail -n 1 "$work/stdout")
  agent_pid=$(state_get '[p["pid"] for p in d["processes"] if p["what"] == "topotune-agent" and p["namespace"].endswith("h1")][0]')
  for _ in $(seq 300); do
    for pid in $(pgrep -f 'topotune-agent bench' || true); do
      [[ $(ip netns identify "$pid" 2>/dev/null) == "${prefix}"h1 ]] && victim=$pid
    done
    [[ -n $victim ]] && break
    sleep 0.1
  done
  [[ -n $victim ]] || fail "no benchmark rank appeared on ${prefix}h1 in 30 s"
  sleep 2  # into the measurements
  kill -KILL "$agent_pid" "$victim"
  echo "faults: killed topotune-agent serve (pid $agent_pid) and a benchmark rank (pid $victim) on ${prefix}h1"
  run timeout 300 "$python" "$testbed" --prefix "$prefix" exec head -- "$topotune" tune status "$sweep" --watch
  [[ $status -eq 0 || $status -eq 1 ]] || fail "tune status --watch: exit $status: $(tail -n 5 "$work/stdout")"
  local final  # The last progress line, or the failure on stderr.
  final=$(cat "$work/stdout" "$work/stderr" | grep -E "tuning $sweep (succeeded|failed)" | tail -n 1)
  [[ -n $final ]] || fail "the sweep did not end cleanly"
  echo "faults: the sweep ended: $final"
  run admin topology show
  [[ $status -eq 0 ]] || fail "topotuned does not answer after the faults: $(cat "$work/stderr")"
  kill -0 "$(state_get '[p for p in d["processes"] if p["what"] == "topotuned"][0]["pid"]')" ||
    fail "topotuned died"
  echo "faults: topotuned still answers"

  # Alert conditions provoked: a GetPlan for a host the topology lacks, every
  # agent stopped, then topotuned stopped.
  # Twice, a few scrapes apart: a counter series is born at its first error,
  # and rate() only sees increases after that.
  # (--rank-hosts: --hosts would be refused before any call.)
  local attempt
  printf '%s\n' "${prefix}h0" "${prefix}nosuchhost" >"$work/bad-rank-hosts"
  for attempt in 1 2; do
    run admin plan show --rank-hosts "$work/bad-rank-hosts" --collective alltoall
    [[ $status -ne 0 ]] || fail "plan show for an unknown host succeeded"
    ((attempt == 2)) || sleep 3
  done
  local provoked=("alert TopotunePlanErrors" "alert TopotuneNoLiveAgents" "alert TopotuneAgentsMissing"
    "topotune-service / Alerts pending or firing / A")
  [[ $final == *failed* ]] && provoked+=("alert TopotuneTuningFailed")
  # shellcheck disable=SC2046  # one word per PID
  kill $(state_get '" ".join(str(p["pid"]) for p in d["processes"] if p["what"] == "topotune-agent")') 2>/dev/null || true
  local only=() name
  for name in "${provoked[@]}"; do only+=(--only "$name"); done
  promql_check "${only[@]}" --wait 60 || fail "provoked alert conditions returned no data (table above)"
  kill "$(state_get '[p for p in d["processes"] if p["what"] == "topotuned"][0]["pid"]')"
  promql_check --only "alert TopotunedDown" --wait 30 || fail "TopotunedDown's condition after stopping topotuned"
  stop_prometheus

  run tb down
  [[ $status -eq 0 ]] || fail "down failed: $(cat "$work/stderr")"
  expect_nothing_left "down"
}

# Prometheus in the head namespace, scraping topotuned every second with the
# shipped rules: deploy/prometheus/prometheus.yml with the test's intervals,
# target and absolute rules path. Its data lives in $work/prometheus.
prom_port=19090
start_prometheus() {
  "$python" - "$root/deploy/prometheus/prometheus.yml" "$root/deploy/prometheus/topotune.rules.yml" \
    >"$work/prometheus.yml" <<'EOF'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c["global"].update(scrape_interval="1s", evaluation_interval="1s")
c["rule_files"] = [sys.argv[2]]
c["scrape_configs"][0]["static_configs"] = [{"targets": ["127.0.0.1:9464"]}]
print(yaml.safe_dump(c))
EOF
  promtool check config "$work/prometheus.yml" >"$work/promtool.out" 2>&1 ||
    fail "promtool check config of the test's Prometheus config: $(cat "$work/promtool.out")"
  # exec all the way down (testbed.py exec, ip netns exec, unshare, sh), so
  # that $! is prometheus itself and stop_prometheus ends it.
  (exec "$python" "$testbed" --prefix "$prefix" exec head -- prometheus --config.file="$work/prometheus.yml" \
    --storage.tsdb.path="$work/prometheus" --web.listen-address="127.0.0.1:$prom_port" \
    >"$work/prometheus.log" 2>&1) &
  prom_pid=$!
  local up=""
  for _ in $(seq 150); do
    kill -0 "$prom_pid" 2>/dev/null || fail "prometheus exited: $(tail -n 5 "$work/prometheus.log")"
    up=$(in_head "$python" -c 'import sys, urllib.request, json
r = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/query?query=up", timeout=2))
print(" ".join(x["value"][1] for x in r["data"]["result"]))' "http://127.0.0.1:$prom_port" 2>/dev/null || true)
    [[ -n $up ]] && break
    sleep 0.2
  done
  [[ $up == 1 ]] || fail "prometheus does not scrape topotuned (up is '$up'): $(tail -n 5 "$work/prometheus.log")"
  echo "prometheus: scraping topotuned in ${prefix}head every second (127.0.0.1:$prom_port, shipped rules)"
}

promql_check() {
  in_head "$python" "$here/../monitoring/promql_check.py" --url "http://127.0.0.1:$prom_port" \
    --var collective=alltoall "$@"
}

case "$case_name" in
  topology) case_topology ;;
  discover) case_discover "$@" ;;
  discover_mgmt) case_discover_mgmt "$@" ;;
  e2e) case_e2e "$@" ;;
  bad_input) case_bad_input ;;
  fail_midway) case_fail_midway ;;
  *) fail "unknown case '$case_name'" ;;
esac
echo "PASS [$case_name]"
