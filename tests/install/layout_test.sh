#!/usr/bin/env bash
# `cmake --install` of the build tree (DESTDIR, prefix /usr): the exact file
# list, --help of every installed program, shared libraries all resolved from
# the system with no path into the build tree, and the installed topotuned
# started with the installed topotuned.yaml the way its systemd unit starts it
# (STATE_DIRECTORY set, no database flag): it serves /metrics, takes the
# installed agent's registration, and stops on SIGTERM with exit 0.
#
# Usage: layout_test.sh BUILD_DIR SOURCE_DIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
need curl curl
install_tree

case_name="file list"
expected="etc/topotune/agent.yaml
etc/topotune/topotuned.yaml
usr/bin/topotune
usr/bin/topotune-agent
usr/bin/topotune-bench
usr/lib/libtopotune-mpi-client.so
usr/lib/libtopotune-mpi.so
usr/lib/systemd/system/topotune-agent.service
usr/lib/systemd/system/topotuned.service
usr/lib/sysusers.d/topotune.conf
usr/sbin/topotuned"
actual=$(cd "$root" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort)
[[ $actual == "$expected" ]] || fail "installed files differ from the expected list:
$(diff <(echo "$expected") <(echo "$actual"))"
for p in usr/bin/topotune usr/bin/topotune-agent usr/bin/topotune-bench usr/sbin/topotuned; do
  [[ -x $root/$p ]] || fail "$p is not executable"
done
for p in etc/topotune/agent.yaml etc/topotune/topotuned.yaml usr/lib/systemd/system/topotuned.service; do
  [[ $(stat -c %a "$root/$p") == 644 ]] || fail "$p has mode $(stat -c %a "$root/$p"), expected 644"
done
grep -qx 'ExecStart=/usr/sbin/topotuned --config /etc/topotune/topotuned.yaml' \
  "$root/usr/lib/systemd/system/topotuned.service" || fail "topotuned.service does not start /usr/sbin/topotuned"
grep -qx 'ExecStart=/usr/bin/topotune-agent serve --config /etc/topotune/agent.yaml' \
  "$root/usr/lib/systemd/system/topotune-agent.service" || fail "topotune-agent.service does not start /usr/bin/topotune-agent"
echo "ok: $(wc -l <<<"$actual") files, as expected"

case_name="--help"
for p in usr/bin/topotune usr/bin/topotune-agent usr/bin/topotune-bench usr/sbin/topotuned; do
  run "$root/$p" --help
  ((status == 0)) || fail "$p --help exited $status"
  grep -q "$(basename "$p")" "$work/stdout" || fail "$p --help does not name the program"
done
echo "ok: every installed program answers --help"

case_name="shared libraries"
for p in usr/bin/topotune usr/bin/topotune-agent usr/bin/topotune-bench usr/sbin/topotuned \
  usr/lib/libtopotune-mpi.so usr/lib/libtopotune-mpi-client.so; do
  run ldd "$root/$p"
  ((status == 0)) || fail "ldd $p exited $status"
  ! grep -q 'not found' "$work/stdout" || fail "$p: a library is not found: $(grep 'not found' "$work/stdout")"
  ! grep -qF -e "$build" -e "$source" "$work/stdout" || fail "$p loads a library from the build or source tree"
  run readelf -d "$root/$p"
  ((status == 0)) || fail "readelf -d $p exited $status"
  if grep -E '\((RPATH|RUNPATH)\)' "$work/stdout" | grep -v -E '\[\$ORIGIN[^]]*\]'; then
    fail "$p has an RPATH/RUNPATH other than \$ORIGIN"
  fi
done
echo "ok: every installed ELF file resolves its libraries from the system, without RPATH"

case_name="installed topotuned"
state=$work/state # What systemd's StateDirectory=topotune makes.
mkdir -m 0750 "$state"
STATE_DIRECTORY=$state "$root/usr/sbin/topotuned" --config "$root/etc/topotune/topotuned.yaml" \
  --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/ports" >"$work/topotuned.log" 2>&1 &
daemon=$!
pids+=("$daemon")
for _ in $(seq 200); do
  [[ -s $work/ports ]] && break
  kill -0 "$daemon" 2>/dev/null || fail "topotuned exited before it served"
  sleep 0.1
done
[[ -s $work/ports ]] || fail "topotuned wrote no port file within 20 s"
grpc=$(sed -n 's/^grpc=//p' "$work/ports")
metrics=$(sed -n 's/^metrics=//p' "$work/ports")
[[ -f $state/topotune.db ]] || fail "the database is not \$STATE_DIRECTORY/topotune.db: $(ls -A "$state")"
grep -qF "config $root/etc/topotune/topotuned.yaml" "$work/topotuned.log" || fail "topotuned did not load the installed configuration"

run curl -sS --max-time 10 "http://127.0.0.1:$metrics/metrics"
((status == 0)) || fail "GET /metrics failed (curl exit $status)"
grep -q '^# TYPE topotune_' "$work/stdout" || fail "/metrics has no topotune_ metric"
echo "ok: the installed topotuned serves /metrics on port $metrics with its database in \$STATE_DIRECTORY"

# The installed agent with the installed agent.yaml registers and heartbeats
# once (no lldpd here: --no-lldp).
case_name="installed topotune-agent"
run "$root/usr/bin/topotune-agent" serve --once --config "$root/etc/topotune/agent.yaml" \
  --server "127.0.0.1:$grpc" --no-lldp --hostname install-test-node
if ((status != 0)) && grep -q 'no MAC address found' "$work/stderr"; then
  # A network namespace with loopback only: no facts to register.
  echo "note: no network interface but loopback here; the agent's registration is not checked"
else
  ((status == 0)) || fail "topotune-agent serve --once exited $status"
  grep -qF "config $root/etc/topotune/agent.yaml" "$work/stderr" || fail "the agent did not load the installed agent.yaml"
  echo "ok: the installed agent registered with the installed topotuned"
fi

case_name="SIGTERM"
kill -TERM "$daemon"
set +e
timeout 15 tail --pid="$daemon" -f /dev/null
wait "$daemon"
rc=$?
set -e
pids=()
((rc == 0)) || fail "topotuned exited $rc after SIGTERM, expected 0"
echo "ok: topotuned stopped on SIGTERM with exit 0"
