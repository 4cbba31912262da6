#!/usr/bin/env python3
"""Checks of shim_test.sh on the shim's outputs: the stats file
(TOPOTUNE_STATS_FILE), the ranks' stderr (mpirun --tag-output), the job
reports in topotuned's database and its /metrics.

  shim_check.py forced STATS SUMMARY COLLECTIVE ALGORITHM CONTEXT DAEMON
      The stats file of a run with TOPOTUNE_FORCE_<COLLECTIVE>=ALGORITHM.
      Every call of the collective on rank 0 (SUMMARY: coll_check's
      summary.json) is in the stats, under ALGORITHM or, when the kernel
      declined, under "native" with fallbacks. CONTEXT=0 (a kernel that
      needs no context): no call fell back. CONTEXT=1: some may, but with
      DAEMON=1 at least as many calls ran ALGORITHM as rank 0 made on
      MPI_COMM_WORLD, and with DAEMON=0 it may fall back everywhere.
      Alltoall and allgather: the entries' total_bytes add up to the bytes
      the calls moved between distinct ranks (SUMMARY).
  shim_check.py internal_errors STATS SUMMARY COLLECTIVE:ALGORITHM...
      A run with TOPOTUNE_TEST_THROW and each COLLECTIVE forced to an
      ALGORITHM that never declines: every call rank 0 made is counted,
      either under its ALGORITHM or under "native" as a fallback; the
      fallbacks are the internal errors (the stats file's
      internal_errors.count, the only fallback reason "internal error: ..."),
      some calls threw and every collective ran its ALGORITHM too, and the
      first error is a std::bad_alloc in an MPI function.
  shim_check.py nonblocking STATS SUMMARY
      The stats file's "nonblocking" counts every nonblocking call rank 0
      started (SUMMARY: coll_check's with "nonblocking": true, where every
      call was, or fcoll_check's per-collective counts), the stats hold no
      blocking call of a collective whose calls were all nonblocking, and
      "unserved" gives each started collective's reason with its count.
  shim_check.py plan STATS STATUS [REGEX]
      plan.status is STATUS; for "none", plan.reason matches REGEX
      (case-insensitive); for "ok", plan_id and topology_version are set.
  shim_check.py fault STATS REGEX
      A malformed plan: either plan.status is "none" with a reason matching
      REGEX, or calls fell back with a reason matching REGEX.
  shim_check.py tuned STATS SUMMARY TABLES
      A run on the daemon's tables (TABLES: JSON {collective: [[min, max or
      null, algorithm], ...]}): every call ran the algorithm of its size's
      range (alltoallv: of the mean block size, which the ranks agree on),
      or native with a fallback counted, or native on a communicator of one
      rank (SUMMARY's "single"); every algorithm of a table ran; all calls
      and all bytes (SUMMARY's) counted.
  shim_check.py waits STATS MOST
      Rank 0 waited for the daemon until TOPOTUNE_TIMEOUT_MS at most MOST
      times: the plans of the communicators it is in that timed out
      (fallback reasons saying so, counted once per plan asked for, by
      every member, since every member waits in the exchange); reasons
      saying the daemon was "not asked again" cost no wait.
  shim_check.py init STATS SECONDS
      The stats file's init_seconds (the shim's work in MPI_Init) is at most
      SECONDS.
  shim_check.py native_only STATS
      Every entry ran "native" and nothing fell back (TOPOTUNE_DISABLE=1).
  shim_check.py log STDERR NP STATS
      stderr of an mpirun --tag-output job: no rank printed the same
      "topotune:" line twice; the plan's reason (when status is "none") and
      every fallback reason of the stats appear on "topotune:" lines, and
      at most once per rank.
  shim_check.py report PAYLOAD STATS JOB_ID ALGORITHM
      PAYLOAD: the JSON that topotuned stored for the job (job_reports):
      its plan_id is the stats file's, nprocs 4, ranks_per_node 2, its
      alltoall entries under ALGORITHM have the stats file's calls, every
      entry has its decision source (alltoallv its pattern class), and the
      world's alltoall entries are FORCED on 4 ranks, 2 per node, 2 hosts.
  shim_check.py adapt STATS_PATTERN NP
      The stats files of every rank (STATS_PATTERN with %r the rank): the
      world communicator's adapted buckets are the same on every rank (calls,
      state, choice, exploring calls, each candidate's pairs and verdict), at
      most half of each bucket's calls explored, and some bucket explored.
  shim_check.py adapted STATS 0|1
      The job's stats file lists no adapted bucket (0) or some (1).
  shim_check.py learned LEARNED STATS
      LEARNED: collective|pattern|size bucket|choice lines of topotuned's learned
      table. The job's stats file explored none of those buckets on 4 ranks,
      and its calls in them (4 ranks, 2 per node) ran the learned kernel.
  shim_check.py metrics URL ALGORITHM
      /metrics at URL has topotune_collective_throughput_bytes_per_second
      with source="job", collective="alltoall", algorithm=ALGORITHM,
      nprocs="4".
  shim_check.py rpc_count URL METHOD
      Prints the sum of topotune_rpc_requests_total for METHOD.
Exit status 0 when the check holds, 1 (with the reason on stderr) when not.
"""
import json
import math
import re
import sys
import urllib.request

COLLECTIVES = ("alltoall", "alltoallv", "allgather")


def fail(msg):
    print(f"shim_check {sys.argv[1]}: {msg}", file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")


def entries(stats, collective):
    out = [e for e in stats.get("stats", []) if e.get("collective") == collective]
    for e in out:
        for key in ("algorithm", "msize", "calls", "total_bytes", "total_seconds", "fallbacks"):
            if key not in e:
                fail(f"a stats entry lacks '{key}': {e}")
    return out


def check_shape(stats):
    plan = stats.get("plan")
    if not isinstance(plan, dict) or plan.get("status") not in ("ok", "none"):
        fail(f"plan is {plan!r}, expected an object with status 'ok' or 'none'")
    if not isinstance(stats.get("stats"), list):
        fail("'stats' is not a list")
    fb = stats.get("fallbacks", {})
    if not isinstance(fb, dict):
        fail("'fallbacks' is not an object")
    # The reasons count calls that fell back, and plans that failed ("no
    # plan: <plan.reason>; ...", "no plan for a communicator of ..."), once
    # per plan asked for, which no call counts.
    in_entries = sum(int(e.get("fallbacks", 0)) for e in stats["stats"])
    in_reasons = sum(int(v) for r, v in fb.items() if not r.startswith("no plan"))
    if in_entries != in_reasons:
        fail(f"the entries count {in_entries} fallbacks but 'fallbacks' {in_reasons}: {fb}")
    for e in stats["stats"]:
        if e.get("fallbacks", 0) and e.get("algorithm") != "native":
            fail(f"fallbacks counted under algorithm {e.get('algorithm')!r} (they run native): {e}")


def check_bytes(es, collective, calls):
    got = sum(e["total_bytes"] for e in es)
    if got != calls["bytes"]:
        fail(f"{collective}: the stats count {got} total_bytes, the calls moved {calls['bytes']} between distinct "
             f"ranks: {summarize(es)}")


def summarize(es):
    return ", ".join(f"{e['algorithm']}@{e['msize']}:{e['calls']}" + (f"(fb {e['fallbacks']})" if e["fallbacks"] else "")
                     for e in sorted(es, key=lambda e: (e["algorithm"], e["msize"])))


def cmd_forced(stats_path, summary_path, collective, algorithm, context, daemon):
    stats, summary = load(stats_path), load(summary_path)
    check_shape(stats)
    forced = stats.get("forced", {})
    if forced.get(collective) != algorithm:
        fail(f"forced is {forced}, expected {collective}: {algorithm}")
    es = entries(stats, collective)
    calls = summary["calls"][collective]
    total = sum(e["calls"] for e in es)
    ran = sum(e["calls"] for e in es if e["algorithm"] == algorithm)
    fallbacks = sum(e["fallbacks"] for e in es)
    others = sorted({e["algorithm"] for e in es} - {algorithm, "native"})
    where = f"{collective} forced to {algorithm}: {summarize(es)}"
    if others:
        fail(f"{where}: algorithms {others} ran, neither the forced one nor native")
    if total != calls["total"]:
        fail(f"{where}: the stats count {total} calls, rank 0 made {calls['total']}")
    native_calls = sum(e["calls"] for e in es if e["algorithm"] == "native")
    if algorithm != "native" and native_calls != fallbacks:
        fail(f"{where}: {native_calls} calls ran native but only {fallbacks} fell back")
    if context == "0" and fallbacks:
        fail(f"{where}: {fallbacks} calls fell back, but {algorithm} needs no context and never declines "
             f"an intracommunicator (fallback reasons: {stats.get('fallbacks')})")
    if context == "1" and daemon == "1" and ran < calls["world"]:
        fail(f"{where}: only {ran} calls ran {algorithm}, fewer than the {calls['world']} on MPI_COMM_WORLD, "
             f"for which the daemon's plan has its schedule (fallback reasons: {stats.get('fallbacks')})")
    if daemon == "1" and ran == 0:
        fail(f"{where}: every call fell back")
    # alltoallv's bytes are exact only where the ranks agree on them (tables
    # of several ranges, *_l3 kernels); `tuned` checks them.
    if collective != "alltoallv":
        check_bytes(es, collective, calls)
    print(f"{where}: {ran} of {total} calls ran {algorithm}, {fallbacks} fell back")


def cmd_internal_errors(stats_path, summary_path, *forced):
    stats, summary = load(stats_path), load(summary_path)
    check_shape(stats)
    errors = stats.get("internal_errors")
    if not isinstance(errors, dict) or not isinstance(errors.get("count"), int):
        fail(f"the stats file's internal_errors is {errors!r}, expected an object with a count")
    count, first = errors["count"], errors.get("first", "")
    if count < 1:
        fail(f"internal_errors counts {count}: no call threw")
    if not re.search(r"bad_alloc.* in MPI_\w+", first):
        fail(f"internal_errors.first is {first!r}, expected std::bad_alloc in an MPI function")
    reasons = stats.get("fallbacks", {})
    internal = {r: n for r, n in reasons.items() if r.startswith("internal error")}
    if set(internal) != set(reasons):
        fail(f"fallback reasons other than the internal error's: {reasons}")
    if sum(internal.values()) != count:
        fail(f"the internal error's reason counts {sum(internal.values())} calls, internal_errors {count}")
    fell_total = 0
    for pair in forced:
        collective, _, algorithm = pair.partition(":")
        es = entries(stats, collective)
        want = summary["calls"][collective]["total"]
        total = sum(e["calls"] for e in es)
        ran = sum(e["calls"] for e in es if e["algorithm"] == algorithm)
        native = sum(e["calls"] for e in es if e["algorithm"] == "native")
        fell = sum(e["fallbacks"] for e in es)
        where = f"{collective} forced to {algorithm}: {summarize(es)}"
        if total != want:
            fail(f"{where}: the stats count {total} calls, rank 0 made {want}")
        if ran + native != total or native != fell:
            fail(f"{where}: every call should run {algorithm}, or native as a fallback")
        if ran == 0:
            fail(f"{where}: no call ran {algorithm}")
        if collective != "alltoallv":
            check_bytes(es, collective, summary["calls"][collective])
        fell_total += fell
    if fell_total != count:
        fail(f"{fell_total} calls fell back, but internal_errors counts {count}")
    print(f"internal errors: {count}, each served by the MPI library's collective (first: {first})")


def cmd_nonblocking(stats_path, summary_path):
    stats, summary = load(stats_path), load(summary_path)
    check_shape(stats)
    nb = summary.get("nonblocking")
    if nb is True:
        want = {c: summary["calls"][c]["total"] for c in COLLECTIVES}
    elif isinstance(nb, dict):
        want = {c: int(nb.get(c, 0)) for c in COLLECTIVES}
    else:
        fail(f"{summary_path} made no nonblocking calls ('nonblocking' is {nb!r})")
    got = stats.get("nonblocking")
    if not isinstance(got, dict):
        fail(f"the stats file has no 'nonblocking' object: {got!r}")
    unserved = stats.get("unserved", {})
    for c in COLLECTIVES:
        calls = got.get(c, {}).get("calls")
        if calls != want[c]:
            fail(f"{c}: the stats count {calls} nonblocking calls, rank 0 started {want[c]}")
        if nb is True and entries(stats, c):
            fail(f"{c}: every call was nonblocking, but the stats hold blocking ones: {summarize(entries(stats, c))}")
        name = "MPI_I" + c
        reasons = {r: n for r, n in unserved.items() if r.startswith(name + ":")}
        if want[c] and list(reasons.values()) != [want[c]]:
            fail(f"{c}: 'unserved' should give {name}'s reason once with {want[c]} calls: {unserved}")
    print(f"nonblocking calls counted: {want}")


def cmd_plan(stats_path, status, regex=None):
    stats = load(stats_path)
    check_shape(stats)
    plan = stats["plan"]
    if plan["status"] != status:
        fail(f"plan.status is {plan['status']!r} (reason {plan.get('reason')!r}), expected {status!r}")
    if status == "none":
        reason = plan.get("reason", "")
        if not reason:
            fail("plan.status is 'none' without a reason")
        if regex and not re.search(regex, reason, re.I):
            fail(f"plan.reason {reason!r} does not match /{regex}/i")
    else:
        if not plan.get("plan_id") or not isinstance(plan.get("topology_version"), int) or \
                plan["topology_version"] < 1:
            fail(f"plan is {plan}: a plan_id and a topology_version from 1 expected")
    print(f"plan {plan}")


def cmd_fault(stats_path, regex):
    stats = load(stats_path)
    check_shape(stats)
    plan = stats["plan"]
    if plan["status"] == "none":
        if not re.search(regex, plan.get("reason", ""), re.I):
            fail(f"plan.status is 'none' but its reason {plan.get('reason')!r} does not match /{regex}/i")
        print(f"no plan: {plan.get('reason')}")
        return
    matching = {r: n for r, n in stats.get("fallbacks", {}).items() if re.search(regex, r, re.I)}
    if not matching:
        fail(f"the malformed plan was taken (plan {plan}) and no fallback reason matches /{regex}/i: "
             f"{stats.get('fallbacks')}")
    print(f"plan taken, fallbacks {matching}")


def table_algorithm(table, msize):
    for lo, hi, alg in table:
        if msize >= lo and (hi is None or msize < hi):
            return alg
    return None


def cmd_tuned(stats_path, summary_path, tables_path):
    """Every call ran its table's algorithm at its size. Alltoallv's tables are
    per size-pattern class: "alltoallv" is the uniform class's, by size;
    "alltoallv:CLASS" names one algorithm for every size, so that its calls
    tell which class the library gave them (stats' alltoallv_classes)."""
    stats, summary, tables = load(stats_path), load(summary_path), load(tables_path)
    check_shape(stats)
    ran_tuned = 0
    for collective in COLLECTIVES:
        es = entries(stats, collective)
        total = sum(e["calls"] for e in es)
        want_total = summary["calls"][collective]["total"]
        if total != want_total:
            fail(f"{collective}: the stats count {total} calls, rank 0 made {want_total}: {summarize(es)}")
        check_bytes(es, collective, summary["calls"][collective])
        table = tables.get(collective)
        if not table:
            continue
        by_class = {key.partition(":")[2]: t[0][2] for key, t in tables.items() if key.startswith(collective + ":")}
        algorithms = {alg for _, _, alg in table} | {"native"} | set(by_class.values())
        # Communicators of one rank run native (not a fallback); nothing else may.
        single = summary["calls"][collective]["single"]
        plain_native = sum(e["calls"] - e["fallbacks"] for e in es if e["algorithm"] == "native")
        if plain_native > single:
            fail(f"{collective}: {plain_native} calls ran native without falling back, more than the {single} on "
                 f"communicators of one rank: {summarize(es)}")
        for e in es:
            if e["algorithm"] == "native":
                continue
            if e["algorithm"] in by_class.values():
                ran_tuned += e["calls"]
                continue
            want = table_algorithm(table, e["msize"])
            if e["algorithm"] != want:
                fail(f"{collective} at msize {e['msize']} ran {e['algorithm']} ({e['calls']} calls), the table "
                     f"says {want}: {summarize(es)}")
            ran_tuned += e["calls"]
        if {e["algorithm"] for e in es} < algorithms:
            fail(f"{collective}: only {sorted({e['algorithm'] for e in es})} ran, the tables have {sorted(algorithms)}")
        if by_class:
            check_classes(stats, es, by_class, single, total)
        print(f"{collective}: {summarize(es)}")
    if ran_tuned == 0:
        fail("no call ran a tuned (non-native) algorithm")


def check_classes(stats, es, by_class, single, total):
    """Alltoallv's calls per class: every call on more than one rank has one,
    each class occurs, and the calls of a class's algorithm are that class's
    calls (less those that fell back to native)."""
    classes = stats.get("alltoallv_classes")
    if not isinstance(classes, dict):
        fail(f"the stats have no alltoallv_classes: {classes!r}")
    if sum(classes.values()) != total or classes.get("unclassified") != single:
        fail(f"alltoallv_classes {classes}: expected {total} calls, the {single} on communicators of one rank "
             "unclassified")
    fallbacks = sum(e["fallbacks"] for e in es)
    for pattern, algorithm in by_class.items():
        want = classes.get(pattern, 0)
        ran = sum(e["calls"] for e in es if e["algorithm"] == algorithm)
        if want == 0 or not want - fallbacks <= ran <= want:
            fail(f"alltoallv: {want} calls of class {pattern} (alltoallv_classes {classes}), {ran} ran its "
                 f"algorithm {algorithm} ({fallbacks} fell back): {summarize(es)}")
        print(f"alltoallv class {pattern}: {want} calls, {ran} ran {algorithm}")


def cmd_backoff(stats_path, summary_path):
    """Alltoallv tables native below 1 MiB in every class, calls all smaller:
    on each communicator of more than one rank, the first two calls agree
    on their class before they run (AgreementBackoff's streak), the others
    run native at once: one agrees in the background (deferred), then 1, 2,
    4, 8 and then 16 at a time skip it; every call ran native."""
    stats, summary = load(stats_path), load(summary_path)
    check_shape(stats)
    es = entries(stats, "alltoallv")
    calls = summary["calls"]["alltoallv"]
    if any(e["algorithm"] != "native" or e["fallbacks"] for e in es):
        fail(f"alltoallv: every call should run native without falling back: {summarize(es)}")
    classes = stats.get("alltoallv_classes", {})
    per_comm, comms = calls["world"], (calls["total"] - calls["single"]) // calls["world"]
    agreed = min(per_comm, 2)  # As bench_kernels/shim/agreement_backoff.h has it.
    steady, window = "", 1
    while len(steady) < per_comm - agreed:
        steady += "d" + "s" * window
        window = min(window * 2, 16)
    steady = steady[:per_comm - agreed]
    classified = sum(classes.get(c, 0) for c in ("uniform", "skewed", "sparse"))
    want = {"classified": comms * agreed, "deferred": comms * steady.count("d"), "skipped": comms * steady.count("s"),
            "unclassified": calls["single"]}
    got = {"classified": classified, "deferred": classes.get("deferred"), "skipped": classes.get("skipped"),
           "unclassified": classes.get("unclassified")}
    if got != want:
        fail(f"alltoallv_classes {classes}: expected {want} ({comms} communicators of {per_comm} calls, "
             f"{calls['single']} calls on one rank)")
    print(f"alltoallv: {classified} calls agreed before they ran, {classes['deferred']} in the background, "
          f"{classes['skipped']} skipped it, on {comms} communicators of {per_comm} calls")


def cmd_waits(stats_path, most):
    stats = load(stats_path)
    waits = {r: n for r, n in stats.get("fallbacks", {}).items()
             if re.search(r"did not answer|deadline|time.?out|timed out", r, re.I) and "not asked again" not in r}
    total = sum(waits.values())
    if total > int(most):
        fail(f"rank 0 waited for the daemon until TOPOTUNE_TIMEOUT_MS {total} times, more than {most}: {waits}")
    print(f"timeouts waited: {total} {waits}")


def cmd_init(stats_path, most):
    stats = load(stats_path)
    took = stats.get("init_seconds")
    if not isinstance(took, (int, float)) or took < 0:
        fail(f"init_seconds is {took!r}")
    if took > float(most):
        fail(f"MPI_Init took {took:.3f} s, more than {most} s")
    print(f"MPI_Init took {took:.3f} s")


def cmd_native_only(stats_path):
    stats = load(stats_path)
    bad = [e for e in stats.get("stats", []) if e.get("algorithm") != "native" or e.get("fallbacks")]
    if bad:
        fail(f"TOPOTUNE_DISABLE=1, yet entries ran something else: {bad[:5]}")


TAG = re.compile(r"^\[[^\]]*,(\d+)\]<stderr>:(.*)$")


def cmd_log(stderr_path, np, stats_path):
    stats = load(stats_path)
    per_rank = {}
    with open(stderr_path, errors="replace") as f:
        for line in f:
            m = TAG.match(line.rstrip("\n"))
            if not m:
                continue
            rank, text = int(m.group(1)), m.group(2)
            if text.startswith("topotune:"):
                per_rank.setdefault(rank, []).append(text)
    for rank, lines in per_rank.items():
        seen = {}
        for t in lines:
            seen[t] = seen.get(t, 0) + 1
        twice = [t for t, n in seen.items() if n > 1]
        if twice:
            fail(f"rank {rank} printed {len(twice)} topotune: line(s) more than once, e.g. {twice[0]!r} "
                 f"({seen[twice[0]]} times)")
    reasons = list(stats.get("fallbacks", {}).keys())
    if stats.get("plan", {}).get("status") == "none":
        reasons.append(stats["plan"].get("reason", ""))
    for reason in reasons:
        if not reason:
            continue
        counts = {r: sum(reason in t for t in lines) for r, lines in per_rank.items()}
        if not any(counts.values()):
            fail(f"the reason {reason!r} is on no topotune: line of stderr (lines: "
                 f"{[t for ls in per_rank.values() for t in ls][:6]})")
        many = {r: n for r, n in counts.items() if n > 1}
        if many:
            fail(f"the reason {reason!r} was logged more than once by rank(s) {many}")
    ranks = sorted(per_rank)
    if ranks and max(ranks) >= int(np):
        fail(f"stderr tags ranks {ranks}, more than {np}")
    print(f"topotune: lines per rank: { {r: len(v) for r, v in sorted(per_rank.items())} }")


def cmd_report(payload_path, stats_path, job_id, algorithm):
    payload, stats = load(payload_path), load(stats_path)
    if payload.get("job_id") != job_id:
        fail(f"job_id {payload.get('job_id')!r}, expected {job_id!r}")
    if payload.get("plan_id", "") != stats["plan"].get("plan_id", ""):
        fail(f"plan_id {payload.get('plan_id')!r}, the stats file's is {stats['plan'].get('plan_id')!r}")
    if not payload.get("plan_id"):
        fail("the report has no plan_id")
    if int(payload.get("nprocs", 0)) != 4 or int(payload.get("ranks_per_node", 0)) != 2:
        fail(f"nprocs {payload.get('nprocs')}, ranks_per_node {payload.get('ranks_per_node')}; expected 4 and 2")
    for key in ("started_at", "finished_at"):
        if not payload.get(key):
            fail(f"the report has no {key}")
    got = sum(int(s.get("calls", 0)) for s in payload.get("stats", [])
              if s.get("collective") == "COLLECTIVE_ALLTOALL" and s.get("algorithm") == algorithm)
    want = sum(e["calls"] for e in entries(stats, "alltoall") if e["algorithm"] == algorithm)
    if got == 0 or got != want:
        fail(f"the report has {got} alltoall calls under {algorithm}, the stats file {want}")
    # Each entry says its communicator and table: the world's forced alltoall
    # (4 ranks on h0, h0, h1, h1), the others from the daemon's plan, and
    # every alltoallv entry its pattern class.
    for s in payload.get("stats", []):
        if s.get("source") not in ("DECISION_SOURCE_FORCED", "DECISION_SOURCE_DEFAULT", "DECISION_SOURCE_NEAREST",
                                   "DECISION_SOURCE_TUNED"):
            fail(f"an entry without its decision source: {s}")
        if s.get("collective") == "COLLECTIVE_ALLTOALLV" and s.get("pattern") not in (
                "ALLTOALLV_PATTERN_UNIFORM", "ALLTOALLV_PATTERN_SKEWED", "ALLTOALLV_PATTERN_SPARSE"):
            fail(f"an alltoallv entry without its pattern class: {s}")
    world = [s for s in payload.get("stats", []) if s.get("collective") == "COLLECTIVE_ALLTOALL"
             and s.get("algorithm") == algorithm and int(s.get("comm_size", 0)) == 4]
    if not world:
        fail(f"no alltoall entry of {algorithm} on the world communicator (comm_size 4)")
    for s in world:
        if (s.get("source") != "DECISION_SOURCE_FORCED" or int(s.get("comm_ranks_per_node", 0)) != 2
                or int(s.get("comm_hosts", 0)) != 2 or s.get("plan_id") != payload["plan_id"]):
            fail(f"the world's forced alltoall entry says {s}; expected FORCED, 2 per node on 2 hosts, the job's plan")
    print(f"report of {job_id}: plan {payload['plan_id']}, {got} alltoall calls ran {algorithm}")


def cmd_adapt(pattern, np):
    """Every rank's adapted buckets agree (the same algorithm at the same call
    everywhere), within the share, and something explored."""
    per_rank = []
    for r in range(int(np)):
        stats = load(pattern.replace("%r", str(r)))
        per_rank.append(sorted(
            ((a["collective"], a["size_bucket"], a["comm_size"], a["calls"], a["settled"], a["choice"],
              a["exploring_calls"], tuple((c["algorithm"], c["pairs"], c["won"], c["left"]) for c in a["candidates"]),
              a.get("pattern", ""))
             for a in stats.get("adapt", [])), key=repr))
    world = [b for b in per_rank[0] if b[2] == int(np)]
    if not world:
        fail(f"rank 0 adapted no bucket on the world communicator: {per_rank[0][:4]}")
    for r in range(1, int(np)):
        mine = [b for b in per_rank[r] if b[2] == int(np)]
        if mine != world:
            fail(f"rank {r}'s world buckets differ from rank 0's: {mine[:3]} against {world[:3]}")
    for b in world:
        if b[6] * 2 > b[3]:
            fail(f"bucket {b[:3]}: {b[6]} exploring calls of {b[3]}, more than half")
    explored = sum(b[6] for b in world)
    if explored == 0:
        fail(f"no world bucket explored: {world[:4]}")
    print(f"adapt: {len(world)} world buckets alike on {np} ranks, {explored} exploring calls")


def cmd_adapted(stats_path, expected):
    """Whether the job adapted some bucket (1) or none (0)."""
    adapt = load(stats_path).get("adapt", [])
    if bool(adapt) != (expected == "1"):
        fail(f"expected {'some' if expected == '1' else 'no'} adapted bucket, found {len(adapt)}: {adapt[:2]}")
    print(f"adapted: {len(adapt)} buckets")


def size_bucket(msize):
    return 0 if msize < 1 else 1 << min(62, round(math.log2(msize)))


def cmd_learned(learned_path, stats_path):
    """The second job ran each learned bucket of 4 ranks with its learned
    kernel, and explored none of them."""
    learned = {}
    for line in open(learned_path).read().split("\n"):
        if line.strip():
            collective, pattern, bucket, choice = line.split("|")
            learned[(collective, pattern, int(bucket))] = choice  # The last one stands, as topotuned's.
    stats = load(stats_path)
    for a in stats.get("adapt", []):
        if a["comm_size"] == 4 and (a["collective"], a.get("pattern", ""), a["size_bucket"]) in learned:
            fail(f"bucket {a['collective']} {a.get('pattern', '')} {a['size_bucket']} was explored again: {a}")
    ran = 0
    for e in stats["stats"]:
        key = (e["collective"], e.get("pattern", "") if e["collective"] == "alltoallv" else "", size_bucket(e["msize"]))
        if key in learned and e["comm"]["size"] == 4 and e["comm"]["ranks_per_node"] == 2:
            if e["algorithm"] != learned[key]:
                fail(f"{key}: ran {e['algorithm']} ({e['calls']} calls), learned {learned[key]}")
            ran += e["calls"]
    if ran == 0:
        fail(f"no call of a learned bucket: {sorted(learned.items())[:4]}")
    print(f"learned: {len(learned)} buckets, {ran} calls ran their learned kernel")


def scrape(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()
    except OSError as e:
        fail(f"{url}: {e}")


def labels_of(line):
    m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}\s+(\S+)", line)
    if not m:
        return None, {}, None
    return m.group(1), dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2))), m.group(3)


def cmd_metrics(url, algorithm):
    text = scrape(url)
    for line in text.splitlines():
        name, labels, value = labels_of(line)
        if (name == "topotune_collective_throughput_bytes_per_second" and labels.get("source") == "job" and
                labels.get("collective") == "alltoall" and labels.get("algorithm") == algorithm and
                labels.get("nprocs") == "4"):
            if float(value) <= 0:
                fail(f"{line}: throughput not positive")
            print(line)
            return
    fail(f"no throughput series with source=\"job\", algorithm=\"{algorithm}\" at {url}: "
         f"{[l for l in text.splitlines() if 'throughput' in l and not l.startswith('#')][:8]}")


def cmd_rpc_count(url, method):
    total = 0.0
    for line in scrape(url).splitlines():
        name, labels, value = labels_of(line)
        if name == "topotune_rpc_requests_total" and method in labels.get("method", ""):
            total += float(value)
    print(int(total))


def main():
    commands = {"forced": (cmd_forced, 6), "plan": (cmd_plan, (2, 3)), "fault": (cmd_fault, 2),
                "tuned": (cmd_tuned, 3), "backoff": (cmd_backoff, 2), "native_only": (cmd_native_only, 1), "log": (cmd_log, 3),
                "report": (cmd_report, 4), "adapt": (cmd_adapt, 2), "learned": (cmd_learned, 2), "adapted": (cmd_adapted, 2), "waits": (cmd_waits, 2), "init": (cmd_init, 2), "metrics": (cmd_metrics, 2), "rpc_count": (cmd_rpc_count, 2),
                "nonblocking": (cmd_nonblocking, 2), "internal_errors": (cmd_internal_errors, "3+")}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    fn, nargs = commands[sys.argv[1]]
    args = sys.argv[2:]
    if nargs == "3+" and len(args) >= 3:
        fn(*args)
        return
    if len(args) not in (nargs if isinstance(nargs, tuple) else (nargs,)):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    fn(*args)


if __name__ == "__main__":
    main()
