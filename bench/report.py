#!/usr/bin/env python3
"""Prints topotune-bench JSON Lines as a table: one row per message size, one
column per label (algorithm), each cell the median time and its ratio to the
fastest label at that size, so that algorithms measured side by side in one
run are compared by ratio rather than by absolute time.

Usage: bench/report.py [--metric median_s|fraction_of_bound|bytes_per_s] FILE.jsonl...
Lines of different collectives, patterns or process counts go to separate tables.
"""
import argparse
import collections
import json
import sys


def human_bytes(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def human_seconds(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g}{unit}"
    return f"{s * 1e9:.3g}ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metric", default="median_s", choices=["median_s", "fraction_of_bound", "bytes_per_s"])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    higher_is_better = args.metric != "median_s"

    tables = collections.defaultdict(lambda: collections.defaultdict(dict))
    for path in args.files:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"report.py: {path}:{n}: not JSON: {e}")
                key = (o["collective"], o.get("pattern", ""), o["nprocs"], o["ranks_per_node"])
                tables[key][o["msize"]][o["label"]] = o.get(args.metric)

    for (collective, pattern, nprocs, rpn), rows in sorted(tables.items()):
        labels = sorted({label for cells in rows.values() for label in cells})
        title = f"{collective}{' ' + pattern if pattern else ''}, {nprocs} ranks, {rpn} per node: {args.metric}"
        print(title)
        print("  (ratio) is each value over the best of its row; * marks the best")
        header = ["size"] + labels
        out = [header]
        for msize in sorted(rows):
            cells = rows[msize]
            values = [v for v in cells.values() if isinstance(v, (int, float)) and v > 0]
            best = (max(values) if higher_is_better else min(values)) if values else None
            row = [human_bytes(msize)]
            for label in labels:
                v = cells.get(label)
                if not isinstance(v, (int, float)) or v <= 0 or best is None:
                    row.append("-")
                    continue
                text = human_seconds(v) if args.metric == "median_s" else f"{v:.3g}"
                row.append(f"{text} ({v / best:.2f}){'*' if v == best else ''}")
            out.append(row)
        widths = [max(len(r[i]) for r in out) for i in range(len(header))]
        for r in out:
            print("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
        print()


if __name__ == "__main__":
    main()
