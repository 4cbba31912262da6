#!/usr/bin/env python3
"""Where one host-combined call's time goes, from topotune-bench --phase-trace.

Reads the JSON Lines of --phase-trace (one mark per rank and step, times
relative to each rank's start of the call; bench_kernels/phase_trace.h) and
prints, per (algorithm, block size, call):

  * the steps: copy-in, the host barrier after it, the exchange, the host
    barrier after it, copy-out and the last barrier, as the mean and the
    largest time over the ranks;
  * inside the exchange, per rank: the time its sends took, the time it then
    waited for receives (the receive gate, at its own pace), the time its
    sends were held back after their phase began (paced: waiting for the
    host's previous senders and the receivers' clear to send), and the
    phases it visited;
  * per host: how long two or more of its ranks had sends of different
    phases in flight at once (run-ahead: a later phase on the host's link
    while an earlier one still runs), against the time any send was in
    flight;
  * with --phases, one row per phase: how many ranks sent in it, when the
    first began and the last began, and when the last send and the last
    receive wait ended, so that skew between ranks shows as a growing spread.

Usage: bench/phase_report.py [--phases] TRACE.jsonl [...]
"""
import argparse
import collections
import json
import statistics
import sys


def load(paths):
    calls = collections.OrderedDict()
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    m = json.loads(line)
                    key = (m["algorithm"], m["msize"], m["call"])
                    calls.setdefault(key, collections.defaultdict(list))[m["rank"]].append(
                        (m["event"], m["value"], m["t_s"]))
                except (ValueError, KeyError) as e:
                    sys.exit(f"phase_report.py: {path}:{n}: not a --phase-trace line ({e})")
    return calls


def first(marks, event):
    for e, _, t in marks:
        if e == event:
            return t
    return None


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def overlap_of_phases(sends):
    """Time during which sends of two or more different phases are in flight.

    sends: (begin, end, phase) of one host's ranks."""
    events = []
    for a, b, p in sends:
        if b > a:
            events.append((a, 1, p))
            events.append((b, -1, p))
    events.sort(key=lambda x: (x[0], x[1]))
    live = collections.Counter()
    total, last = 0.0, None
    for t, d, p in events:
        if last is not None and len(live) >= 2:
            total += t - last
        live[p] += d
        if live[p] == 0:
            del live[p]
        last = t
    return total


def ms(x):
    return f"{x * 1e3:9.3f}"


def report(key, ranks, show_phases, out):
    algorithm, msize, call = key
    host = {}
    steps = collections.defaultdict(list)
    send_s, wait_s, held_s, visited = [], [], [], []
    phase_rows = collections.defaultdict(lambda: {"ranks": 0, "begin": [], "sends_done": [], "recvs_done": []})
    host_sends = collections.defaultdict(list)
    ends = []
    for rank, marks in ranks.items():
        host[rank] = next((v for e, v, _ in marks if e == "enter"), -1)
        t = {e: first(marks, e) for e in ("enter", "copied_in", "gathered", "exchanged", "copied_out", "done")}
        last_exchange = max((tm for e, _, tm in marks if e == "recvs_done"), default=t["gathered"])
        pairs = [("copy-in", "enter", "copied_in"), ("barrier 1", "copied_in", "gathered"),
                 ("barrier 2", None, "exchanged"), ("copy-out", "exchanged", "copied_out"),
                 ("barrier 3", "copied_out", "done")]
        for name, a, b in pairs:
            start = last_exchange if a is None else t[a]
            if start is not None and t[b] is not None:
                steps[name].append(t[b] - start)
        if t["gathered"] is not None and last_exchange is not None:
            steps["exchange"].append(last_exchange - t["gathered"])
        ends.append(max(tm for _, _, tm in marks))
        s = w = held = 0.0
        phases = 0
        begun, posted, previous = {}, {}, None
        for e, v, tm in marks:
            if e == "phase_begin":
                phases += 1
                begun[v] = tm
                phase_rows[v]["begin"].append(tm)
            elif e == "sends_posted":
                posted[v] = tm
                held += tm - begun.get(v, tm)
            elif e == "sends_done":
                start = posted.get(v, tm)
                s += tm - start
                if tm > start:
                    phase_rows[v]["ranks"] += 1
                    host_sends[host[rank]].append((start, tm, v))
                phase_rows[v]["sends_done"].append(tm)
            elif e == "recvs_done":
                # At its own pace a rank waits for a phase's receives right
                # after its sends; paced, receives complete on their own.
                if previous is not None and previous[0] == "sends_done" and previous[1] == v:
                    w += tm - previous[2]
                phase_rows[v]["recvs_done"].append(tm)
            previous = (e, v, tm)
        send_s.append(s)
        wait_s.append(w)
        held_s.append(held)
        visited.append(phases)
    total = max(ends) if ends else 0.0
    hosts = len(set(host.values()))
    print(f"== {algorithm}, {msize} B blocks, call {call}: {len(ranks)} ranks on {hosts} hosts, "
          f"{ms(total).strip()} ms (the last rank's last step)", file=out)
    print(f"   {'step':<22}{'mean ms':>10}{'max ms':>10}", file=out)
    for name in ("copy-in", "barrier 1", "exchange", "barrier 2", "copy-out", "barrier 3"):
        v = steps.get(name)
        if v:
            print(f"   {name:<22}{ms(statistics.fmean(v))} {ms(max(v))}", file=out)
    if send_s:
        print(f"   {'exchange: sending':<22}{ms(statistics.fmean(send_s))} {ms(max(send_s))}", file=out)
        print(f"   {'exchange: recv gate':<22}{ms(statistics.fmean(wait_s))} {ms(max(wait_s))}", file=out)
        print(f"   {'exchange: held back':<22}{ms(statistics.fmean(held_s))} {ms(max(held_s))}", file=out)
        print(f"   phases visited per rank: {min(visited)}..{max(visited)}", file=out)
    busy = ahead = 0.0
    for h, sends in host_sends.items():
        busy += union_length([(a, b) for a, b, _ in sends])
        ahead += overlap_of_phases(sends)
    if busy > 0:
        print(f"   host links: sends in flight {ms(busy / hosts).strip()} ms per host on average; "
              f"two or more phases at once {ahead / busy:.1%} of that (run-ahead)", file=out)
    if show_phases:
        print(f"   {'phase':>5} {'ranks':>5} {'1st begin':>10} {'last begin':>10} {'last sent':>10} "
              f"{'last recvd':>10}", file=out)
        top = lambda v, f: ms(f(v)) if v else f"{'-':>9}"
        for p in sorted(phase_rows):
            r = phase_rows[p]
            print(f"   {p:>5} {r['ranks']:>5} {top(r['begin'], min)} {top(r['begin'], max)} "
                  f"{top(r['sends_done'], max)} {top(r['recvs_done'], max)}", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", action="store_true", help="one row per phase")
    parser.add_argument("traces", nargs="+", metavar="TRACE.jsonl")
    args = parser.parse_args()
    calls = load(args.traces)
    if not calls:
        sys.exit("phase_report.py: no marks (did the kernel run, and not fall back?)")
    for key, ranks in calls.items():
        report(key, ranks, args.phases, sys.stdout)


if __name__ == "__main__":
    main()
