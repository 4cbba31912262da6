#!/usr/bin/env python3
"""Prints topotune-bench JSON Lines as a table: one row per message size, one
column per label (algorithm), each cell the mean time per call (what
applications pay; the median with --metric median_s) and its ratio to the
fastest label at that size, so that algorithms measured side by side in one
run are compared by ratio rather than by absolute time.

Usage: bench/report.py [--metric mean_s|median_s|fraction_of_bound|bytes_per_s]
                       [--baseline LABEL] [--bound] [--rows size|label] FILE.jsonl...
Lines of different collectives, patterns or process counts go to separate tables.

  --baseline LABEL  the ratio in parentheses is each value over LABEL's value at
                    the same size (e.g. native) instead of over the best of the row
  --bound           adds [bound_s / mean_s] to every cell: the fraction of the
                    physical lower bound reached (1.0 is the limit; '-' without
                    --topology)
  --rows label      one row per label and one column per size (narrower when a
                    collective has many algorithms)

A '!' after a cell marks samples in which the kernel declined in some timed
calls and the MPI library's own collective ran instead (fallbacks > 0).
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


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def fraction_of_bound(o):
    """bound_s over the mean call (the median for samples without a mean)."""
    bound, t = o.get("bound_s"), o.get("mean_s") if number(o.get("mean_s")) else o.get("median_s")
    return bound / t if number(bound) and number(t) else None


def cell_parts(o, metric, reference, is_best, with_bound):
    """One cell as parts that line up across a column: the value, its ratio to
    the reference in parentheses and * when it is the best of its size, then
    [bound_s / mean_s] with --bound; ! on fallbacks."""
    if o is None:
        return ["-"]
    v = o.get(metric)
    parts = ["-"]
    if number(v):
        parts = [human_seconds(v) if metric in ("median_s", "mean_s") else f"{v:.3g}"]
        parts.append((f"({v / reference:.2f})" if number(reference) else "(-)") + ("*" if is_best else ""))
    if with_bound:
        f = fraction_of_bound(o)
        parts.append("[-]" if f is None else f"[{f:.2f}]" if f < 10 else f"[{f:.1f}]" if f < 100 else f"[{f:.0f}]")
    if (o.get("fallbacks") or 0) > 0:
        parts[-1] += "!"
    return parts


def join_column(cells):
    """The cells of one column as strings, each part padded to its widest."""
    n = max(len(c) for c in cells)
    widths = [max((len(c[i]) for c in cells if len(c) > i), default=0) for i in range(n)]
    out = []
    for c in cells:
        if len(c) == 1 and n > 1:  # "-": right-aligned with the values
            out.append(c[0].rjust(sum(widths) + n - 1))
            continue
        text = [c[0].rjust(widths[0])] + [p.ljust(w) for p, w in zip(c[1:], widths[1:])]
        out.append(" ".join(text))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metric", default="mean_s", choices=["mean_s", "median_s", "fraction_of_bound", "bytes_per_s"])
    parser.add_argument("--baseline", metavar="LABEL", help="ratios over LABEL's value at the same size (e.g. native)")
    parser.add_argument("--bound", action="store_true", help="add [bound_s / mean_s] to every cell")
    parser.add_argument("--rows", default="size", choices=["size", "label"], help="what a row is (default: size)")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    higher_is_better = args.metric not in ("mean_s", "median_s")

    tables = collections.defaultdict(lambda: collections.defaultdict(dict))
    for path in args.files:
        try:
            f = open(path)
        except OSError as e:
            sys.exit(f"report.py: {e}")
        with f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                    key = (o["collective"], o.get("pattern", ""), o["nprocs"], o["ranks_per_node"])
                    tables[key][o["msize"]][o["label"]] = o
                except json.JSONDecodeError as e:
                    sys.exit(f"report.py: {path}:{n}: not JSON: {e}")
                except (KeyError, TypeError) as e:
                    sys.exit(f"report.py: {path}:{n}: not a topotune-bench line (missing {e})")

    for (collective, pattern, nprocs, rpn), rows in sorted(tables.items()):
        labels = sorted({label for cells in rows.values() for label in cells})
        if args.baseline in labels:  # the baseline first
            labels.remove(args.baseline)
            labels.insert(0, args.baseline)
        sizes = sorted(rows)
        title = f"{collective}{' ' + pattern if pattern else ''}, {nprocs} ranks, {rpn} per node: {args.metric}"
        print(title)
        if args.baseline:
            missing = "" if args.baseline in labels else f" (no '{args.baseline}' samples here)"
            print(f"  (ratio) is each value over {args.baseline}'s at the same size{missing}; * marks the best")
        else:
            print("  (ratio) is each value over the best of its row; * marks the best")
        if args.bound:
            print("  [fraction] is bound_s / median_s: the fraction of the physical lower bound reached")
        if any((o.get("fallbacks") or 0) > 0 for cells in rows.values() for o in cells.values()):
            print("  ! marks fallbacks: the kernel declined and the MPI library's collective ran instead")

        parts = {}  # (msize, label) -> cell parts
        for msize in sizes:
            cells = rows[msize]
            values = [o.get(args.metric) for o in cells.values() if number(o.get(args.metric))]
            best = (max(values) if higher_is_better else min(values)) if values else None
            if args.baseline:
                base = cells.get(args.baseline)
                reference = base.get(args.metric) if base else None
            else:
                reference = best
            for label in labels:
                o = cells.get(label)
                is_best = o is not None and best is not None and o.get(args.metric) == best
                parts[msize, label] = cell_parts(o, args.metric, reference, is_best, args.bound)
        keys = labels if args.rows == "size" else sizes
        lines = sizes if args.rows == "size" else labels
        at = (lambda line, key: (line, key)) if args.rows == "size" else (lambda line, key: (key, line))
        text = {}
        for key in keys:
            column = join_column([parts[at(line, key)] for line in lines])
            text.update({at(line, key): t for line, t in zip(lines, column)})

        if args.rows == "size":
            out = [["size"] + labels]
            out += [[human_bytes(m)] + [text[m, label] for label in labels] for m in sizes]
        else:
            out = [["algorithm"] + [human_bytes(m) for m in sizes]]
            out += [[label] + [text[m, label] for m in sizes] for label in labels]
        widths = [max(len(r[i]) for r in out) for i in range(len(out[0]))]
        for r in out:
            first = r[0].rjust(widths[0]) if args.rows == "size" else r[0].ljust(widths[0])
            print(("  " + "  ".join([first] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])])).rstrip())
        print()


if __name__ == "__main__":
    main()
