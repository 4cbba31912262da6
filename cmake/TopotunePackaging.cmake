# The Debian package of topotune, built by CPack from the install rules: the
# programs, the Slurm/MPI scripts, the units, the monitoring files and the
# guide (deploy/CMakeLists.txt says what they install and where):
#
#   cmake --build build && (cd build && cpack -G DEB)   # -> topotune_VERSION_ARCH.deb
#
# Shared-library dependencies (gRPC, protobuf, SQLite, net-snmp, Open MPI's
# libmpi, yaml-cpp, ...) come from dpkg-shlibdeps (package dpkg-dev); the
# programs topotune runs but does not link are listed by hand: mpirun
# (openmpi-bin) launches benchmark jobs, lldpcli (lldpd, recommended: only the
# agent's LLDP neighbour needs it) reports the switch port. The maintainer
# scripts (deploy/debian/) create the topotune system user with
# systemd-sysusers (adduser without systemd) and leave the units disabled
# until the configuration names the cluster; /etc/topotune/*.yaml are
# conffiles, so upgrades keep local edits.
#
# Included last by the top-level CMakeLists.txt, after every install rule.
set(CPACK_PACKAGE_NAME topotune)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "topotune")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Topology-aware benchmarking and autotuning of MPI collectives")
set(CPACK_PACKAGE_DESCRIPTION
    "topotune discovers the Ethernet switch tree of a cluster (SNMP, LLDP), benchmarks MPI\n"
    "collectives on it and serves per-communicator plans that libtopotune-mpi.so runs inside\n"
    "MPI jobs. Includes topotuned (head node), topotune-agent (compute nodes), the topotune\n"
    "CLI, topotune-bench and systemd units. To load it into jobs: a Slurm TaskProlog, the\n"
    "topotune-mpirun wrapper and an hourly export of Open MPI rules files. Prometheus alert\n"
    "rules and Grafana dashboards in /usr/share/topotune, the sysadmin guide in\n"
    "/usr/share/doc/topotune.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "topotune maintainers <topotune@localhost>")
set(CPACK_GENERATOR DEB)
# Install with the package's real prefix and DESTDIR pointing at the staging
# directory: the units' ExecStart= are written from CMAKE_INSTALL_PREFIX at
# install time, and /etc/topotune is an absolute destination.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)

# Debian strips its packages too (the debug info is most of the size).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin, adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "lldpd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)

include(CPack)
