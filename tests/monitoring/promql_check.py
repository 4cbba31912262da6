#!/usr/bin/env python3
"""Runs every PromQL expression topotune ships (alert rules and Grafana
dashboards, see promql_exprs.py) against a live Prometheus and prints a
table of expression -> series count.

Default mode: every expression must be valid and return data, except those
the expected-empty file lists with a reason; those must be valid and return
no data (so the reason still holds), and every name listed there must exist.
--only NAME (repeatable): just those expressions, each of which must return
data, polling up to --wait seconds (for conditions a test provokes).

Dashboard variables get --var NAME=VALUE, else ".+" (their allValue);
Grafana's built-ins get promql_exprs.BUILTINS ($__rate_interval=5m ...).
Exit 0 when everything holds, 1 otherwise, 2 on bad usage.

Usage: promql_check.py --url http://127.0.0.1:9090 [--expected-empty FILE]
                       [--var collective=alltoall] [--only NAME --wait 60]"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import promql_exprs  # noqa: E402


def query(url: str, expr: str) -> tuple[int | None, str]:
    """(series count, "") or (None, Prometheus's error)."""
    data = urllib.parse.urlencode({"query": expr}).encode()
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query", data=data, timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        try:
            body = json.load(e)
        except ValueError:
            return None, f"HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return None, f"cannot reach {url}: {e}"
    if body.get("status") != "success":
        return None, f"{body.get('errorType')}: {body.get('error')}"
    result = body["data"]["result"]
    return (len(result) if body["data"]["resultType"] in ("vector", "matrix") else 1), ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="Prometheus, e.g. http://127.0.0.1:9090")
    ap.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[2])
    ap.add_argument("--expected-empty", type=pathlib.Path, help="YAML list of {name, reason}")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--wait", type=float, default=0, help="seconds to wait for --only expressions to return data")
    args = ap.parse_args()
    values = {}
    for v in args.var:
        name, sep, value = v.partition("=")
        if not sep:
            ap.error(f"--var {v}: expected NAME=VALUE")
        values[name] = value
    exprs = dict(promql_exprs.all_exprs(args.root))
    expected: dict[str, str] = {}
    if args.expected_empty:
        for e in yaml.safe_load(args.expected_empty.read_text()) or []:
            expected[e["name"]] = e["reason"]
    problems = [f"expected-empty entry '{n}' names no expression" for n in expected if n not in exprs]
    unknown = [n for n in args.only if n not in exprs]
    if unknown:
        ap.error(f"--only {', '.join(unknown)}: no such expression; names are: {', '.join(sorted(exprs))}")
    names = args.only or list(exprs)
    rows = []
    deadline = time.monotonic() + args.wait
    for name in names:
        expr = promql_exprs.substitute(exprs[name], values, default=".+")
        while True:
            n, err = query(args.url, expr)
            if n or err or not args.only or time.monotonic() >= deadline:
                break
            time.sleep(1)
        if err:
            status = f"INVALID: {err}"
            problems.append(f"{name}: {err}")
        elif args.only:
            status = "ok (provoked)" if n else "EMPTY, but the test provoked it"
            if not n:
                problems.append(f"{name}: no data within {args.wait:g} s after provoking it: {expr}")
        elif name in expected:
            status = f"empty as expected: {expected[name]}" if n == 0 else "NOT EMPTY, but listed as expected-empty"
            if n:
                problems.append(f"{name}: {n} series, but listed as expected-empty ({expected[name]})")
        else:
            status = "ok" if n else "EMPTY"
            if not n:
                problems.append(f"{name}: no data: {expr}")
        rows.append((name, "-" if n is None else str(n), status))
    width = max(len(r[0]) for r in rows)
    print(f"{'expression':<{width}}  series  result")
    for name, n, status in rows:
        print(f"{name:<{width}}  {n:>6}  {status}")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
