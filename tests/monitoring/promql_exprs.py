"""Every PromQL expression topotune ships: the alert rules
(deploy/prometheus/*.rules.yml) and the Grafana dashboards
(deploy/grafana/dashboards/*.json: panel targets, annotations and query
variables), each with a stable name, and Grafana's template variables
replaced by concrete values. Shared by dashboard_check.py (offline) and
promql_check.py (against a live Prometheus)."""
from __future__ import annotations

import json
import pathlib
import re
from typing import Iterator

import yaml

# Values of Grafana's built-in variables when an expression is run outside
# Grafana; the dashboards' own variables default to ".+" (their allValue).
BUILTINS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


def variables_in(expr: str) -> set[str]:
    return {next(g for g in m.groups() if g) for m in VARIABLE.finditer(expr)}


def substitute(expr: str, values: dict[str, str], default: str | None = None) -> str:
    """expr with every $var, ${var} and [[var]] replaced from values, then
    BUILTINS, then `default`; ValueError names a variable without a value."""
    def repl(m: re.Match) -> str:
        name = next(g for g in m.groups() if g)
        value = values.get(name, BUILTINS.get(name, default))
        if value is None:
            raise ValueError(f"no value for the variable ${name} in: {expr}")
        return value
    return VARIABLE.sub(repl, expr)


def rule_exprs(path: pathlib.Path) -> Iterator[tuple[str, str]]:
    doc = yaml.safe_load(path.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            kind = "alert" if "alert" in rule else "record"
            yield f"{kind} {rule.get('alert') or rule.get('record')}", rule["expr"]


def panels_of(dashboard: dict) -> Iterator[dict]:
    for p in dashboard.get("panels", []):
        yield p
        yield from p.get("panels", [])  # collapsed rows


def label_values_series(query: str) -> str | None:
    """The series selector of a label_values(SELECTOR, label) variable query;
    None for label_values(label), which names no series."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query, re.S)
    return m.group(1) if m else None


def dashboard_exprs(dashboard: dict) -> Iterator[tuple[str, str]]:
    uid = dashboard["uid"]
    for p in panels_of(dashboard):
        for t in p.get("targets", []):
            yield f"{uid} / {p['title']} / {t['refId']}", t["expr"]
    for a in dashboard.get("annotations", {}).get("list", []):
        if a.get("expr"):
            yield f"{uid} / annotation {a['name']}", a["expr"]
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            series = label_values_series(q)
            if series:
                yield f"{uid} / variable {v['name']}", series


def all_exprs(root: pathlib.Path) -> list[tuple[str, str]]:
    """(name, expr) of every shipped expression under the source tree `root`."""
    out = []
    for rules in sorted((root / "deploy/prometheus").glob("*.rules.yml")):
        out += rule_exprs(rules)
    for path in sorted((root / "deploy/grafana/dashboards").glob("*.json")):
        out += dashboard_exprs(json.loads(path.read_text()))
    return out
