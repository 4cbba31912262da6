#!/usr/bin/env bash
# Slurm TaskProlog that loads libtopotune-mpi.so into every task of every job.
#
# slurmstepd runs it as the job's user, with the task's environment, just
# before each task starts, and reads its standard output: a line
# "export NAME=value" sets NAME in the task's environment (the value is the
# rest of the line, taken literally). This script prints
#   export LD_PRELOAD=<library>[:<the job's LD_PRELOAD>]
#   export TOPOTUNE_...=...   (each TOPOTUNE_ setting of the site file that
#                              the job did not set itself)
# and nothing at all when the job opted out (TOPOTUNE_DISABLE=1 in its
# environment), when the site file says TOPOTUNE_DISABLE=1, or when the
# library is missing on this node (then with a warning on stderr and in
# syslog, tag topotune-task-prolog). It always
# exits 0: a job never fails because of topotune.
#
# Every task gets the library, MPI or not: in a program that never calls
# MPI_Init it only costs the dynamic loading of the library and Open MPI
# (about 3 ms per process). The library is built for one MPI ABI:
# libtopotune-mpi.so for Open MPI (the default), libtopotune-mpich.so for
# MPICH and the MPIs of its ABI; a job of the latter sets TOPOTUNE_MPI=mpich
# (or the site file does, for a site that runs MPICH). Loaded into a program
# of the other MPI, the library says so at MPI_Init and what to load instead.
#
# Site file: $TOPOTUNE_JOB_ENV, default /etc/topotune/job.env. Lines
# NAME=value (a value may be quoted with "..." or '...'; # starts a comment):
#   TOPOTUNE_LIBRARY=/usr/local/lib/libtopotune-mpi.so   (default: lib/ of
#       this script's installation prefix, e.g. /usr/lib/libtopotune-mpi.so
#       for /usr/share/topotune/slurm/topotune-task-prolog.sh)
#   TOPOTUNE_MPI=mpich                  the jobs' MPI when they do not say:
#       openmpi (default) or mpich
#   TOPOTUNE_LIBRARY_MPICH=...          the library for TOPOTUNE_MPI=mpich
#       (default: libtopotune-mpich.so beside libtopotune-mpi.so)
#   TOPOTUNE_SERVER=head:50051          any TOPOTUNE_ variable of the library
#   TOPOTUNE_DISABLE=1                  site-wide off switch
#
# Also the engine of topotune-mpirun, which turns these lines into mpirun -x.
# Usage: topotune-task-prolog.sh [--help]
set -u

# A TaskProlog's stderr does not reach the job: warnings also go to syslog.
warn() {
  echo "topotune-task-prolog: $*" >&2
  logger -t topotune-task-prolog -p user.warning -- "$*" 2>/dev/null || true
}

if [[ ${1:-} == --help || ${1:-} == -h ]]; then
  sed -n '2,/^set -u$/{/^set -u$/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
  exit 0
fi

# The job's own opt-out wins over everything, and costs nothing.
[[ ${TOPOTUNE_DISABLE:-0} == 1 ]] && exit 0

site_file=${TOPOTUNE_JOB_ENV:-/etc/topotune/job.env}
# The installation prefix, three levels up from share/topotune/slurm, with
# symbolic links (of the script too) resolved: jobs see /usr/lib/..., not
# /usr/share/topotune/slurm/../../../lib/...
prefix=$(cd -P "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../.." 2>/dev/null && pwd)
library=${prefix:+${prefix%/}/lib/libtopotune-mpi.so}
declare -A site=()
site_names=()

# Reads the site file into site[NAME]=value, in file order (site_names).
read_site_file() {
  local line name value lineno=0
  while IFS= read -r line || [[ -n $line ]]; do
    lineno=$((lineno + 1))
    line=${line%$'\r'}
    [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
    if [[ ! $line =~ ^[[:space:]]*(export[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
      warn "$site_file:$lineno: not NAME=value, ignored: $line"
      continue
    fi
    name=${BASH_REMATCH[2]} value=${BASH_REMATCH[3]}
    value=${value%"${value##*[![:space:]]}"}
    if [[ $value =~ ^\"(.*)\"$ || $value =~ ^\'(.*)\'$ ]]; then
      value=${BASH_REMATCH[1]}
    fi
    if [[ $name != TOPOTUNE_* ]]; then
      warn "$site_file:$lineno: $name is not a TOPOTUNE_ setting, ignored"
      continue
    fi
    [[ -v site[$name] ]] || site_names+=("$name")
    site[$name]=$value
  done <"$site_file"
}

if [[ -r $site_file ]]; then
  read_site_file
elif [[ -e $site_file || -n ${TOPOTUNE_JOB_ENV:-} ]]; then
  warn "cannot read the site file $site_file; using the defaults"
fi

[[ ${site[TOPOTUNE_DISABLE]:-0} == 1 ]] && exit 0
[[ -n ${site[TOPOTUNE_LIBRARY]:-} ]] && library=${site[TOPOTUNE_LIBRARY]}
# The job's MPI (its own TOPOTUNE_MPI first, then the site's).
mpi=${TOPOTUNE_MPI:-${site[TOPOTUNE_MPI]:-openmpi}}
case $mpi in
  openmpi) ;;
  mpich)
    library=${site[TOPOTUNE_LIBRARY_MPICH]:-${prefix:+${prefix%/}/lib/libtopotune-mpich.so}}
    [[ -n ${site[TOPOTUNE_LIBRARY_MPICH]:-} || -z ${site[TOPOTUNE_LIBRARY]:-} ]] ||
      library=$(dirname "${site[TOPOTUNE_LIBRARY]}")/libtopotune-mpich.so
    ;;
  *) warn "TOPOTUNE_MPI=$mpi is neither openmpi nor mpich; loading the Open MPI library" ;;
esac

if [[ -z $library || ! -r $library || ! -f $library ]]; then
  warn "the library ${library:-libtopotune-mpi.so} is missing on $(hostname 2>/dev/null || echo this node);" \
    "the job runs without topotune (set TOPOTUNE_LIBRARY in $site_file)"
  exit 0
fi

# LD_PRELOAD: the library first, the job's own entries after it, the
# library never twice (entries are separated by colons or spaces).
preload=${LD_PRELOAD:-}
read -r -a entries <<<"${preload//:/ }"
present=0
for entry in "${entries[@]}"; do
  [[ $entry == "$library" ]] && present=1
done
if ((!present)); then
  echo "export LD_PRELOAD=$library${preload:+:$preload}"
fi

# The site's settings, unless the job chose its own value (a user may point
# one job at another daemon with TOPOTUNE_SERVER).
for name in "${site_names[@]}"; do
  [[ $name == TOPOTUNE_LIBRARY || $name == TOPOTUNE_LIBRARY_MPICH || $name == TOPOTUNE_DISABLE ]] && continue
  [[ -v $name ]] && continue
  echo "export $name=${site[$name]}"
done
exit 0
