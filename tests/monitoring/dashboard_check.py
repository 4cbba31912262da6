#!/usr/bin/env python3
"""Checks topotune's Grafana dashboards and provisioning files without
Grafana: valid JSON; a uid, title and the DS_PROMETHEUS data-source variable;
every panel with an id unique in its dashboard, a gridPos inside the 24
columns that overlaps no other panel, and (unless a row) the DS_PROMETHEUS
data source and targets with unique refIds and an expression; every
variable an expression uses defined; every expression (variables replaced)
accepted by `promtool check rules`; the provisioning files well formed.
Exit 0 when everything holds, else 1 with every problem listed.

Usage: dashboard_check.py [--root SOURCE_TREE] [--promtool PATH]"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import promql_exprs  # noqa: E402

DS_UID = "${DS_PROMETHEUS}"


def check_dashboard(path: pathlib.Path, problems: list[str]) -> dict | None:
    def bad(msg: str) -> None:
        problems.append(f"{path.name}: {msg}")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        bad(f"not valid JSON: {e}")
        return None
    for key in ("uid", "title", "panels", "schemaVersion"):
        if not d.get(key):
            bad(f"no '{key}'")
    variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
    ds = variables.get("DS_PROMETHEUS")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        bad("no data-source variable DS_PROMETHEUS of type datasource (query prometheus)")
    ids, cells = set(), {}
    for p in promql_exprs.panels_of(d):
        where = f"panel {p.get('id')} '{p.get('title')}'"
        if not isinstance(p.get("id"), int) or p["id"] in ids:
            bad(f"{where}: id missing or used twice")
        ids.add(p.get("id"))
        if not p.get("title"):
            bad(f"{where}: no title")
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["w"] < 1 or g["h"] < 1 or g["x"] < 0 \
                or g["x"] + g["w"] > 24:
            bad(f"{where}: gridPos {g} is not inside the 24 columns")
            continue
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    bad(f"{where}: gridPos overlaps panel {cells[(x, y)]}")
                    break
                cells[(x, y)] = p["id"]
            else:
                continue
            break
        if p.get("type") == "row":
            continue
        if p.get("datasource") != {"type": "prometheus", "uid": DS_UID}:
            bad(f"{where}: datasource is {p.get('datasource')}, expected the DS_PROMETHEUS variable")
        targets = p.get("targets") or []
        if not targets:
            bad(f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs) or not all(refs):
            bad(f"{where}: refIds {refs} are not unique")
        for t in targets:
            if not str(t.get("expr", "")).strip():
                bad(f"{where}: target {t.get('refId')} has no expr")
            if t.get("datasource", p.get("datasource")) != p.get("datasource"):
                bad(f"{where}: target {t.get('refId')} uses another data source")
    for name, expr in promql_exprs.dashboard_exprs(d):
        undefined = promql_exprs.variables_in(expr) - set(variables) - set(promql_exprs.BUILTINS)
        if undefined:
            bad(f"{name}: undefined variables {sorted(undefined)}")
    return d


def check_provisioning(root: pathlib.Path, problems: list[str]) -> None:
    prov = root / "deploy/grafana/provisioning"
    dash = yaml.safe_load((prov / "dashboards/topotune.yaml").read_text())
    providers = dash.get("providers") or []
    if dash.get("apiVersion") != 1 or not providers or any(
            p.get("type") != "file" or not p.get("options", {}).get("path") for p in providers):
        problems.append("provisioning/dashboards/topotune.yaml: want apiVersion 1 and file providers with options.path")
    ds = yaml.safe_load((prov / "datasources/prometheus.yaml").read_text())
    sources = ds.get("datasources") or []
    if ds.get("apiVersion") != 1 or not any(s.get("type") == "prometheus" and s.get("url") for s in sources):
        problems.append("provisioning/datasources/prometheus.yaml: want apiVersion 1 and a prometheus data source with a url")


def check_promql(root: pathlib.Path, promtool: str, problems: list[str]) -> int:
    """Every expression as a recording rule through `promtool check rules`."""
    exprs = [(n, promql_exprs.substitute(e, {}, default=".+")) for n, e in promql_exprs.all_exprs(root)]
    rules = [{"record": f"check:expr_{i}", "expr": e} for i, (_, e) in enumerate(exprs)]
    with tempfile.TemporaryDirectory() as tmp:
        f = pathlib.Path(tmp) / "exprs.rules.yml"
        f.write_text(yaml.safe_dump({"groups": [{"name": "exprs", "rules": rules}]}))
        r = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"promtool check rules rejects an expression:\n{r.stdout}{r.stderr}")
    return len(exprs)


def check_expected_empty(root: pathlib.Path, problems: list[str]) -> None:
    """tests/monitoring/expected_empty.yml, which the live check reads: YAML,
    every entry naming an expression and giving a reason."""
    path = root / "tests/monitoring/expected_empty.yml"
    try:
        entries = yaml.safe_load(path.read_text()) or []
    except yaml.YAMLError as e:
        problems.append(f"{path.name}: not YAML: {e}")
        return
    names = {n for n, _ in promql_exprs.all_exprs(root)}
    for e in entries:
        if not isinstance(e, dict) or not e.get("name") or not e.get("reason"):
            problems.append(f"{path.name}: entry {e!r} needs a name and a reason")
        elif e["name"] not in names:
            problems.append(f"{path.name}: '{e['name']}' names no expression")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[2])
    ap.add_argument("--promtool", default="promtool")
    args = ap.parse_args()
    problems: list[str] = []
    boards = sorted((args.root / "deploy/grafana/dashboards").glob("*.json"))
    if not boards:
        problems.append("no dashboards in deploy/grafana/dashboards")
    uids, panels = set(), 0
    for path in boards:
        d = check_dashboard(path, problems)
        if d:
            if d.get("uid") in uids:
                problems.append(f"{path.name}: uid {d['uid']} used twice")
            uids.add(d.get("uid"))
            panels += sum(1 for p in promql_exprs.panels_of(d) if p.get("type") != "row")
    check_provisioning(args.root, problems)
    check_expected_empty(args.root, problems)
    n = check_promql(args.root, args.promtool, problems)
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    print(f"{len(boards)} dashboards, {panels} panels, {n} expressions (with the rules): all well formed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
