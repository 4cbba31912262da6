#!/usr/bin/env bash
# The shipped Prometheus files through promtool: the scrape example's config
# (with the rules file it loads), the rules, and the rules' unit tests
# (deploy/prometheus/topotune.rules.test.yml: each alert fires on bad input
# and stays silent on good input). Exit 77 (skipped) without promtool.
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../deploy/prometheus" && pwd)
promtool=${PROMTOOL:-promtool}
if ! command -v "$promtool" >/dev/null; then
  echo "SKIP: no promtool (Debian package prometheus)" >&2
  exit 77
fi
cd "$dir"
"$promtool" check config prometheus.yml
"$promtool" check rules topotune.rules.yml
"$promtool" test rules topotune.rules.test.yml
echo "PASS: promtool check config, check rules and test rules"
