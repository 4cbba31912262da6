#!/usr/bin/env bash
# Serves every vendor recording in ../shared/fixtures/snmp/vendor with a real
# snmpsimd (community = file name) and runs the vendor expectation tests of
# discovery_test against it, so the net-snmp client (GETBULK walks, value
# conversion) must yield the same neighbours as reading the files.
#
# Usage: vendor_snmpsim_test.sh DISCOVERY_TEST_BINARY VENDOR_DIR
set -euo pipefail
binary=$1
vendor=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=snmpsim.sh
source "$here/snmpsim.sh"
data=$(mktemp -d /tmp/topotune-vendor.XXXXXX)
trap 'snmpsim_stop; rm -rf "$data"' EXIT
cp "$vendor"/*.snmprec "$data"/
port=$(snmpsim_free_port)
snmpsim_start "$data" "127.0.0.1:$port"
TOPOTUNE_SNMP_AGENT="127.0.0.1:$port" "$binary" --gtest_filter='Recordings/*'
