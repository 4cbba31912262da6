# Sourced by the SNMP tests: start and stop a real snmpsimd (Debian snmpsim
# 0.4.5) serving .snmprec files, so that discovery walks them over UDP
# through net-snmp exactly as it walks a switch.
#
#   snmpsim_start DATA_DIR ENDPOINT... [-- EXTRA_SNMPSIMD_ARGS...]
#       ENDPOINT is ADDR:PORT on loopback. Waits until every endpoint answers
#       (a sysName GET with community $SNMPSIM_COMMUNITY, default the first
#       file's name) or fails after 120 s.
#       Sets SNMPSIM_PID and SNMPSIM_DIR (its cache and log). May be called
#       several times: each process is remembered (SNMPSIM_PIDS, SNMPSIM_DIRS).
#   snmpsim_stop
#       Kills exactly the snmpsimd processes this script started, and removes
#       their directories. Call it from a trap.
#   snmpsim_free_port
#       Prints a free UDP port on 127.0.0.1.
#
# snmpsimd as root must drop privileges (--process-user/--process-group), so
# its cache directory and the data are made readable and writable for nobody.

SNMPSIM_PIDS=()
SNMPSIM_DIRS=()

snmpsim_free_port() {
  # Free on 127.0.0.1 and on the first switch addresses of the generator.
  python3 - <<'PY'
import socket
for _ in range(100):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    try:
        for addr in ("127.1.0.1", "127.1.0.2", "127.1.0.3"):
            t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            t.bind((addr, port))
            t.close()
    except OSError:
        s.close()
        continue
    s.close()
    print(port)
    break
PY
}

snmpsim_start() {
  local data=$1
  shift
  local endpoints=() extra=()
  while (($#)); do
    if [[ $1 == -- ]]; then
      shift
      extra=("$@")
      break
    fi
    endpoints+=("$1")
    shift
  done
  SNMPSIM_DIR=$(mktemp -d /tmp/topotune-snmpsim.XXXXXX)
  chmod 755 "$SNMPSIM_DIR"
  mkdir -p "$SNMPSIM_DIR/cache"
  chmod -R a+rX "$data"
  local user_args=()
  if ((EUID == 0)); then
    chown nobody "$SNMPSIM_DIR/cache"
    user_args=(--process-user=nobody --process-group=nogroup)
  fi
  local endpoint_args=()
  for e in "${endpoints[@]}"; do endpoint_args+=("--agent-udpv4-endpoint=$e"); done
  snmpsimd --data-dir="$data" --cache-dir="$SNMPSIM_DIR/cache" "${user_args[@]}" "${endpoint_args[@]}" \
    --logging-method=file:"$SNMPSIM_DIR/snmpsimd.log" "${extra[@]}" >"$SNMPSIM_DIR/stdout" 2>&1 &
  SNMPSIM_PID=$!
  SNMPSIM_PIDS+=("$SNMPSIM_PID")
  SNMPSIM_DIRS+=("$SNMPSIM_DIR")
  # Wait until each endpoint answers; indexing large files takes seconds.
  local community=${SNMPSIM_COMMUNITY:-}
  if [[ -z $community ]]; then
    community=$(find "$data" -name '*.snmprec' | head -1)
    community=${community#"$data"/}
    community=${community%.snmprec}
  fi
  local deadline=$((SECONDS + 120))
  for e in "${endpoints[@]}"; do
    until snmpget -v2c -c "$community" -On -t 1 -r 0 "udp:$e" 1.3.6.1.2.1.1.5.0 >/dev/null 2>&1; do
      if ! kill -0 "$SNMPSIM_PID" 2>/dev/null; then
        echo "snmpsimd exited early:" >&2
        cat "$SNMPSIM_DIR/stdout" "$SNMPSIM_DIR/snmpsimd.log" >&2 2>/dev/null
        return 1
      fi
      if ((SECONDS > deadline)); then
        echo "snmpsimd does not answer on $e after 120 s" >&2
        return 1
      fi
      sleep 0.5
    done
  done
}

snmpsim_stop() {
  local pid dir
  for pid in "${SNMPSIM_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  for dir in "${SNMPSIM_DIRS[@]}"; do rm -rf "$dir"; done
  SNMPSIM_PIDS=()
  SNMPSIM_DIRS=()
  SNMPSIM_PID=
  SNMPSIM_DIR=
  return 0
}
