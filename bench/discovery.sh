#!/usr/bin/env bash
# Benchmarks SNMP discovery on a simulated data-centre tree: 100 switches of 48
# ports (a core, 9 aggregation and 90 edge switches with 40 hosts each: 3600
# hosts, 30 % of them known only through the FDB), every vendor quirk of the
# fixture generator spread over the switches. snmpsimd serves each switch at
# its own loopback address (its LLDP management address); `topotune discover`
# crawls them all from one seed.
#
# Three runs, each timed and checked against the generator's truth with
# `topotune topology diff`:
#   with-fdb   --hosts given: hosts known only by MAC are found in the FDBs,
#              the largest tables (every MAC each switch has learned)
#   lldp-only  no --hosts: the FDB is not walked; FDB-only hosts are missing
#              by design, so only the switches and switch links are compared
#   with-mgmt  the same tree generated with an out-of-band management network
#              (--mgmt-network, issue 18): every switch's mgmt0 (not a bridge
#              port) and every host's management NIC on management switches
#              of --mgmt-ports ports, which snmpsimd serves too, after the
#              data switches; crawled from the same seed with --hosts (both
#              NICs of every host, mpi_mac the data NIC's). The management
#              links are not followed, so the tree must equal the truth and a
#              note must count them (one mgmt0 per switch).
#
# snmpsimd is one Python process per agent group; it, not discovery, is the
# bottleneck (about 10^4 values/s each). A real switch is its own agent, so
# the endpoints are split over --agents snmpsimd processes (default: the
# number of cores), each serving its share of the switches.
#
# The target (issue: discovery) is <= 30 s for the 100 switches. Prints a
# table with the time, the SNMP requests and values, and the verdict; the
# results directory keeps the tree, the discovered topologies and the logs.
#
# Usage: bench/discovery.sh [OPTIONS]
#   --aggregation N    aggregation switches (default 9)
#   --edge N           edge switches per aggregation switch (default 10)
#   --hosts N          hosts per edge switch (default 40)
#   --ports N          ports of every switch (default 48)
#   --agents N         snmpsimd processes (default: nproc)
#   --mgmt-ports N     ports of each management switch of the with-mgmt run
#                      (default 64: 100 switches and 3600 hosts need >= 62);
#                      0 skips that run
#   --seed N           generator seed (default 1)
#   --out DIR          results directory (default: bench/results/discovery-DATE-TIME/)
#   -h, --help         this help
# Environment:
#   BUILD    the build tree with topotune and topotune-snmprec-gen (default: build/)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$root/build}
aggregation=9 edge=10 hosts=40 ports=48 agents=$(nproc) seed=1 mgmt_ports=64 out=
# shellcheck source=script_lib.sh
source "$root/bench/script_lib.sh"
parse_options value:--aggregation=aggregation value:--edge=edge value:--hosts=hosts value:--ports=ports \
  value:--agents=agents value:--mgmt-ports=mgmt_ports value:--seed=seed value:--out=out -- "$@"
topotune=$build/daemon/cli/topotune
gen=$build/tests/discovery/gen/topotune-snmprec-gen
for bin in "$topotune" "$gen"; do
  [[ -x $bin ]] || { echo "discovery.sh: $bin is missing; build first (cmake --build build)" >&2; exit 1; }
done
out=${out:-$root/bench/results/discovery-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
chmod 755 "$out"  # snmpsimd drops to nobody, who must read the recordings.
# shellcheck source=../tests/discovery/snmpsim.sh
source "$root/tests/discovery/snmpsim.sh"
trap snmpsim_stop EXIT

port=$(snmpsim_free_port)
echo "==> generating the tree ($aggregation x $edge x $hosts, $ports ports, seed $seed)" >&2
"$gen" --fanout "$aggregation,$edge,$hosts" --ports "$ports" --seed "$seed" --layout by-address \
  --snmp-port "$port" --out "$out/tree" | tee "$out/generator.txt" >&2
values=$(cat "$out"/tree/public/*.snmprec | wc -l)

# Serves the tree in $1 (by-address layout) with $agents snmpsimd processes,
# whose data directories are $out/$2<k>; sets endpoints (switch order) and n.
# Switch i goes to process i % agents, so that switches walked one after the
# other (a crawl goes level by level) load every process, as independent
# switches would. Process k serves its switches as transport ids 0, 1, ...:
# its data directory links each id to the switch's recording.
serve() {
  local tree=$1 prefix=$2 k i j dir mine
  mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$tree/snmpsimd.args")
  n=${#endpoints[@]}
  echo "==> starting $agents snmpsimd process(es) for $n switches" >&2
  for ((k = 0; k < agents && k < n; k++)); do
    dir=$out/$prefix$k
    mkdir -p "$dir/public"
    mine=()
    for ((i = k, j = 0; i < n; i += agents, j++)); do
      ln -sf "$tree/public/1.3.6.1.6.1.1.$i.snmprec" "$dir/public/1.3.6.1.6.1.1.$j.snmprec"
      mine+=("${endpoints[i]}")
    done
    SNMPSIM_COMMUNITY=public snmpsim_start "$dir" "${mine[@]}" -- --v2c-arch
  done
}

results=()
# run NAME TREE CHECK NOTE [DISCOVER ARGS...]: one timed discovery of the
# tree served at $port from its first switch. CHECK: "tree" (equal to the
# truth) or "switches" (the switches and switch links only). NOTE: a line
# (grep pattern) that the output must have, or "-".
run() {
  local name=$1 tree=$2 how=$3 note=$4
  shift 4
  echo "==> $name: topotune discover --seed ${endpoints[0]%:*} $*" >&2
  local start=$EPOCHREALTIME rc=0
  "$topotune" discover -q --seed "${endpoints[0]%:*}" --port "$port" --timeout 5 --out "$out/$name.yaml" "$@" \
    2>"$out/$name.log" || rc=$?
  local seconds
  seconds=$(python3 -c "print(f'{$EPOCHREALTIME - $start:.2f}')")
  local summary requests check
  summary=$(grep '^discovered' "$out/$name.log" || true)
  requests=$(sed -n 's/.* \([0-9]*\) SNMP request(s).*/\1/p' <<<"$summary")
  if ((rc != 0)); then
    check="FAILED (exit $rc)"
    summary=$(tail -n 3 "$out/$name.log")
  elif [[ $how == tree ]]; then
    "$topotune" topology diff "$tree/truth.yaml" "$out/$name.yaml" >"$out/$name.diff" && check=equal || check=DIFFERENT
  else
    # Without host MACs the FDB-only hosts are missing by design: compare
    # everything but host lines.
    "$topotune" topology diff "$tree/truth.yaml" "$out/$name.yaml" >"$out/$name.diff" || true
    if grep -v '^- \(host h[0-9]*$\|link .*\<h[0-9]*\>.*\)' "$out/$name.diff" | grep -q .; then check=DIFFERENT; else check="equal (switch links)"; fi
  fi
  [[ $note == - || $rc -ne 0 ]] || grep -q -- "$note" "$out/$name.log" || check+=", no note"
  local verdict=ok
  python3 -c "import sys; sys.exit(0 if $seconds <= 30 else 1)" || verdict="over 30 s"
  results+=("$(printf '%-10s %8s s %9s %-22s %s' "$name" "$seconds" "$requests" "$check" "$verdict")")
  echo "    $summary" >&2
}
serve "$out/tree" agent
switches=$n
run with-fdb "$out/tree" tree - --hosts "$out/tree/hosts.yaml"
run lldp-only "$out/tree" switches -

mgmt_summary=()
if ((mgmt_ports > 0)); then
  # The same tree (same seed and options: every data switch keeps its
  # recording and address) plus the management network, served the same way
  # after the first one stops, on a port free again.
  snmpsim_stop
  port=$(snmpsim_free_port)
  echo "==> generating the tree with a management network (--mgmt-network --mgmt-ports $mgmt_ports)" >&2
  "$gen" --fanout "$aggregation,$edge,$hosts" --ports "$ports" --seed "$seed" --layout by-address \
    --snmp-port "$port" --mgmt-network --mgmt-ports "$mgmt_ports" --hosts-mgmt-macs --hosts-mpi-mac \
    --out "$out/tree-mgmt" | tee "$out/generator-mgmt.txt" >&2
  data_switches=$(sed -n 's/^\([0-9]*\) switches.*/\1/p' "$out/generator-mgmt.txt")
  mgmt_switches=$(sed -n 's/.* + \([0-9]*\) management switches.*/\1/p' "$out/generator-mgmt.txt")
  mgmt_values=$(cat "$out"/tree-mgmt/public/*.snmprec | wc -l)
  serve "$out/tree-mgmt" mgmt-agent
  # Left out on purpose, and said so: one management link per data switch.
  run with-mgmt "$out/tree-mgmt" tree "^note: management links: $data_switches " --hosts "$out/tree-mgmt/hosts.yaml"
  mgmt_summary=("with-mgmt: the same tree plus ${mgmt_switches:-?} management switches of $mgmt_ports ports (every switch's"
    "  mgmt0, every host's management NIC), $mgmt_values recorded values in all; --hosts lists both NICs and mpi_mac")
  mapfile -t -O "${#mgmt_summary[@]}" mgmt_summary < <(sed -n 's/^note: /  note: /p' "$out/with-mgmt.log")
fi

{
  echo "SNMP discovery of $switches switches x $ports ports ($(grep -o '[0-9]* hosts' "$out/generator.txt")), $values recorded values,"
  echo "served by $agents snmpsimd process(es) on loopback; target <= 30 s"
  printf '%-10s %10s %9s %-22s %s\n' run time requests "tree vs truth" verdict
  printf '%s\n' "${results[@]}"
  ((${#mgmt_summary[@]} == 0)) || printf '%s\n' "${mgmt_summary[@]}"
} | tee "$out/summary.txt"
echo "results in $out" >&2
