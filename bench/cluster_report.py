#!/usr/bin/env python3
"""The Python half of bench/cluster.sh: the tables, the targets check and the
plots of a cluster benchmark's results, plus the helpers the script needs.

  cluster_report.py report [--topotune PATH] DIR
      Reads DIR/TOPOLOGY/*.jsonl (topotune-bench JSON Lines), the library's
      statistics DIR/TOPOLOGY/stats-RUN.json, the counters
      DIR/TOPOLOGY/counters.txt and the decisions DIR/TOPOLOGY/decisions.json,
      and writes DIR/tables.txt, DIR/targets.txt (both also printed) and
      DIR/TOPOLOGY.png (gnuplot; its script and data in DIR/TOPOLOGY/plot/).
      The ratios of tuned to default and their 95 % intervals come from
      `topotune compare --format json` (--topotune, default $BUILD/daemon/cli/
      topotune with BUILD defaulting to build/ in the source tree, else
      topotune on PATH).
  cluster_report.py topology --prefix P IN.yaml OUT.yaml
      Copies a topology file with every node name prefixed, as the testbed
      names its namespaces and hosts (and topotuned its nodes).
  cluster_report.py estimate [OPTIONS] TOPOLOGY.yaml...
      Prints how long bench/cluster.sh will take, from the physical bounds
      (topotune bound) of each topology.
  cluster_report.py tune-iterations [OPTIONS] TOPOLOGY.yaml
      Prints, per size, the timed calls per tuning point: the most asked for
      that keep a point and a job within topotuned's tuning timeouts.

Tables: per topology and run (collective, alltoallv pattern), one row per
message size and, for each label, the mean time per call, (its ratio to
ompi:default's) and [bound_s / mean_s], the fraction of the physical lower
bound reached; '!' marks samples in which a kernel declined and Open MPI's
collective ran. "tuned ran" is the algorithm libtopotune-mpi.so ran at that
size (its TOPOTUNE_STATS_FILE, warm-up calls included). "TCP" sums the run's
counters over the hosts: retransmitted segments, retransmission timeouts
(RTOs; Linux's minimum RTO is 200 ms, a long stall for a call of a few ms)
and packets dropped by the tc tbf queues (whose limit is 20 ms of traffic).

Targets (the issue's): on every multi-switch topology tuned alltoall reaches
>= 0.85 of the bound and is >= 1.3x faster than ompi:default at 64 KiB and
above; the tuned choice is never more than 5 % slower than ompi:default at
any size; tuned allgather reaches >= 0.85 of its bound at 256 KiB and above.
Each point is printed with its figures and PASS or MISS, and with what helps
explain a miss: the best label at that size, the tuned call's fastest
iteration as a fraction of the bound (the schedule's own limit, without the
stalls), its p95, and the run's RTOs.

The speedup and regret targets are judged on the ratio of mean times per
call and its 95 % bootstrap interval (topotune compare over every timed call,
times_s): the speedup target passes when the whole interval of
default/tuned is at or above 1.3, the regret target when the interval of
tuned/default ends at or below 1.05. Where the library ran native, the same
algorithm as ompi:default, the ratio is an A/A check that must show no
difference (its interval includes 1); a difference there is noise, never a
speedup. Results without times_s (older runs) get "no per-call times:
re-run bench/cluster.sh" for those targets instead of a verdict.
"""
import argparse
import collections
import glob
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report as jsonl_report  # noqa: E402  bench/report.py: cell formatting

DEFAULT = "ompi:default"
TUNED = "topotune:tuned"
KIB = 1024
SPEEDUP_TARGET = 1.3  # default/tuned at >= 64 KiB, the whole interval
REGRET_TARGET = 1.05  # tuned/default, the interval's upper end
NO_TIMES = "no per-call times: re-run bench/cluster.sh"
TABLE_WIDTH = 150  # characters; wider tables are split into blocks of labels

try:
    import yaml
except ImportError:  # Debian: python3-yaml
    yaml = None


def die(message):
    sys.exit(f"cluster_report.py: {message}")


# --- topology ---------------------------------------------------------------


def load_yaml(path):
    if yaml is None:
        die("python3-yaml is missing (Debian package python3-yaml)")
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        die(f"{path}: {e}")


def cmd_topology(args):
    """The file with every switch and host name prefixed: the testbed's
    namespaces, hostnames and topotuned's discovered nodes carry the prefix,
    and topotune-bench's --topology must name the same hosts."""
    d = load_yaml(args.input)
    p = args.prefix

    def node(n):
        if isinstance(n, dict):
            n = dict(n)
            n["name"] = p + str(n["name"])
            return n
        return p + str(n)

    for section in ("switches", "hosts"):
        d[section] = [node(n) for n in d.get(section) or []]
    links = []
    for link in d.get("links") or []:
        if isinstance(link, dict):
            link = dict(link)
            link["a"], link["b"] = p + str(link["a"]), p + str(link["b"])
        else:
            link = [p + str(link[0]), p + str(link[1])] + list(link[2:])
        links.append(link)
    d["links"] = links
    with open(args.output, "w") as f:
        f.write(f"# {os.path.basename(args.input)} with the testbed's names (prefix {p}), "
                "written by bench/cluster_report.py topology.\n")
        yaml.safe_dump(d, f, sort_keys=False, default_flow_style=None)


def host_count(topo):
    total = 0
    for h in topo.get("hosts") or []:
        total += int(h.get("slots", 1)) if isinstance(h, dict) else 1
    return total


def switch_names(topo):
    return {(s["name"] if isinstance(s, dict) else str(s)) for s in topo.get("switches") or []}


# --- estimate ---------------------------------------------------------------

# Seconds per call ~ bound / EFFICIENCY + SYNC_PER_RANK x ranks; the
# alltoallv patterns' bounds relative to the uniform one (skewed: heavy
# pairs meet on the busiest link). Measured on this machine's testbed;
# only an estimate.
EFFICIENCY = 0.6
SYNC_PER_RANK = 0.0015
PATTERN_FACTOR = {"uniform": 1.0, "skewed": 1.5, "random": 1.2, "sparse": 1.0}
JOB_START_S = 4.0  # mpirun with 8-16 ranks over the rsh agent, MPI_Init
TESTBED_S = 25.0  # up, placement check, down


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B?|[kMG]B|B)?\s*", text)
    if not m:
        die(f"'{text}' is not a size (e.g. 64KiB)")
    v, unit = float(m.group(1)), (m.group(2) or "B")
    scale = {"B": 1, "K": 1024, "KiB": 1024, "KB": 1024, "kB": 1000, "M": 1 << 20, "MiB": 1 << 20, "MB": 10**6,
             "G": 1 << 30, "GiB": 1 << 30, "GB": 10**9}
    if unit not in scale:
        die(f"'{text}': unknown unit '{unit}'")
    return int(v * scale[unit])


def bounds_at_1mib(topotune, path):
    """(all-to-all, allgather) lower bounds in seconds for 1 MiB blocks."""
    try:
        text = subprocess.run([topotune, "bound", "--topology", path, "--msize", "1MiB", "--json"], check=True,
                              capture_output=True, text=True).stdout
        b = json.loads(text)
        return float(b["alltoall"]["seconds"]), float(b["allgather"]["seconds"])
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        die(f"topotune bound --topology {path} --json: {e}")


# Tuning jobs run interleaved rounds (every kernel once per round) at one
# size: the first `iterations` rounds, then more until the stopping rule holds
# or tuning.size_budget (wall time) runs out. The agent's watchdog is armed
# for the warm-up (2 calls of every kernel) and for each round, each of which
# must end within tuning.point_timeout whatever the number of rounds; the job
# (warm-up, the rounds and the budget's extra rounds) must end within
# tuning.job_timeout. A round is kernels x a call, the slow kernels, bruck and
# hypercube at about 2.5 x the bound, weighing in at SLOW_FACTOR.
SLOW_FACTOR = 3.0
TIMEOUT_SHARE = 0.8
MIN_TUNE_ITERATIONS = 8  # fewer: the tuner's permutation test can never confirm a kernel beats native


def tune_iterations(max_iterations, kernels, np_, a2a_1mib, size, point_timeout, job_timeout, size_budget=30.0):
    """Rounds (timed calls per kernel) of a tuning job at `size` before
    adaptive sampling, and whether its warm-up fits within point_timeout: at
    most max_iterations, fewer where the job would outlast job_timeout, never
    fewer than MIN_TUNE_ITERATIONS."""
    bound = a2a_1mib * size / (1 << 20)
    typical = bound / EFFICIENCY + SYNC_PER_RANK * np_
    round_s = kernels * (typical + (SLOW_FACTOR - 1) * bound * 2 / max(kernels, 1))  # two slow kernels per round
    by_job = int((TIMEOUT_SHARE * job_timeout - size_budget) / round_s) - 2
    return max(MIN_TUNE_ITERATIONS, min(max_iterations, by_job)), 2 * round_s <= TIMEOUT_SHARE * point_timeout


def duration_s(text, default):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*", str(text))
    if not m:
        return default
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]


def cmd_tune_iterations(args):
    conf = load_yaml(args.config) if args.config else {}
    tuning = (conf or {}).get("tuning") or {}
    point_timeout = duration_s(tuning.get("point_timeout", "300s"), 300)
    job_timeout = duration_s(tuning.get("job_timeout", "1800s"), 1800)
    size_budget = duration_s(tuning.get("size_budget", "30s"), 30)
    np_ = host_count(load_yaml(args.topology))
    a2a, _ = bounds_at_1mib(args.topotune, args.topology)
    for text in args.sizes.split(","):
        n, fits = tune_iterations(args.max, args.kernels, np_, a2a, parse_size(text), point_timeout, job_timeout,
                                  size_budget)
        if not fits:
            print(f"cluster_report.py: warning: at {text} the warm-up of every kernel may outlast tuning.point_timeout "
                  f"({point_timeout:g} s)", file=sys.stderr)
        print(text, n)


def cmd_estimate(args):
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    runs = []
    for r in args.run:
        spec, kernels, ompi = r.rsplit(":", 2)
        runs.append((spec.split(" ")[0], spec.split(" ")[1] if " " in spec else "uniform", int(kernels), int(ompi)))
    total = 0.0
    parts = []
    for path in args.topologies:
        np_ = host_count(load_yaml(path))
        a2a, ag = bounds_at_1mib(args.topotune, path)

        def call_s(collective, pattern, size):
            bound = (ag if collective == "allgather" else a2a * PATTERN_FACTOR.get(pattern, 1.0)) * size / (1 << 20)
            return bound / EFFICIENCY + SYNC_PER_RANK * np_

        t = TESTBED_S
        tuned = set()
        max_kernels = max((k for _, _, k, _ in runs), default=1)
        for collective, pattern, kernels, ompi in runs:
            per_call = sum(call_s(collective, pattern, s) for s in sizes)
            t += (kernels + 1) * (args.warmup + args.iterations) * per_call + JOB_START_S
            t += ompi * ((args.warmup + args.iterations) * per_call + JOB_START_S)
            if args.tune_iterations > 0 and (collective, pattern) not in tuned and pattern != "random":
                tuned.add((collective, pattern))  # alltoallv: one tuning run per pattern class
                for s in sizes:
                    n, _ = tune_iterations(args.tune_iterations, max_kernels, np_, a2a, s, args.point_timeout,
                                           args.job_timeout)
                    # The rounds, then adaptive sampling: up to the size budget where undecided.
                    t += kernels * (2 + n) * call_s(collective, pattern, s) + JOB_START_S + args.size_budget / 2
        parts.append(f"{os.path.basename(path)[:-5]} {t / 60:.0f} min")
        total += t
    total_text = f"{total / 3600:.1f} h" if total >= 3600 else f"{total / 60:.0f} min"
    print(f"estimate: about {total_text}: " + ", ".join(parts))


# --- loading results ----------------------------------------------------------


TAG_ORDER = ("alltoall", "alltoallv-uniform", "alltoallv-skewed", "alltoallv-sparse", "alltoallv-random",
             "allgather")


def ordered_tags(topo):
    """The runs of a topology in TAG_ORDER, then any others by name."""
    return [t for t in TAG_ORDER if t in topo.samples] + sorted(set(topo.samples) - set(TAG_ORDER))


def run_tag(collective, pattern):
    return f"{collective}-{pattern}" if pattern else collective


class Topology:
    """One topology's results."""

    def __init__(self, name, path):
        self.name, self.path = name, path
        self.samples = collections.defaultdict(lambda: collections.defaultdict(dict))  # tag -> msize -> label -> o
        self.labels = collections.defaultdict(list)  # tag -> labels in order of appearance
        self.nprocs = {}
        self.ran = {}  # tag -> msize -> text
        self.tcp = {}  # run -> Counter: RetransSegs, OutSegs, TCPTimeouts, ..., drops, isl_drops
        self.cpu = {}  # run -> (busy share, softirq share) of the machine
        self.calibration = {}  # "ring", "ring-all" or "pair" -> sample
        self.decisions = {}  # run tag (alltoallv: per pattern class) -> [(min_msize, algorithm)]
        self.switches = 0
        self.files = collections.defaultdict(list)  # tag -> files with ompi:default or topotune:tuned samples
        self.untimed = collections.defaultdict(set)  # tag -> sizes where one of the two lacks times_s
        self.intervals = {}  # tag -> msize -> a `topotune compare --format json` row
        self.compare_error = {}  # tag -> why there are no intervals
        self.load()

    def load(self):
        topo_file = os.path.join(self.path, "topology.yaml")
        if os.path.exists(topo_file):
            self.switches = len(switch_names(load_yaml(topo_file)))
        # The main run (tuned, kernels, default) first, then the forced ones.
        files = sorted((p for p in glob.glob(os.path.join(self.path, "*.jsonl"))
                        if not os.path.basename(p).startswith("calibration")), key=lambda p: (".ompi-" in p, p))
        for kind in ("ring", "ring-all", "pair"):
            try:
                with open(os.path.join(self.path, f"calibration-{kind}.jsonl")) as f:
                    self.calibration[kind] = json.loads(f.readline())
            except (OSError, json.JSONDecodeError):
                pass
        for path in files:
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        o = json.loads(line)
                        tag = run_tag(o["collective"], o.get("pattern", ""))
                        label = o["label"]
                        self.samples[tag][o["msize"]][label] = o
                        self.nprocs[tag] = o["nprocs"]
                    except (json.JSONDecodeError, KeyError, TypeError) as e:
                        die(f"{path}:{n}: not a topotune-bench line ({e})")
                    if label not in self.labels[tag]:
                        self.labels[tag].append(label)
                    if label in (DEFAULT, TUNED):
                        if path not in self.files[tag]:
                            self.files[tag].append(path)
                        if not isinstance(o.get("times_s"), list) or not o["times_s"]:
                            self.untimed[tag].add(o["msize"])
        for tag in self.samples:
            self.ran[tag] = self.library_choices(tag)
        self.load_counters()
        self.load_decisions()

    def compare(self, topotune):
        """Fills self.intervals: per run, `topotune compare` of topotune:tuned
        against ompi:default over their times_s, with the library's
        statistics (so that points where it ran native are same-algorithm
        checks). A run without times_s, or a failed compare, gets its reason
        in self.compare_error instead."""
        for tag, files in self.files.items():
            labels = {label for m in self.samples[tag] for label in self.samples[tag][m]}
            if DEFAULT not in labels or TUNED not in labels:
                continue
            if self.untimed[tag]:
                self.compare_error[tag] = NO_TIMES
                continue
            if not topotune:
                self.compare_error[tag] = "no topotune binary to compute intervals (build it, or pass --topotune)"
                continue
            cmd = [topotune, "compare", "--format", "json", "--baseline", DEFAULT, "--candidate", TUNED]
            stats = os.path.join(self.path, f"stats-{tag}.json")
            try:
                with open(stats) as f:
                    if isinstance(json.load(f).get("stats"), list):
                        cmd += ["--stats", stats]
            except (OSError, json.JSONDecodeError, AttributeError):
                pass  # No statistics: no same-algorithm points (the tables say why).
            try:
                r = subprocess.run(cmd + files, capture_output=True, text=True)
            except OSError as e:
                self.compare_error[tag] = f"{topotune}: {e}"
                continue
            if r.returncode != 0:
                self.compare_error[tag] = f"topotune compare failed: {r.stderr.strip() or r.returncode}"
                continue
            pattern = tag.partition("-")[2] or None
            rows = {}
            try:
                for line in r.stdout.splitlines():
                    row = json.loads(line)
                    if row.get("pattern") == pattern:
                        rows[row["msize"]] = row
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                self.compare_error[tag] = f"topotune compare printed something else than JSON rows: {e}"
                continue
            self.intervals[tag] = rows

    def interval(self, tag, m):
        """(row, None) with the compare row at this point, or (None, why not)."""
        if tag in self.compare_error:
            return None, self.compare_error[tag]
        row = self.intervals.get(tag, {}).get(m)
        return (row, None) if row else (None, "not compared (no samples of both sides at this size)")

    def ring_ceiling(self):
        """The ring calibration's fraction of the bound (None if not measured):
        what the emulated links carried with one TCP flow per direction."""
        return fraction(self.calibration.get("ring"))

    def library_choices(self, tag):
        """msize -> what libtopotune-mpi.so ran, from its statistics file:
        entries are (collective, algorithm, msize as it computes it); for
        alltoallv that is the mean of the off-diagonal blocks, so each entry
        goes to the nearest measured size."""
        path = os.path.join(self.path, f"stats-{tag}.json")
        if not os.path.exists(path):
            return {}
        try:
            with open(path) as f:
                stats = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            return {m: f"(stats: {e})" for m in self.samples[tag]}
        sizes = sorted(self.samples[tag])
        if stats.get("plan", {}).get("status") != "ok":
            reason = stats.get("plan", {}).get("reason", "?")
            return {m: f"no plan: {reason}" for m in sizes}
        per = collections.defaultdict(collections.Counter)
        fell = collections.Counter()
        collective = tag.split("-")[0]
        for s in stats.get("stats", []):
            if s.get("collective") != collective or not sizes:
                continue
            m = s["msize"]
            nearest = min(sizes, key=lambda x: abs(math.log((x + 1) / (m + 1))))
            per[nearest][s["algorithm"]] += s["calls"]
            fell[nearest] += s.get("fallbacks", 0)
        out = {}
        for m in sizes:
            if not per[m]:
                out[m] = "-"
                continue
            text = "+".join(a if len(per[m]) == 1 else f"{a}x{c}" for a, c in per[m].most_common())
            if fell[m]:
                text += f" ({fell[m]} fell back)"
            out[m] = text
        return out

    def load_counters(self):
        path = os.path.join(self.path, "counters.txt")
        if not os.path.exists(path):
            return
        ports = {}  # (namespace, dev) -> peer, from testbed.json
        try:
            with open(os.path.join(self.path, "testbed.json")) as f:
                d = json.load(f)
            hosts = {h["namespace"] for h in d.get("hosts", {}).values()}
            for sw in d.get("switches", {}).values():
                for dev, p in sw.get("ports", {}).items():
                    ports[sw["namespace"], dev] = p.get("peer", "")
            switch_peers = {sw_name for sw_name in d.get("switches", {})}
        except (OSError, json.JSONDecodeError, KeyError, AttributeError):
            hosts, switch_peers = set(), set()
        values = collections.defaultdict(dict)  # (run, when) -> (ns, key) -> value
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 5 and parts[4].isdigit():
                    values[parts[0], parts[1]][parts[2], parts[3]] = int(parts[4])
        for run in {r for r, _ in values}:
            before, after = values.get((run, "before"), {}), values.get((run, "after"), {})
            delta = collections.Counter()
            for key, v in after.items():
                ns, name = key
                d_ = v - before.get(key, 0)
                if ns == "machine":
                    continue
                if name.startswith("drops:"):
                    delta["drops"] += d_
                    if ports.get((ns, name[6:]), "") in switch_peers:
                        delta["isl_drops"] += d_
                elif ns in hosts or not hosts:
                    delta[name] += d_
            self.tcp[run] = delta
            cpu = {k: after.get(("machine", k), 0) - before.get(("machine", k), 0)
                   for k in ("cpu_total", "cpu_idle", "cpu_softirq")}
            if cpu["cpu_total"] > 0:
                self.cpu[run] = (1 - cpu["cpu_idle"] / cpu["cpu_total"], cpu["cpu_softirq"] / cpu["cpu_total"])

    def load_decisions(self):
        path = os.path.join(self.path, "decisions.json")
        try:
            with open(path) as f:
                d = json.load(f)
        except (OSError, json.JSONDecodeError):
            return
        for dec in d.get("decisions", []):
            c = dec.get("collective", "").replace("COLLECTIVE_", "").lower()
            pattern = dec.get("pattern", "").replace("ALLTOALLV_PATTERN_", "").lower()
            if pattern == "unspecified":  # every collective but alltoallv
                pattern = ""
            ranges = dec.get("table", {}).get("ranges", [])
            self.decisions[run_tag(c, pattern)] = [(int(r.get("min_msize", 0)), r.get("algorithm", "?"))
                                                   for r in ranges]

    def tcp_text(self, run):
        t = self.tcp.get(run)
        if t is None:
            return "no counters"
        share = f" ({100 * t['RetransSegs'] / t['OutSegs']:.2f} % of segments)" if t.get("OutSegs") else ""
        cpu = self.cpu.get(run)
        cpu_text = f"; CPU {100 * cpu[0]:.0f} % busy ({100 * cpu[1]:.0f} % softirq)" if cpu else ""
        return (f"over the run: {t.get('RetransSegs', 0)} TCP segments retransmitted{share}, "
                f"{t.get('TCPTimeouts', 0)} RTOs, {t.get('drops', 0)} packets dropped by tbf "
                f"({t.get('isl_drops', 0)} on inter-switch links){cpu_text}")

    def calibration_lines(self):
        what = {"ring": "ring of 3 hosts (allgather ring: one TCP flow per link direction, each on its own "
                        "connection; what TCP over the emulated links reaches now)",
                "ring-all": "ring of every rank (allgather ring over the job's placement: one TCP flow per host "
                            "link direction, with as many MPI processes sharing this machine's cores as the "
                            "measured runs)",
                "pair": "pair exchange between the first and the last host (alltoall: both directions on one "
                        "TCP connection)"}
        out = []
        for kind, text in what.items():
            c = self.calibration.get(kind)
            if c is None:
                out.append(f"calibration, {text}: not measured")
                continue
            limit = ""
            n, per_host = c.get("nprocs", 0), c.get("ranks_per_node", 1)
            if kind == "ring-all" and n > 1 and per_host > 1:
                # A host's last rank sends all n - 1 blocks across its link, the bound counts n - per_host.
                limit = f", at most {(n - per_host) / (n - 1):.2f} for a ring of ranks"
            out.append(f"calibration, {text}, 1MiB: {fmt_fraction(fraction(c))} of the bound{limit} (best iteration "
                       f"{fmt_fraction(fraction(c, 'min_s'))}); {self.tcp_text('calibration-' + kind)}")
        return out


def load_results(directory):
    topos = []
    for path in sorted(glob.glob(os.path.join(directory, "*", ""))):
        if glob.glob(os.path.join(path, "*.jsonl")):
            topos.append(Topology(os.path.basename(os.path.dirname(path)), path))
    # Keep cluster.sh's order (meta.txt lists the files) when there is one.
    order = []
    try:
        with open(os.path.join(directory, "meta.txt")) as f:
            for line in f:
                if line.startswith("topologies:"):
                    order = [os.path.basename(p)[:-5] for p in line.split(":", 1)[1].split()]
    except OSError:
        pass
    topos.sort(key=lambda t: order.index(t.name) if t.name in order else len(order))
    return topos


def ordered_labels(labels):
    """ompi:default, topotune:tuned, the forced Open MPI algorithms, then the
    kernels in registry order."""
    head = [x for x in (DEFAULT, TUNED) if x in labels]
    forced = sorted(x for x in labels if x.startswith("ompi:") and x != DEFAULT)
    rest = [x for x in labels if x not in head and x not in forced]
    return head + forced + rest


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def time_key(cells):
    """The time a size's cells are compared on: the mean call (what applications pay); samples
    recorded before the mean was have only the median."""
    return "mean_s" if all(number(o.get("mean_s")) for o in cells.values()) else "median_s"


def fraction(o, key="median_s"):
    if o is None or not number(o.get("bound_s")) or not number(o.get(key)):
        return None
    return o["bound_s"] / o[key]


# --- tables -----------------------------------------------------------------


def human_bytes(n):
    return jsonl_report.human_bytes(n)


def decision_text(topo, tag):
    if tag == "alltoallv-random":
        return "the library gives each call the class of its counts (uniform, skewed or sparse)"
    ranges = topo.decisions.get(tag)
    if not ranges:
        return "none (native for every size)"
    return ", ".join(f"{human_bytes(m)}+ {a}" for m, a in ranges)


def planned(topo, tag, m):
    """The algorithm the tuned plan names at block size m, or None without a plan."""
    ranges = topo.decisions.get(tag)
    if not ranges:
        return None
    return max((r for r in ranges if r[0] <= m), key=lambda r: r[0], default=("", "native"))[1]


def table(topo, tag):
    rows = topo.samples[tag]
    sizes = sorted(rows)
    labels = ordered_labels(topo.labels[tag])
    collective, _, pattern = tag.partition("-")
    lines = [f"== {topo.name}: {collective}{' ' + pattern if pattern else ''}, {topo.nprocs[tag]} ranks",
             f"   tuned plan ({tag.replace('-', ' ')}): {decision_text(topo, tag)}",
             f"   {topo.tcp_text(tag)}",
             "   cell: mean time per call (ratio to ompi:default) [fraction of bound]; * best of the row; "
             "! fallbacks"]
    parts = {}
    for m in sizes:
        cells = rows[m]
        key = time_key(cells)
        values = [o[key] for o in cells.values() if number(o.get(key))]
        best = min(values) if values else None
        ref = cells.get(DEFAULT, {}).get(key)
        for label in labels:
            o = cells.get(label)
            is_best = o is not None and best is not None and o.get(key) == best
            parts[m, label] = jsonl_report.cell_parts(o, key, ref, is_best, True)
    text = {}
    for label in labels:
        for m, t in zip(sizes, jsonl_report.join_column([parts[m, label] for m in sizes])):
            text[m, label] = t
    fixed = [["size"] + [human_bytes(m) for m in sizes],
             ["bound"] + [jsonl_report.human_seconds(next((o["bound_s"] for o in rows[m].values()
                                                              if number(o.get("bound_s"))), 0) or 0) for m in sizes],
             ["tuned ran"] + [topo.ran.get(tag, {}).get(m, "-") for m in sizes]]
    columns = [[label] + [text[m, label] for m in sizes] for label in labels]
    # Split the label columns into blocks that fit TABLE_WIDTH.
    fixed_width = sum(max(len(c) for c in col) + 2 for col in fixed)
    blocks, block, width = [], [], fixed_width
    for col in columns:
        w = max(len(c) for c in col) + 2
        if block and width + w > TABLE_WIDTH:
            blocks.append(block)
            block, width = [], fixed_width
        block.append(col)
        width += w
    if block:
        blocks.append(block)
    for i, block in enumerate(blocks):
        cols = fixed + block
        widths = [max(len(c) for c in col) for col in cols]
        if len(blocks) > 1:
            lines.append(f"   ({i + 1}/{len(blocks)})")
        for r in range(len(sizes) + 1):
            cells = [cols[0][r].rjust(widths[0]), cols[1][r].rjust(widths[1]), cols[2][r].ljust(widths[2])]
            cells += [col[r].rjust(w) for col, w in zip(cols[3:], widths[3:])]
            lines.append(("   " + "  ".join(cells)).rstrip())
    return lines + tcp_lines(topo, tag, sizes, labels)


def tcp_lines(topo, tag, sizes, labels):
    """Per algorithm, the TCP retransmission timeouts (and retransmitted
    segments) of its own timed calls, from topotune-bench --tcp-counters."""
    rows = topo.samples[tag]
    counted = [label for label in labels if any("tcp_timeouts" in rows[m].get(label, {}) for m in sizes)]
    if not counted:
        return []
    lines = ["   TCP per algorithm over its timed calls: retransmission timeouts (retransmitted segments)"]
    width = max(len(label) for label in counted)
    for label in counted:
        cells = []
        for m in sizes:
            o = rows[m].get(label, {})
            cells.append(f"{human_bytes(m)} {o['tcp_timeouts']} ({o.get('tcp_retrans_segs', '-')}) in "
                         f"{o.get('iterations', '-')} calls" if "tcp_timeouts" in o else f"{human_bytes(m)} -")
        lines.append(f"   {label.ljust(width)}  " + "; ".join(cells))
    return lines


# --- targets ----------------------------------------------------------------


def fmt_fraction(f):
    return "-" if f is None else f"{f:.2f}"


def ceiling_text(topo, f):
    """The fraction `f` against what the emulated links carried in this run's
    ring calibration (one TCP flow per link direction, no contention): the
    part of a miss that the emulator, not the algorithm, accounts for."""
    c = topo.ring_ceiling()
    if f is None or not c:
        return ""
    return f"1MiB ring calibration {c:.2f}, so {f / c:.2f} of what the emulated links carried"


def interval_text(r, lo, hi, digits=2):
    return f"{r:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def tuned_over_default(row):
    """tuned/default from a compare row (whose ratio is default/tuned): the
    estimate and the interval's ends, inverted (a percentile interval
    inverts end for end)."""
    def inv(x):
        return 1 / x if x > 0 else math.inf

    return inv(row["ratio"]), inv(row["ratio_hi"]), inv(row["ratio_lo"])


def targets(topos):
    lines = ["targets (the issue's): each measured point with its figure, PASS or MISS ('-': not judged);",
             "  speedup and tuned/default: ratios of the mean call with their 95 % bootstrap intervals",
             "  (topotune compare over every timed call); where the library ran native, the algorithm of",
             "  ompi:default, the ratio is an A/A check: noise, never a speedup;",
             "  why columns: best = the fastest label at that size and its fraction of the bound;",
             "  iterations = the tuned call's fastest and 95th-percentile iterations as fractions of the bound",
             "  (the best near the target while the median is not: stalls, e.g. TCP RTOs, not the schedule);",
             "  ran = the algorithm libtopotune-mpi.so ran", ""]
    summary = []

    def point(topo, tag, m, what, value, ok, extra=""):
        """One point's line and verdict: ok True (PASS), False (MISS) or None (not judged)."""
        o = topo.samples[tag][m].get(TUNED)
        cells = topo.samples[tag][m]
        key = time_key(cells)
        best_label = min((x for x in cells if number(cells[x].get(key))), key=lambda x: cells[x][key], default=None)
        best = f"best {best_label} {fmt_fraction(fraction(cells.get(best_label)))}" if best_label else ""
        ran = topo.ran.get(tag, {}).get(m, "-")
        plan = planned(topo, tag, m)
        most = re.match(r"([a-z0-9_]+?)(x\d+)?(\+|$)", ran)  # The algorithm of most calls ("ringx21+nativex1").
        differs = plan is not None and most is not None and most.group(1) != plan
        why = (f"iterations: best {fmt_fraction(fraction(o, 'min_s'))}, p95 {fmt_fraction(fraction(o, 'p95_s'))}; {best}; "
               f"ran {ran}{f', the plan says {plan}' if differs else ''}")
        verdict = "-   " if ok is None else "PASS" if ok else "MISS"
        figure = f"{what} {value}"
        return (f"  {topo.name:<22} {tag:<18} {human_bytes(m):>6}  {figure:<36} {verdict}"
                f"  ({why}{'; ' + extra if extra else ''})"), ok

    def section(title, entries):
        lines.append(title)
        if not entries:
            lines.append("  not measured (no such topology, collective or size in these results)")
            summary.append((title, None))
        else:
            for text, _ in entries:
                lines.append(text)
            judged = [ok for _, ok in entries if ok is not None]
            passed = sum(judged)
            unjudged = len(entries) - len(judged)
            if unjudged:
                lines.append(f"  -> {passed} of {len(judged)} judged points PASS; {unjudged} not judged")
            else:
                lines.append(f"  -> {passed} of {len(entries)} points PASS")
            summary.append((title, False if passed < len(judged) else None if unjudged else True))
        lines.append("")

    multi = [t for t in topos if t.switches > 1]
    t1, t2, t3, t4, aa = [], [], [], [], []
    t3_missed_native = 0  # Target 3's MISSes where the library ran native.
    # Target 3's decidable points: the interval lies wholly on one side of
    # REGRET_TARGET, so the measurement tells a pass (hi <= 1.05) from a real
    # regression (lo > 1.05); the others only say that 20 calls cannot tell.
    t3_decidable = t3_regressions = 0
    for topo in multi:
        for m in sorted(topo.samples.get("alltoall", {})):
            cells = topo.samples["alltoall"][m]
            o, d = cells.get(TUNED), cells.get(DEFAULT)
            if m < 64 * KIB or o is None:
                continue
            f = fraction(o)
            t1.append(point(topo, "alltoall", m, "fraction", fmt_fraction(f), f is not None and f >= 0.85,
                            ceiling_text(topo, f)))
            if d is None:
                continue
            row, why_not = topo.interval("alltoall", m)
            if row is None:
                t2.append(point(topo, "alltoall", m, "speedup", "-", None, why_not))
                continue
            text = interval_text(row["ratio"], row["ratio_lo"], row["ratio_hi"])
            if row["same_algorithm"]:
                # Both sides ran Open MPI's collective: no speedup to claim.
                t2.append(point(topo, "alltoall", m, "ratio", text, False,
                                "same algorithm: the library ran native, as ompi:default does; "
                                + ("the interval excludes 1: noise" if row["differs"] else "no difference")))
                continue
            extra = (f"means: default {jsonl_report.human_seconds(row['baseline']['mean_s'])}, "
                     f"tuned {jsonl_report.human_seconds(row['candidate']['mean_s'])}")
            needed, c = row["baseline"].get("fraction_of_bound"), topo.ring_ceiling()
            if number(needed) and c:
                # 1.3x the default's fraction of the bound (of its mean) is
                # what the target asks of the tuned call.
                extra += (f"; 1.3x needs {SPEEDUP_TARGET * needed:.2f} of the bound, "
                          f"{'above' if SPEEDUP_TARGET * needed > c else 'within'} the 1MiB ring calibration {c:.2f}")
            t2.append(point(topo, "alltoall", m, "speedup", text, row["ratio_lo"] >= SPEEDUP_TARGET, extra))
    for topo in topos:
        for tag in topo.samples:
            for m in sorted(topo.samples[tag]):
                cells = topo.samples[tag][m]
                if cells.get(TUNED) is None or cells.get(DEFAULT) is None:
                    continue
                row, why_not = topo.interval(tag, m)
                if row is None:
                    t3.append(point(topo, tag, m, "tuned/default", "-", None, why_not))
                    if topo.ran.get(tag, {}).get(m) == "native":
                        aa.append(point(topo, tag, m, "default/tuned", "-", None, why_not))
                    continue
                r, lo, hi = tuned_over_default(row)
                ok = hi <= REGRET_TARGET
                t3_decidable += ok or lo > REGRET_TARGET
                t3_regressions += lo > REGRET_TARGET
                notes = ["same algorithm (A/A)"] if row["same_algorithm"] else []
                if not ok and r <= REGRET_TARGET:
                    notes.append(f"the estimate is within 5 % but the interval is too wide to show it "
                                 f"({row['candidate']['calls']} calls per side: more --iterations narrow it)")
                t3.append(point(topo, tag, m, "tuned/default", interval_text(r, lo, hi, 3), ok, "; ".join(notes)))
                t3_missed_native += not ok and row["same_algorithm"]
                if row["same_algorithm"]:
                    aa.append(point(topo, tag, m, "default/tuned",
                                    interval_text(row["ratio"], row["ratio_lo"], row["ratio_hi"], 3),
                                    not row["differs"],
                                    "no difference" if not row["differs"] else
                                    "the interval excludes 1 although both sides ran Open MPI's collective: noise, "
                                    "or the library's own cost (alltoallv: the allreduce that agrees on the call's "
                                    "class and block size); not a speedup"))
        for m in sorted(topo.samples.get("allgather", {})):
            o = topo.samples["allgather"][m].get(TUNED)
            if m < 256 * KIB or o is None:
                continue
            f = fraction(o)
            t4.append(point(topo, "allgather", m, "fraction", fmt_fraction(f), f is not None and f >= 0.85,
                            ceiling_text(topo, f)))
    section("1. tuned alltoall >= 0.85 of the bound at >= 64 KiB, every multi-switch topology", t1)
    section("2. tuned alltoall >= 1.3x faster than ompi:default at >= 64 KiB (the whole 95 % interval of "
            "default/tuned >= 1.3), every multi-switch topology", t2)
    section("3. the tuned choice at most 5 % slower than ompi:default (the 95 % interval of tuned/default "
            "ends <= 1.05), every size", t3)
    misses = sum(ok is False for _, ok in t3)
    if misses:
        lines[-1:-1] = [f"  of the {misses} MISSes, {t3_missed_native} are at points where the library ran native "
                        f"(the same algorithm: noise, and for alltoallv the library's extra allreduce that agrees on "
                        f"the call's class and block size), {misses - t3_missed_native} where it ran another algorithm"]
    if t3_decidable:
        lines[-1:-1] = [f"  decidable points (the interval wholly at or below {REGRET_TARGET} or wholly above): "
                        f"{t3_decidable}; PASS at {t3_decidable - t3_regressions} of them "
                        f"({100 * (t3_decidable - t3_regressions) / t3_decidable:.0f} %), "
                        f"real regressions (the whole interval above {REGRET_TARGET}): {t3_regressions}"]
    section("4. tuned allgather >= 0.85 of its bound at >= 256 KiB", t4)
    section("5. A/A: where the library ran native (the algorithm of ompi:default), default/tuned shows no "
            "difference (its 95 % interval includes 1)", aa)

    ref = next((t for t in topos if t.name == "two-switch-4x4"), None)
    lines.append("reference point: Open MPI's default at 64 KiB on the 4+4 tree measured 125 ms against an 84 ms bound")
    cells = ref.samples.get("alltoall", {}).get(64 * KIB, {}) if ref else {}
    d = cells.get(DEFAULT)
    if d is not None:
        lines.append(f"  here: ompi:default {jsonl_report.human_seconds(d['median_s'])} "
                     f"(min {jsonl_report.human_seconds(d['min_s'])}, p95 {jsonl_report.human_seconds(d['p95_s'])}), "
                     f"bound {jsonl_report.human_seconds(d['bound_s'] or 0)}, fraction {fmt_fraction(fraction(d))}")
    else:
        lines.append("  here: not measured (needs two-switch-4x4, alltoall, 64KiB)")
    lines.append("")
    lines.append("summary:")
    for title, ok in summary:
        lines.append(f"  {'-' if ok is None else 'PASS' if ok else 'MISS'}  {re.sub(r'^[0-9]+[.] ', '', title)}")
    return lines


# --- plots ------------------------------------------------------------------


def gnuplot_terminal():
    ok = subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True).returncode == 0
    return "pngcairo" if ok else "png"


def plot(topo, directory, terminal):
    """DIR/TOPOLOGY.png: one panel per run, throughput (bytes_per_s in MB/s)
    against the message size, one line per label, the bound as a line."""
    plot_dir = os.path.join(topo.path, "plot")
    os.makedirs(plot_dir, exist_ok=True)
    tags = ordered_tags(topo)
    if not tags:
        return None
    cols = 2 if len(tags) > 1 else 1
    rows = (len(tags) + cols - 1) // cols
    png = os.path.join(directory, f"{topo.name}.png")
    font = "Sans,10" if terminal == "pngcairo" else "medium"
    gp = [f"set terminal {terminal} noenhanced size {900 * cols},{560 * rows} font '{font}'",
          f"set output '{png}'",
          f"set multiplot layout {rows},{cols} title '{topo.name}: throughput (bytes moved between ranks / mean "
          f"time per call) against block size; the bound line is bytes / bound_s' font ',12'",
          "set logscale x 2", "set grid", "set key outside right top vertical font ',8' spacing 0.9",
          "set xlabel 'bytes per block'", "set ylabel 'MB/s'", "set datafile missing 'NaN'"]
    for tag in tags:
        rows_ = topo.samples[tag]
        sizes = sorted(m for m in rows_ if m > 0)
        labels = ordered_labels(topo.labels[tag])
        dat = os.path.join(plot_dir, f"{tag}.dat")
        with open(dat, "w") as f:
            f.write("msize " + " ".join(f'"{x}"' for x in labels) + ' "bound"\n')
            for m in sizes:
                vals = []
                for label in labels:
                    o = rows_[m].get(label)
                    vals.append(f"{o['bytes_per_s'] / 1e6:.6g}" if o and number(o.get("bytes_per_s")) else "NaN")
                bound = next((o["bytes_per_call"] / o["bound_s"] / 1e6 for o in rows_[m].values()
                              if number(o.get("bound_s")) and number(o.get("bytes_per_call"))), None)
                vals.append("NaN" if bound is None else f"{bound:.6g}")
                f.write(f"{m} " + " ".join(vals) + "\n")
        xt = ", ".join(f'"{human_bytes(m)}" {m}' for m in sizes)
        gp.append(f"set xtics ({xt})")
        gp.append(f"set xrange [{sizes[0] / 1.5 if sizes else 1}:{sizes[-1] * 1.5 if sizes else 2}]")
        top = max((o["bytes_per_call"] / min(o[key], o["bound_s"] or o[key]) / 1e6
                   for m in sizes for key in [time_key(rows_[m])] for o in rows_[m].values()
                   if number(o.get(key)) and number(o.get("bytes_per_call"))), default=1)
        gp.append(f"set yrange [0:{top * 1.08:.6g}]")
        gp.append(f"set title '{tag}, {topo.nprocs[tag]} ranks'")
        plots = []
        palette = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#ff7f0e",
                   "#7f7f7f", "#aec7e8", "#98df8a", "#c5b0d5", "#c49c94"]
        k = 0
        for i, label in enumerate(labels, start=2):
            if label == DEFAULT:
                style = "lw 3 lc rgb 'black' pt 7 ps 0.8"
            elif label == TUNED:
                style = "lw 3 lc rgb '#d62728' pt 5 ps 0.8"
            else:
                dash = "dt 2 " if label.startswith("ompi:") else ""
                style = f"lw 1.2 {dash}lc rgb '{palette[k % len(palette)]}' pt {k % 12 + 1} ps 0.6"
                k += 1
            plots.append(f"'{dat}' using 1:{i} with linespoints {style} title '{label}'")
        plots.append(f"'{dat}' using 1:{len(labels) + 2} with lines lw 2 dt 3 lc rgb '#555555' title 'bound'")
        gp.append("plot " + ", \\\n     ".join(plots))
    gp.append("unset multiplot")
    script = os.path.join(plot_dir, "plot.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", script], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"cluster_report.py: gnuplot {script} failed:\n{r.stderr}", file=sys.stderr)
        return None
    return png


def find_topotune():
    """The build's topotune as cluster.sh finds its binaries ($BUILD, default
    build/ in the source tree), else topotune on PATH; None when neither."""
    build = os.environ.get("BUILD") or os.path.join(ROOT, "build")
    path = os.path.join(os.path.abspath(build), "daemon", "cli", "topotune")
    return path if os.access(path, os.X_OK) else shutil.which("topotune")


def cmd_report(args):
    topos = load_results(args.directory)
    if not topos:
        die(f"{args.directory}: no TOPOLOGY/*.jsonl results")
    topotune = args.topotune or find_topotune()
    for topo in topos:
        topo.compare(topotune)
    tables = []
    for topo in topos:
        tables += [f"==== {topo.name}: {topo.switches} switch{'es' if topo.switches != 1 else ''}, "
                   f"{max(topo.nprocs.values(), default=0)} ranks"]
        tables += [f"   {line}" for line in topo.calibration_lines()] + [""]
        for tag in ordered_tags(topo):
            tables += table(topo, tag) + [""]
    target_lines = targets(topos)
    tables_path = os.path.join(args.directory, "tables.txt")
    targets_path = os.path.join(args.directory, "targets.txt")
    with open(tables_path, "w") as f:
        f.write("\n".join(tables) + "\n")
    with open(targets_path, "w") as f:
        f.write("\n".join(target_lines) + "\n")
    print("\n".join(tables))
    print("\n".join(target_lines))
    pngs = []
    if not args.no_plots:
        terminal = gnuplot_terminal()
        pngs = [p for p in (plot(t, args.directory, terminal) for t in topos) if p]
    print("written:")
    for p in [tables_path, targets_path] + pngs:
        print(f"  {p}")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="tables, targets and plots of a results directory")
    r.add_argument("directory")
    r.add_argument("--no-plots", action="store_true", help="tables and targets only")
    r.add_argument("--topotune", help="the topotune CLI, for `topotune compare` (default: $BUILD/daemon/cli/topotune, "
                   "BUILD defaulting to build/ in the source tree, else topotune on PATH)")
    r.set_defaults(func=cmd_report)
    t = sub.add_parser("topology", help="a topology file with every name prefixed")
    t.add_argument("--prefix", required=True)
    t.add_argument("input")
    t.add_argument("output")
    t.set_defaults(func=cmd_topology)
    e = sub.add_parser("estimate", help="how long bench/cluster.sh will take")
    e.add_argument("--topotune", default="topotune", help="the topotune CLI (for `topotune bound`)")
    e.add_argument("--sizes", required=True)
    e.add_argument("--iterations", type=int, required=True)
    e.add_argument("--warmup", type=int, required=True)
    e.add_argument("--tune-iterations", type=int, required=True, help="0: no tuning")
    e.add_argument("--run", action="append", default=[], metavar="'COLLECTIVE[ PATTERN]:KERNELS:OMPI'",
                   help="one run: its kernel count and forced Open MPI algorithm count")
    e.add_argument("--point-timeout", type=float, default=120, help="topotuned's tuning.point_timeout (s)")
    e.add_argument("--job-timeout", type=float, default=900, help="topotuned's tuning.job_timeout (s)")
    e.add_argument("--size-budget", type=float, default=30, help="topotuned's tuning.size_budget (s)")
    e.add_argument("topologies", nargs="+")
    e.set_defaults(func=cmd_estimate)
    ti = sub.add_parser("tune-iterations", help="timed calls per tuning point, per size")
    ti.add_argument("--topotune", default="topotune", help="the topotune CLI (for `topotune bound`)")
    ti.add_argument("--config", help="topotuned's configuration (its tuning timeouts)")
    ti.add_argument("--max", type=int, required=True, help="at most this many")
    ti.add_argument("--kernels", type=int, required=True, help="kernels of the largest collective")
    ti.add_argument("--sizes", required=True)
    ti.add_argument("topology")
    ti.set_defaults(func=cmd_tune_iterations)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
