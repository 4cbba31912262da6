#!/usr/bin/env bash
# The systemd units and the sysusers.d file as `cmake --install` puts them:
#  - systemd-analyze verify on every unit (topotuned.service,
#    topotune-agent.service, topotune-export-rules.service and its .timer,
#    topotune-tune-from-demand.service and its .timer;
#    ExecStart= pointed at the scratch install, since verify needs the
#    programs to exist); any warning fails the test;
#  - the directives the deployment relies on are there, and no line that is
#    not a comment names a token, key or certificate (those are read from
#    /etc/topotune through the YAML files or
#    /etc/default/topotune-export-rules, never from the unit); the export
#    writes the rules file the installed MCA snippet names, in a 0755 state
#    directory no other unit shares;
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

services=(topotuned.service topotune-agent.service topotune-export-rules.service topotune-tune-from-demand.service)
all_units=("${services[@]}" topotune-export-rules.timer topotune-tune-from-demand.timer)

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
  for want in User=topotune Group=topotune ProtectSystem=strict NoNewPrivileges=yes \
    PrivateTmp=yes ProtectHome=yes PrivateDevices=yes CapabilityBoundingSet=; do
    grep -qx "$want" "$units/$unit" || fail "$unit: no line '$want'"
  done
  if secrets=$(grep -v '^#' "$units/$unit" | grep -inE 'token|secret|passw|key|\.pem|\.crt|tls'); then
    fail "$unit: a line names a credential: $secrets"
  fi
done
for unit in topotuned.service topotune-agent.service; do
  for want in StateDirectory=topotune StateDirectoryMode=0750 ConfigurationDirectory=topotune Restart=on-failure \
    WantedBy=multi-user.target; do
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
# coll_tuned_dynamic_rules_filename reads (and where the script writes by
# default), in a state directory of its own that every job's user may enter:
# not /var/lib/topotune, which the daemons make 0750 (systemd keeps the mode
# of a directory that exists, so a shared one would get the mode of whichever
# unit started first).
[[ $(directive topotune-export-rules.service Type) == oneshot ]] || fail "topotune-export-rules.service is not Type=oneshot"
rules=$(sed -n 's/^coll_tuned_dynamic_rules_filename *= *//p' "$root/usr/share/topotune/mpi/openmpi-mca-params.conf.snippet")
rules_dir=/var/lib/$(directive topotune-export-rules.service StateDirectory)
[[ $rules_dir == /var/lib/topotune-rules ]] ||
  fail "topotune-export-rules.service: StateDirectory= makes $rules_dir, not /var/lib/topotune-rules"
[[ $(directive topotune-export-rules.service StateDirectoryMode) == 0755 ]] ||
  fail "topotune-export-rules.service: StateDirectoryMode= is not 0755; jobs of other users could not read the rules"
[[ $rules == "$rules_dir/ompi-rules.txt" ]] || fail "the MCA snippet's rules file '$rules' is not in $rules_dir"
for unit in topotuned.service topotune-agent.service; do
  [[ /var/lib/$(directive "$unit" StateDirectory) != "$rules_dir" ]] || fail "$unit shares $rules_dir"
done
[[ $(grep -c '^StateDirectory=' "$units/topotune-export-rules.service") -eq 1 ]] ||
  fail "topotune-export-rules.service names more than one StateDirectory="
directive topotune-export-rules.service ExecStart | grep -q "^/usr/bin/topotune-export-rules $rules -- " ||
  fail "topotune-export-rules.service does not write $rules: $(directive topotune-export-rules.service ExecStart)"
# Without FILE the installed script aims at the same file: it names it when it
# gives up (no such directory here: 2; an unreachable topotuned: 69).
run env -u TOPOTUNE "$root/usr/bin/topotune-export-rules" -- --server 127.0.0.1:1
((status == 2 || status == 69)) || fail "topotune-export-rules against 127.0.0.1:1 exited $status"
grep -qE "'$rules' does not exist|$rules left as it was" "$work/stderr" ||
  fail "topotune-export-rules does not default to $rules: $(cat "$work/stderr")"
[[ $(directive topotune-export-rules.timer WantedBy) == timers.target ]] || fail "the timer is not WantedBy=timers.target"
[[ -n $(directive topotune-export-rules.timer OnUnitActiveSec) ]] || fail "the timer does not repeat (OnUnitActiveSec=)"
echo "ok: the services run as topotune, sandboxed, with no credential; the daemons read /etc/topotune," \
  "the timer's export writes $rules in $rules_dir (0755, its own)"

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
