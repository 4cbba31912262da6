# Sourced by the bench/ scripts: --help from the script's header comment and
# usage errors in one style. The caller sets $root first.

# Prints the script's header comment (line 2 up to `set -euo`) as its usage.
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# A usage error: names the script, points to --help, exits 2.
die_usage() {
  local name
  name=$(basename "$0")
  echo "$name: $*" >&2
  echo "Run 'bench/$name --help' for usage." >&2
  exit 2
}
