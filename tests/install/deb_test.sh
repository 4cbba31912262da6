#!/usr/bin/env bash
# The .deb: `cpack -G DEB` over the build tree, into a scratch directory.
# Checks its name and version (project()), the Depends that dpkg-shlibdeps
# found plus the declared ones, the file list with every mode (the same as
# `cmake --install`, common.sh), the units written for /usr, the conffiles,
# that the maintainer scripts are valid sh, and what postrm removes on purge
# (as root, in a private mount namespace).
#
# Usage: deb_test.sh BUILD_DIR SOURCE_DIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
need cpack cmake
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev
[[ -f $build/CPackConfig.cmake ]] || fail "$build/CPackConfig.cmake is missing (cmake/TopotunePackaging.cmake not included?)"

case_name="cpack"
start=$SECONDS
run cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg"
((status == 0)) || fail "cpack exited $status"
version=$(sed -n 's/^project(topotune VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")
arch=$(dpkg --print-architecture)
deb=$work/pkg/topotune_${version}_${arch}.deb
[[ -f $deb ]] || fail "no $(basename "$deb"); cpack made: $(ls "$work/pkg")"
echo "ok: cpack built $(basename "$deb") ($(du -h "$deb" | cut -f1)) in $((SECONDS - start)) s"

case_name="control"
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == topotune ]] || fail "Package is '$(field Package)'"
[[ $(field Version) == "$version" ]] || fail "Version is '$(field Version)', project() says $version"
depends=$(field Depends)
echo "Depends: $depends"
# Declared: the programs topotune runs; found by dpkg-shlibdeps: the libraries
# it links (gRPC, SQLite, net-snmp, Open MPI, protobuf, yaml-cpp, prometheus-cpp).
for pkg in openmpi-bin adduser 'libgrpc++[0-9.]*' 'libsqlite3-0' 'libsnmp[0-9]+' 'libopenmpi[0-9]+' \
  'libprotobuf[0-9]+' 'libyaml-cpp[0-9.]+' 'libprometheus-cpp-core[0-9.]+' 'libc6'; do
  grep -qE "(^|, )$pkg( \(|,|$)" <<<"$depends" || fail "Depends lacks $pkg: $depends"
done
[[ $(field Recommends) == lldpd ]] || fail "Recommends is '$(field Recommends)', expected lldpd"
echo "ok: Package topotune $version; Depends and Recommends declared"

case_name="contents"
run dpkg-deb -c "$deb"
((status == 0)) || fail "dpkg-deb -c exited $status"
# The same files and modes as `cmake --install` (common.sh): "-rwxr-xr-x" -> 755.
awk '$1 !~ /^d/ {
  mode = 0
  for (i = 2; i <= 10; i++) mode = mode * 2 + (substr($1, i, 1) != "-")
  printf "%o %s\n", mode, substr($6, 3)
}' "$work/stdout" | check_files
files=$(awk '$1 !~ /^d/ {print $6}' "$work/stdout" | LC_ALL=C sort)
! awk '{print $2}' "$work/stdout" | grep -v '^root/root$' || fail "files not owned by root/root"
unit() { dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "./usr/lib/systemd/system/$1"; }
grep -q 'ExecStart=/usr/sbin/topotuned ' <(unit topotuned.service) ||
  fail "the packaged topotuned.service does not start /usr/sbin/topotuned"
grep -q 'ExecStart=/usr/bin/topotune-export-rules ' <(unit topotune-export-rules.service) ||
  fail "the packaged topotune-export-rules.service does not start /usr/bin/topotune-export-rules"
grep -qx 'Documentation=file:/usr/share/doc/topotune/slurm/README.md' <(unit topotune-export-rules.service) ||
  fail "the packaged topotune-export-rules.service does not document itself with /usr/share/doc/topotune/slurm/README.md"
echo "ok: $(wc -l <<<"$files") files with the expected modes, as \`cmake --install\` lays them out"

case_name="maintainer scripts"
mkdir "$work/control"
dpkg-deb -e "$deb" "$work/control"
conffiles=$(LC_ALL=C sort "$work/control/conffiles")
etc_files=$(grep '^\./etc/' <<<"$files" | sed 's|^\.||')
[[ $conffiles == "$etc_files" ]] || fail "conffiles ($conffiles) are not the files under /etc ($etc_files)"
for script in postinst prerm postrm; do
  [[ -x $work/control/$script ]] || fail "$script is missing or not executable"
  sh -n "$work/control/$script" || fail "$script is not valid sh"
  head -1 "$work/control/$script" | grep -qx '#!/bin/sh' || fail "$script does not start with #!/bin/sh"
done
grep -q 'systemd-sysusers topotune.conf' "$work/control/postinst" || fail "postinst does not apply the sysusers file"
grep -q 'adduser --system' "$work/control/postinst" || fail "postinst has no adduser fallback"
echo "ok: conffiles $(tr '\n' ' ' <<<"$conffiles"); postinst, prerm, postrm are valid sh"

# postrm with this machine's /var/lib and /run/systemd replaced by empty
# tmpfs in a private mount namespace (so no systemctl call reaches the host):
# remove keeps the state, purge removes the database directory and the rules
# directory, and nothing else.
case_name="postrm purge"
if ((EUID != 0)) || ! command -v unshare >/dev/null; then
  echo "note: not root or no unshare: postrm purge is not run"
else
  # The inner shell expands (SC2016).
  # shellcheck disable=SC2016
  run unshare --mount --propagation private sh -ec '
    mount -t tmpfs tmpfs /var/lib
    [ ! -d /run/systemd ] || mount -t tmpfs tmpfs /run/systemd
    mkdir /var/lib/topotune /var/lib/topotune-rules /var/lib/other
    touch /var/lib/topotune/topotune.db /var/lib/topotune-rules/ompi-rules.txt
    sh "$1" remove
    if [ -f /var/lib/topotune/topotune.db ] && [ -f /var/lib/topotune-rules/ompi-rules.txt ]; then
      echo "remove kept the state"
    fi
    sh "$1" purge
    echo "after purge: $(ls -A /var/lib)"' sh "$work/control/postrm"
  ((status == 0)) || fail "postrm in a private mount namespace exited $status: $(cat "$work/stderr")"
  grep -qx 'remove kept the state' "$work/stdout" ||
    fail "postrm remove touched the state: $(cat "$work/stdout")"
  grep -qx 'after purge: other' "$work/stdout" || fail "postrm purge left or removed the wrong directories: $(cat "$work/stdout")"
  echo "ok: postrm remove keeps /var/lib/topotune and /var/lib/topotune-rules, purge removes both"
fi
