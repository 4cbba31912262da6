#!/usr/bin/env bash
# The .deb: `cpack -G DEB` over the build tree, into a scratch directory.
# Checks its name and version (project()), the Depends that dpkg-shlibdeps
# found plus the declared ones, the file list (the same as `cmake --install`),
# the conffiles, and that the maintainer scripts are valid sh.
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
expected="./etc/topotune/agent.yaml
./etc/topotune/topotuned.yaml
./usr/bin/topotune
./usr/bin/topotune-agent
./usr/bin/topotune-bench
./usr/lib/libtopotune-mpi-client.so
./usr/lib/libtopotune-mpi.so
./usr/lib/systemd/system/topotune-agent.service
./usr/lib/systemd/system/topotuned.service
./usr/lib/sysusers.d/topotune.conf
./usr/sbin/topotuned"
run dpkg-deb -c "$deb"
((status == 0)) || fail "dpkg-deb -c exited $status"
files=$(awk '$1 !~ /^d/ {print $6}' "$work/stdout" | LC_ALL=C sort)
[[ $files == "$expected" ]] || fail "the package's files differ from the expected list:
$(diff <(echo "$expected") <(echo "$files"))"
! awk '{print $2}' "$work/stdout" | grep -v '^root/root$' || fail "files not owned by root/root"
grep -q 'ExecStart=/usr/sbin/topotuned ' <(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/lib/systemd/system/topotuned.service) ||
  fail "the packaged topotuned.service does not start /usr/sbin/topotuned"
echo "ok: $(wc -l <<<"$files") files, as expected"

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
