#!/usr/bin/env bash
# The systemd units and the sysusers.d file as `cmake --install` puts them:
#  - systemd-analyze verify on every unit (topotuned.service,
#    topotune-agent.service, topotune-export-rules.service and its .timer;
#    ExecStart= pointed at the scratch install, since verify needs the
#    programs to exist); any warning fails the test;
#  - the directives the deployment relies on are there, and no line that is
#    not a comment names a token, key or certificate (those are read from
#    /etc/topotune through the YAML files or
#    /etc/default/topotune-export-rules, never from the unit); the export
#    writes the rules file the installed MCA snippet names;
#  - systemd-analyze security --offline=yes: the exposure score of each
#    service is printed and must not be above 2.0. systemd scores a unit 0
#    (locked down) to 10 (unprotected root); these units reach 1.1-1.4, what
#    remains being the network access they need (topotuned serves gRPC and
#    starts mpirun/srun, the agent and the export dial topotuned) and
#    topotuned's allowance for Open MPI (@resources, memory hooks). Losing the
#    empty capability bounding set (3.2) or the system call filter (2.9)
#    pushes it past 2.0; User=, ProtectSystem= and NoNewPrivileges= move it by
#    only 0.2-0.4 each, which is why the directive checks name them one by one;
#  - systemd-sysusers --root creates the topotune system user from the
#    installed sysusers.d file in a scratch root.
# systemd need not run (it does not here): all of this reads files.
#
# Usage: units_test.sh BUILD_DIR SOURCE_DIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
need systemd-analyze systemd
need systemd-sysusers systemd
install_tree
units=$root/usr/lib/systemd/system
threshold=2.0

services=(topotuned.service topotune-agent.service topotune-export-rules.service)
all_units=("${services[@]}" topotune-export-rules.timer)

case_name="systemd-analyze verify"
mkdir "$work/verify"
for unit in "${all_units[@]}"; do
  sed "s|^ExecStart=/usr/|ExecStart=$root/usr/|" "$units/$unit" >"$work/verify/$unit"
done
run systemd-analyze verify "${all_units[@]/#/$work/verify/}"
((status == 0)) || fail "systemd-analyze verify exited $status"
[[ ! -s $work/stderr ]] || fail "systemd-analyze verify warned: $(cat "$work/stderr")"
echo "ok: systemd-analyze verify accepts ${all_units[*]} without a warning"

case_name="directives"
# The value of one directive (the last one wins in systemd; there is one).
directive() { sed -n "s/^$2=//p" "$units/$1" | tail -1; }
for unit in "${services[@]}"; do
  for want in User=topotune Group=topotune StateDirectory=topotune ProtectSystem=strict NoNewPrivileges=yes \
    PrivateTmp=yes ProtectHome=yes PrivateDevices=yes CapabilityBoundingSet=; do
    grep -qx "$want" "$units/$unit" || fail "$unit: no line '$want'"
  done
  if secrets=$(grep -v '^#' "$units/$unit" | grep -inE 'token|secret|passw|key|\.pem|\.crt|tls'); then
    fail "$unit: a line names a credential: $secrets"
  fi
done
for unit in topotuned.service topotune-agent.service; do
  for want in ConfigurationDirectory=topotune Restart=on-failure WantedBy=multi-user.target; do
    grep -qx "$want" "$units/$unit" || fail "$unit: no line '$want'"
  done
  [[ -n $(directive "$unit" RestartSec) ]] || fail "$unit: RestartSec= is missing"
  config=$([[ $unit == topotuned.service ]] && echo topotuned.yaml || echo agent.yaml)
  directive "$unit" ExecStart | grep -q -- "--config /etc/topotune/$config\$" ||
    fail "$unit: ExecStart does not pass --config /etc/topotune/$config"
done
directive topotune-agent.service SupplementaryGroups | grep -qw _lldpd ||
  fail "topotune-agent.service: SupplementaryGroups= lacks _lldpd (lldpd's socket)"
# The export: a oneshot the timer starts, writing where the MCA snippet's
# coll_tuned_dynamic_rules_filename reads, inside its StateDirectory.
[[ $(directive topotune-export-rules.service Type) == oneshot ]] || fail "topotune-export-rules.service is not Type=oneshot"
rules=$(sed -n 's/^coll_tuned_dynamic_rules_filename *= *//p' "$root/usr/share/topotune/mpi/openmpi-mca-params.conf.snippet")
[[ $rules == /var/lib/topotune/* ]] || fail "the MCA snippet's rules file '$rules' is not in /var/lib/topotune"
directive topotune-export-rules.service ExecStart | grep -q "^/usr/bin/topotune-export-rules $rules -- " ||
  fail "topotune-export-rules.service does not write $rules: $(directive topotune-export-rules.service ExecStart)"
[[ $(directive topotune-export-rules.timer WantedBy) == timers.target ]] || fail "the timer is not WantedBy=timers.target"
[[ -n $(directive topotune-export-rules.timer OnUnitActiveSec) ]] || fail "the timer does not repeat (OnUnitActiveSec=)"
echo "ok: the services run as topotune, sandboxed, with no credential; the daemons read /etc/topotune," \
  "the timer's export writes $rules"

case_name="systemd-analyze security"
for unit in "${services[@]}"; do
  run systemd-analyze security --offline=yes "$work/verify/$unit"
  ((status == 0)) || fail "systemd-analyze security $unit exited $status"
  line=$(grep 'Overall exposure level' "$work/stdout") || fail "no exposure level for $unit"
  score=$(sed -n 's/.*: \([0-9.]*\) .*/\1/p' <<<"$line")
  echo "$unit: exposure $score (threshold $threshold): ${line##*: }"
  [[ -n $score ]] || fail "cannot read the score from: $line"
  awk -v s="$score" -v t="$threshold" 'BEGIN { exit !(s <= t) }' ||
    fail "$unit: exposure $score is above $threshold; what raised it: $(grep '✗' "$work/stdout")"
done

case_name="sysusers"
mkdir -p "$work/sysroot/etc"
run systemd-sysusers --root="$work/sysroot" "$root/usr/lib/sysusers.d/topotune.conf"
((status == 0)) || fail "systemd-sysusers exited $status"
entry=$(grep '^topotune:' "$work/sysroot/etc/passwd") || fail "systemd-sysusers created no topotune user"
IFS=: read -r _ _ uid gid _ home shell <<<"$entry"
((uid < 1000)) || fail "topotune is not a system user (uid $uid)"
grep -q "^topotune:x:$gid:" "$work/sysroot/etc/group" || fail "no topotune group with gid $gid"
[[ $home == /var/lib/topotune ]] || fail "topotune's home is $home, not the units' StateDirectory /var/lib/topotune"
[[ $shell == /bin/sh ]] || fail "topotune's shell is $shell; mpirun's ssh logins need a shell"
echo "ok: systemd-sysusers creates $entry"
