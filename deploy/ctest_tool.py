#!/usr/bin/env python3
"""What deploy/run-tests.sh asks of a ctest run, from ctest's own files.

  programs BUILD_DIR LABEL_REGEX OTHER_BUILD_DIR
      The programs the tests of LABEL_REGEX in BUILD_DIR run, as paths
      relative to BUILD_DIR (Ninja builds a file by that path), one a line,
      and only those that OTHER_BUILD_DIR's Ninja knows how to build. The
      sanitizer pass builds exactly these in build-asan/, not the whole
      product. Read from `ctest --show-only=json-v1`: every argument and
      environment value of a selected test that names a file under BUILD_DIR.

  slowest JUNIT_XML [N]
      The N (default 15) slowest tests of a `ctest --output-junit` file, with
      their seconds and status, slowest first, so a slow test is seen the day
      it arrives.

Exit status 2 on bad usage or an unreadable input.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def ctest_json(build_dir, label_regex):
    out = subprocess.run(
        ["ctest", "--test-dir", build_dir, "-L", label_regex, "--show-only=json-v1"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def ninja_outputs(build_dir):
    out = subprocess.run(
        ["ninja", "-C", build_dir, "-t", "targets", "all"], check=True, capture_output=True, text=True
    ).stdout
    return {line.split(":", 1)[0] for line in out.splitlines() if ":" in line}


def programs(build_dir, label_regex, other_build_dir):
    root = os.path.realpath(build_dir) + os.sep
    known = ninja_outputs(other_build_dir)
    wanted = set()
    for test in ctest_json(build_dir, label_regex).get("tests", []):
        words = list(test.get("command", []))
        for prop in test.get("properties", []):
            if prop.get("name") == "ENVIRONMENT":
                words += [v.split("=", 1)[-1] for v in prop.get("value", [])]
        for word in words:
            path = os.path.realpath(word) if os.path.isabs(word) else ""
            if path.startswith(root):
                rel = path[len(root):]
                if rel in known:
                    wanted.add(rel)
    if not wanted:
        print(f"ctest_tool: no test labelled {label_regex} in {build_dir}", file=sys.stderr)
        return 1
    print("\n".join(sorted(wanted)))
    return 0


def slowest(junit, count):
    cases = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None:
            status = "failed"
        elif case.find("skipped") is not None:
            status = "skipped"
        cases.append((float(case.get("time", "0")), case.get("name", "?"), status))
    cases.sort(reverse=True)
    total = sum(t for t, _, _ in cases)
    print(f"{len(cases)} tests, {total:.0f} s of test time; the {min(count, len(cases))} slowest:")
    for seconds, name, status in cases[:count]:
        print(f"  {seconds:8.1f} s  {name}{'' if status in ('run', 'passed') else f'  ({status})'}")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        if len(argv) == 5 and argv[1] == "programs":
            return programs(argv[2], argv[3], argv[4])
        if len(argv) in (3, 4) and argv[1] == "slowest":
            return slowest(argv[2], int(argv[3]) if len(argv) == 4 else 15)
    except (OSError, ValueError, ET.ParseError, subprocess.CalledProcessError) as e:
        print(f"ctest_tool: {e}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
