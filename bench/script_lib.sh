# shellcheck shell=bash
# Sourced by the bench/ scripts: --help from the script's header comment,
# usage errors in one style, and one option parser. The caller sets $root
# first.

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

# Parses the command line into the caller's variables:
#   parse_options SPEC... -- "$@"
# Each SPEC is one of
#   value:--name=var   --name takes a value, stored in $var
#   flag:--name=var    --name sets $var to 1
#   positional=var     a word that is not an option is stored in $var
# -h and --help print the usage and exit 0; anything else, or an option
# without its value, is a usage error (exit 2).
parse_options() {
  local -A _po_value=() _po_flag=()
  local _po_positional="" _po_spec
  while [[ $1 != -- ]]; do
    _po_spec=$1
    shift
    case $_po_spec in
      value:*) _po_spec=${_po_spec#value:} && _po_value[${_po_spec%%=*}]=${_po_spec#*=} ;;
      flag:*) _po_spec=${_po_spec#flag:} && _po_flag[${_po_spec%%=*}]=${_po_spec#*=} ;;
      positional=*) _po_positional=${_po_spec#*=} ;;
      *) echo "parse_options: bad spec '$_po_spec'" >&2 && exit 2 ;;
    esac
  done
  shift
  while [[ $# -gt 0 ]]; do
    if [[ $1 == -h || $1 == --help ]]; then
      usage
      exit 0
    elif [[ -n ${_po_value[$1]+set} ]]; then
      [[ $# -ge 2 ]] || die_usage "$1 needs a value"
      printf -v "${_po_value[$1]}" '%s' "$2"
      shift
    elif [[ -n ${_po_flag[$1]+set} ]]; then
      printf -v "${_po_flag[$1]}" 1
    elif [[ $1 != -* && -n $_po_positional ]]; then
      printf -v "$_po_positional" '%s' "$1"
    else
      die_usage "unknown argument '$1'"
    fi
    shift
  done
}
