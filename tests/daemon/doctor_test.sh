#!/usr/bin/env bash
# `topotune doctor` and `topotune db` against a real installation on
# loopback: topotuned with a configuration file (gRPC, /metrics, database,
# discovery of a generated 2-switch tree served by a real snmpsimd), agents
# registered with topotune-agent, and the doctor run the way a sysadmin runs
# it (`topotune doctor --config FILE`). Cases:
#   - agents missing: FAIL agents naming the hosts, exit 1;
#   - healthy: every check ok (tuning a warning: nothing tuned yet), exit 0,
#     and the same as JSON;
#   - a seed where nothing answers: FAIL snmp with the likely causes, exit 1;
#   - a corrupt database: FAIL database, exit 1;
#   - db backup while topotuned runs, db info, restore refusals (exists, in
#     use, corrupt backup, newer schema), restore --force, and the restored
#     rows equal the backup's;
#   - topotuned down: exit 69, the local checks still printed.
#
# Usage: doctor_test.sh TOPOTUNED TOPOTUNE TOPOTUNE_AGENT SNMPREC_GEN
set -euo pipefail
topotuned=$1
topotune=$2
agent=$3
gen=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v snmpsimd >/dev/null || ! command -v python3 >/dev/null; then
  echo "SKIP: snmpsimd or python3 is not installed (deploy/install-deps.sh)"
  exit 77
fi
# shellcheck source=../discovery/snmpsim.sh
source "$here/../discovery/snmpsim.sh"
# shellcheck source=../testlib.sh
source "$here/../testlib.sh"
case_name=doctor
work=$(mktemp -d /tmp/topotune-doctor.XXXXXX)
chmod 755 "$work" # snmpsimd drops to nobody, who must reach the data.
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  snmpsim_stop
  rm -rf "$work"
}
trap cleanup EXIT

# expect LINE_REGEX: the doctor's last stdout has a line matching it.
expect() { grep -Eq -- "$1" "$work/stdout" || fail "no line matching '$1' in the doctor's output"; }
expect_status() { ((status == $1)) || fail "exit status $status, expected $1"; }

free_tcp_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

snmp_port=$(snmpsim_free_port)
"$gen" --random-switches 2 --hosts-per-switch 2 --seed 3 --no-quirks --layout by-address \
  --snmp-port "$snmp_port" --out "$work/tree" >/dev/null
mapfile -t endpoints < <(sed -n 's/^--agent-udpv4-endpoint=//p' "$work/tree/snmpsimd.args")
SNMPSIM_COMMUNITY=public snmpsim_start "$work/tree" "${endpoints[@]}" -- --v2c-arch

grpc_port=$(free_tcp_port)
metrics_port=$(free_tcp_port)
server=127.0.0.1:$grpc_port
write_config() { # FILE DATABASE SEEDS
  cat >"$1" <<YAML
listen: $server
metrics_listen: 127.0.0.1:$metrics_port
database: $2
hosts_file: $work/tree/hosts.yaml
discovery:
  seeds: [$3]
  port: $snmp_port
  timeout: 1s
  retries: 1
  interval: 600s
YAML
}
db=$work/db/topotune.db
write_config "$work/topotuned.yaml" "$db" "127.1.0.1"
"$topotuned" --config "$work/topotuned.yaml" >"$work/topotuned.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 300); do
  "$topotune" topology show --server "$server" --yaml >"$work/found.yaml" 2>/dev/null && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "topotuned exited at start-up"
  sleep 0.1
done
[[ -s $work/found.yaml ]] || fail "no topology from the start-up discovery"

# --- Agents missing: only h0 and h1 have one. ---------------------------------
for h in h0 h1; do
  "$agent" serve --once --no-lldp --server "$server" --hostname "$h" >>"$work/agent.log" 2>&1 ||
    fail "topotune-agent serve --once --hostname $h failed"
done
run "$topotune" doctor --config "$work/topotuned.yaml"
cp "$work/stdout" "$work/agents-missing.txt"
expect_status 1
expect '^FAIL  agents: 2 registered, 2 alive; 2 of 4 topology hosts have no live agent: h2, h3$'
expect '^      -> start topotune-agent on them'
expect '^ok    daemon: '

# --- Healthy. ---------------------------------------------------------------------
for h in h2 h3; do
  "$agent" serve --once --no-lldp --server "$server" --hostname "$h" >>"$work/agent.log" 2>&1 ||
    fail "topotune-agent serve --once --hostname $h failed"
done
latest=$("$topotune" db info --database "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["latest_schema_version"])')
# The plan latency's verdict compares this machine's GetPlan times with a
# threshold: a minute here, so that the verdict is ok on any machine, and a
# nanosecond below, so that it is a warning on any machine.
slow_ok=(--plan-latency-threshold 60000)
run "$topotune" doctor --config "$work/topotuned.yaml" "${slow_ok[@]}"
cp "$work/stdout" "$work/healthy.txt"
expect_status 0
expect "^ok    config: $work/topotuned.yaml parsed \\(listen $server, metrics 127.0.0.1:$metrics_port, 1 discovery seed\\)$"
expect "^ok    daemon: topotuned at $server answers in [0-9.]+ ms; topology version 1 \\(2 switches, 4 hosts, from discovery\\)$"
expect "^ok    metrics: http://127.0.0.1:$metrics_port/metrics answers in "
expect "^ok    database: $db: integrity ok, schema version $latest \\(this topotune knows $latest\\), .* journal wal$"
expect "^ok    snmp 127.1.0.1:$snmp_port: sysName s0, chassis [0-9a-f:]+, [1-9][0-9]* LLDP neighbours? \\([0-9.]+ ms\\)$"
expect '^ok    discovery: last success [0-9]+ s ago \(interval 10 min; 2 switches, 4 hosts; 1 ok, 0 failed since topotuned started\)$'
expect '^ok    agents: 4 registered, 4 alive; every one of the 4 topology hosts has a live agent \(timeout 90 s\)$'
expect '^warn  tuning: no decision tables for topology version 1'
expect '^ok    plan latency: GetPlan alltoall over 4 hosts x 1 rank: p50 [0-9.]+ ms, p99 [0-9.]+ ms of 20 calls'
expect '^[0-9]+ ok, 1 warn, 0 FAIL$'
run "$topotune" doctor --config "$work/topotuned.yaml" --plan-calls 3 --plan-latency-threshold 0.000001
expect_status 0
expect '^warn  plan latency: GetPlan alltoall over 4 hosts x 1 rank: p50 [0-9.]+ ms, p99 [0-9.]+ ms of 3 calls \(first call [0-9.]+ ms\); threshold 0\.0 ms$'
expect '^      -> jobs wait this long at MPI_Init'
expect '^[0-9]+ ok, 2 warn, 0 FAIL$'
run "$topotune" doctor --config "$work/topotuned.yaml" --json --plan-calls 5 "${slow_ok[@]}"
expect_status 0
python3 - "$work/stdout" <<'PY' || fail "doctor --json"
import json, sys
j = json.load(open(sys.argv[1]))
names = [c["check"] for c in j["checks"]]
assert names[:4] == ["config", "daemon", "metrics", "database"], names
assert j["fail"] == 0 and j["exit"] == 0 and j["warn"] == 1, j
assert all(c["status"] in ("ok", "warn") for c in j["checks"])
PY

# --- A seed where nothing answers (a loopback UDP port with nothing bound). --------
dead_port=$(snmpsim_free_port)
write_config "$work/dead-seed.yaml" "$db" "127.1.0.1, \"127.0.0.1:$dead_port\""
run "$topotune" doctor --config "$work/dead-seed.yaml" --timeout 2
cp "$work/stdout" "$work/dead-seed.txt"
expect_status 1
expect "^ok    snmp 127.1.0.1:$snmp_port: sysName s0"
expect "^FAIL  snmp 127.0.0.1:$dead_port: no SNMP answer: "
expect "^      -> check the credentials \\(v2c community from discovery.community\\), the switch's SNMP access list \\(allow this host\\), that UDP $dead_port reaches it"

# --- A corrupt database. ----------------------------------------------------------------
head -c 65536 /dev/urandom >"$work/corrupt.db"
write_config "$work/corrupt.yaml" "$work/corrupt.db" "127.1.0.1"
run "$topotune" doctor --config "$work/corrupt.yaml"
expect_status 1
expect "^FAIL  database: $work/corrupt.db: .*(not a database|malformed)"
expect '^      -> stop topotuned and restore the last backup'

# --- db backup while topotuned runs; info; restore refusals. ----------------------------
run "$topotune" db backup --config "$work/topotuned.yaml" "$work/backup.db"
expect_status 0
expect "^backed up $db to $work/backup.db: schema version $latest, .*, integrity ok$"
[[ ! -e $work/backup.db-wal ]] || fail "the backup has a -wal file"
run "$topotune" db backup --config "$work/topotuned.yaml" "$work/backup.db"
expect_status 1
grep -q "backup.db exists; give --force" "$work/stderr" || fail "backup over an existing file"
run "$topotune" db info --database "$work/backup.db"
expect_status 0
expect "^schema version  $latest \\(this topotune knows up to $latest\\)$"
expect '^migrations      none pending$'
expect '^  agents +4$'
expect '^  topologies +1$'
run "$topotune" db restore "$work/backup.db" --config "$work/topotuned.yaml" --force
expect_status 1
grep -q "is open in process $daemon_pid" "$work/stderr" || fail "restore while topotuned runs"
run "$topotune" db restore "$work/corrupt.db" --database "$work/elsewhere.db"
expect_status 1
[[ ! -e $work/elsewhere.db ]] || fail "a refused restore created the database"
# An older schema: info lists what the next start migrates; a newer one is refused.
cp "$work/backup.db" "$work/old.db"
python3 - "$work/old.db" "$latest" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM schema_version WHERE version = ?", (int(sys.argv[2]),)); c.commit()
PY
run "$topotune" db info --database "$work/old.db"
expect "^migrations      1 pending, applied by topotuned at its next start:$"
cp "$work/backup.db" "$work/new.db"
python3 - "$work/new.db" "$latest" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in c.execute("PRAGMA table_info(schema_version)")]
row = list(c.execute("SELECT * FROM schema_version WHERE version = ?", (int(sys.argv[2]),)).fetchone())
row[cols.index("version")] = int(sys.argv[2]) + 1
c.execute(f"INSERT INTO schema_version VALUES ({','.join('?' * len(row))})", row); c.commit()
PY
run "$topotune" db restore "$work/new.db" --database "$work/elsewhere.db"
expect_status 1
grep -q "newer than this topotune knows" "$work/stderr" || fail "restore of a newer schema"

# --- topotuned down: exit 69, the local checks still printed. ---------------------------
kill "$daemon_pid"
wait "$daemon_pid" || true
daemon_pid=
run "$topotune" doctor --config "$work/topotuned.yaml" --timeout 1
cp "$work/stdout" "$work/daemon-down.txt"
expect_status 69
expect '^ok    config: '
expect "^FAIL  daemon: GetTopology: cannot reach topotuned at $server"
expect "^ok    database: $db: integrity ok"
expect "^ok    snmp 127.1.0.1:$snmp_port: sysName s0"
if grep -Eq '^(ok|warn|FAIL)  (agents|tuning|plan latency)' "$work/stdout"; then fail "remote checks ran without topotuned"; fi

# Restore: refused over an existing database without --force; with it, the
# restored rows are the backup's, and no stale -wal is left.
run "$topotune" db restore "$work/backup.db" --config "$work/topotuned.yaml"
expect_status 1
grep -q "exists; give --force to replace it" "$work/stderr" || fail "restore over an existing database"
printf 'stale' >"$db-wal"
run "$topotune" db restore "$work/backup.db" --config "$work/topotuned.yaml" --force
expect_status 0
expect "^restored $db from $work/backup.db: schema version $latest"
[[ ! -e $db-wal ]] || fail "the stale -wal is still there"
python3 - "$work/backup.db" "$db" <<'PY' || fail "the restored database differs from the backup"
import sqlite3, sys
a, b = (list(sqlite3.connect(p).iterdump()) for p in sys.argv[1:3])
assert a == b, "rows differ"
assert any("INSERT INTO \"agents\"" in l for l in a), "no agents in the backup"
PY
# topotuned starts on the restored database and serves its topology.
"$topotuned" --config "$work/topotuned.yaml" >>"$work/topotuned.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  run "$topotune" topology show --server "$server" --yaml
  ((status == 0)) && break
  sleep 0.1
done
expect_status 0
cp "$work/stdout" "$work/served.yaml"
run "$topotune" topology diff "$work/found.yaml" "$work/served.yaml"
expect_status 0
echo "doctor_test: healthy and broken installations diagnosed; db backup, info and restore round-trip"
for f in healthy agents-missing dead-seed daemon-down; do
  echo "--- $f:"
  sed 's/^/  /' "$work/$f.txt"
done
