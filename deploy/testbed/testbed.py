#!/usr/bin/env python3
"""The emulated cluster: a topology file's switch tree built from Linux network
namespaces, with real lldpd and snmpd on the switches.

It exists so that SNMP/LLDP discovery can be tested end to end against real
agents, and so that MPI can run over links with the topology's speeds, on one
machine and with nothing leaving it.

What `up` builds (see DESIGN.md, "The emulated cluster (testbed)"):

  * one network namespace per switch, per host, and a head node
    (<prefix>head). Namespace names are the hosts' hostnames, so they must be
    valid hostnames: letters, digits and '-'.
  * a switch is a Linux bridge `br0` (STP off) in its namespace; every
    topology link is a veth pair. A switch's ports are named p1, p2, ... in the
    file's link order; a host's NIC is eth0. The head's eth0 is plugged into
    port p0 of the first switch in the file (the root switch), unshaped.
  * one flat subnet 198.18.0.0/16 (inside 198.18.0.0/15, the range reserved
    for benchmarking): switch i (file order, from 0) is 198.18.0.<i+1> on its
    bridge, the head is 198.18.0.254, host j is 198.18.<1 + j/254>.<1 + j%254>.
    MAC addresses are fixed (02:74:74:...), so chassis ids are stable.
  * tc tbf on both ends of every veth, at the link's speed (--no-shape skips
    it); a link latency uses netem when the kernel has it.
  * lldpd in every namespace (tx interval 1 s, hostname = namespace name,
    own control socket). Switches advertise their bridge address as the
    management address and the bridge capability, use the interface name as
    port id, and serve LLDP-MIB through snmpd (lldpd -X). Hosts run plain
    lldpd. The head's lldpd is receive-only, so the switches' neighbour tables
    hold exactly the topology's links.
  * snmpd in every switch namespace: AgentX master, udp:<bridge ip>:161 and
    127.0.0.1, community `public` (read-only, 198.18.0.0/15), SNMPv3 user
    `topotune` (authPriv SHA/AES, passwords topotune-auth/topotune-priv),
    sysName = namespace name, and ifSpeed/ifHighSpeed of each port = the
    topology's link speed. BRIDGE-MIB's dot1dBasePortIfIndex, which snmpd
    does not implement, is served from snmpd.conf `override` lines (walkable:
    snmpd registers each as an instance): one row per port of br0, bridge
    port = ifIndex, and none for mgmt0, so a discovery can tell data ports
    (bridge ports) from an out-of-band management port.
  * with --mgmt-network, an out-of-band management network in 198.19.0.0/16
    (also inside 198.18.0.0/15), as most clusters have: a management switch
    <prefix>mgmt (br0 at 198.19.0.253, snmpd and lldpd like every switch,
    1 Gbit/s ports, unshaped) whose port m0 goes to the head's second NIC
    mgmt0 (198.19.0.254), m<i+1> to switch i's mgmt0 (198.19.0.<i+1>, not
    in its br0, so not a bridge port), then one port per host j for its
    second NIC eth1 (198.19.<1 + j/254>.<1 + j%254>). Switches' and hosts'
    lldpd run on these NICs too, so every switch has one more LLDP neighbour,
    the management switch, on mgmt0; the head can reach the management
    switch, as a crawl that wrongly followed management links would. A
    switch's snmpd also answers on its mgmt0 address. testbed.json records
    each node's management NIC under its "mgmt" key, and the management
    switch under the top-level "mgmt". No node of the topology may be named
    'mgmt', and it may have at most 252 switches.
  * topotune itself (unless --no-services): topotuned in the head namespace
    (gRPC on :50051, /metrics on :9464, its database and a random bearer
    token in the state directory), discovering the tree over SNMP from the
    first switch and launching benchmark jobs with the `mpirun` wrapper;
    `topotune-agent serve` on every host. `up` returns when topotuned sees
    every agent alive and a discovery that found every switch and host.
  * <state>/mpirun: Open MPI's mpirun run in the head namespace with the
    options a job on the testbed needs (rsh-agent, TCP on the data network
    198.18.0.0/16 only, never the management network; mpi_yield_when_idle
    because the emulated hosts share this machine's cores), usable from any
    namespace.
  * TCP in every namespace as on a Debian cluster, at the emulated time
    scale: congestion control cubic, Debian's default (reno, its behaviour
    at these small bandwidth-delay products, where this machine allows no
    cubic in namespaces: a warning says so), whatever this machine itself
    runs; and no slow-start restart after idle (tcp_slow_start_after_idle
    0). The restart waits for one retransmission timeout, at least 200 ms,
    which the emulation does not scale with the links: a connection idle for
    a few hundred milliseconds here, microseconds on the real cluster, would
    restart from ten segments.

Everything `up` creates is written to <state>/testbed.json as it is created,
so `down` removes exactly that, even after a half-finished `up`.

Test hook: TOPOTUNE_TESTBED_FAIL_AT=<step> makes `up` fail at that step
(namespaces, links, shaping, snmpd, lldpd, converge, services) to test the
cleanup.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Any, Callable, NoReturn

try:
    import yaml
except ImportError:  # Debian: python3-yaml
    yaml = None

PROG = "testbed"
DEFAULT_PREFIX = "tt-"
STATE_ROOT = "/run/topotune-testbed"
STATE_FILE = "testbed.json"

SUBNET = ipaddress.ip_network("198.18.0.0/16")
SAFE_RANGE = ipaddress.ip_network("198.18.0.0/15")
HEAD_IP = "198.18.0.254"
MAX_SWITCHES = 253  # 198.18.0.1 .. 198.18.0.253; .254 is the head
MAX_HOSTS = 254 * 254
HEAD_PORT = "p0"
BRIDGE = "br0"
NIC = "eth0"
HEAD_LINK_BPS = 10_000_000_000  # reported by snmpd; the head link is not shaped

# The management network (up --mgmt-network): a management switch <prefix>mgmt
# whose ports m1, m2, ... go to every switch's mgmt0 (not a bridge port), every
# host's second NIC eth1, and (m0) the head's mgmt0, in 198.19.0.0/16.
MGMT_SUBNET = ipaddress.ip_network("198.19.0.0/16")
MGMT_NAME = "mgmt"  # the management switch's node name; its namespace is <prefix>mgmt
MGMT_SWITCH_IP = "198.19.0.253"
MGMT_HEAD_IP = "198.19.0.254"
MGMT_MAX_SWITCHES = 252  # their mgmt0 is 198.19.0.<i+1>; .253 is the management switch
MGMT_MAX_PORTS = 1023  # a Linux bridge numbers its ports 1..1023
MGMT_HEAD_PORT = "m0"
MGMT_SWITCH_NIC = "mgmt0"  # a switch's out-of-band management port
MGMT_HOST_NIC = "eth1"  # a host's management NIC
MGMT_HEAD_NIC = "mgmt0"
MGMT_LINK_BPS = 1_000_000_000  # reported by snmpd; management links are not shaped

SERVICE_PORT = 50051  # topotuned's gRPC port in the head namespace
METRICS_PORT = 9464  # topotuned's /metrics port in the head namespace
BINARIES = ("topotuned", "topotune-agent")
# Where a CMake build tree keeps each binary, for --bin-dir BUILD.
BUILD_SUBDIRS = {"topotuned": "daemon/topotuned", "topotune-agent": "agent"}
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SNMP_COMMUNITY = "public"
SNMP_V3_USER = "topotune"
SNMP_V3_AUTH = "topotune-auth"
SNMP_V3_PRIV = "topotune-priv"

# OIDs the readiness checks use.
OID_LLDP_REM_SYSNAME = "1.0.8802.1.1.2.1.4.1.1.9"  # lldpRemSysName, in lldpRemTable
OID_IF_HIGH_SPEED = "1.3.6.1.2.1.31.1.1.1.15"  # ifHighSpeed (Mbit/s)
# dot1dBasePortIfIndex (BRIDGE-MIB), which snmpd serves from `override` lines:
# bridge port = ifIndex, for the ports of br0 only.
OID_BASE_PORT_IF_INDEX = "1.3.6.1.2.1.17.1.4.1.2"

HOSTNAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
NAME_RE = re.compile(r"^[A-Za-z0-9-]+$")
PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
IFNAMSIZ = 15  # longest Linux interface name
UNIX_PATH_MAX = 107  # sun_path holds 108 bytes with the terminating NUL

FAIL_AT_ENV = "TOPOTUNE_TESTBED_FAIL_AT"


class TestbedError(Exception):
    """An error for the user: printed as one message, never as a traceback."""


def log(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Topology files. The same format as tuner/topology_io.h, with its checks
# (names, speeds, a connected tree with hosts as leaves) and its style of
# errors: file:line: field: what is wrong; what is allowed.

SPEED_UNITS = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}
LATENCY_UNITS = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
NUMBER_UNIT_RE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")
SPEED_ALLOWED = "use a positive number with bps, Kbps, Mbps or Gbps (e.g. 1Gbps)"
LATENCY_ALLOWED = "use a number >= 0 with ns, us, ms or s (e.g. 5us), or 0"


def parse_speed(text: str) -> float | None:
    m = NUMBER_UNIT_RE.match(text)
    if not m or m.group(2).lower() not in SPEED_UNITS:
        return None
    value = float(m.group(1)) * SPEED_UNITS[m.group(2).lower()]
    return value if value > 0 else None


def parse_latency(text: str) -> float | None:
    m = NUMBER_UNIT_RE.match(text)
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2).lower()
    if value < 0:
        return None
    if unit == "":
        return 0.0 if value == 0 else None
    return value * LATENCY_UNITS[unit] if unit in LATENCY_UNITS else None


def speed_text(bps: float) -> str:
    for scale, unit in ((1e9, "Gbps"), (1e6, "Mbps"), (1e3, "Kbps")):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}bps"


class Topology:
    """Switches, hosts and links in file order, as read from a topology file."""

    def __init__(self, source: str):
        self.source = source
        self.switches: list[str] = []
        self.hosts: list[str] = []
        self.slots: dict[str, int] = {}
        self.line: dict[str, int] = {}  # node name -> line of its definition
        # Each link: dict(a, b, speed_bps, latency_s, line).
        self.links: list[dict[str, Any]] = []

    def is_switch(self, name: str) -> bool:
        return name in self.switches


class _TopologyReader:
    """Reads a composed YAML node tree; every error names file:line and field."""

    def __init__(self, source: str):
        self.source = source

    def error(self, node: Any, field: str, msg: str) -> NoReturn:
        line = node.start_mark.line + 1 if node is not None else 1
        raise TestbedError(f"{self.source}:{line}: {field}: {msg}")

    def scalar(self, node: Any, field: str, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
            self.error(node, field, f"expected {what}, found {self.describe(node)}")
        return str(node.value)

    @staticmethod
    def describe(node: Any) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a map"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        if node.tag == "tag:yaml.org,2002:null":
            return "nothing"
        return f"'{node.value}'"

    def mapping(self, node: Any, field: str, allowed: tuple[str, ...], hint: str) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            self.error(node, field, f"expected a map, found {self.describe(node)}; {hint}")
        out: dict[str, Any] = {}
        for key_node, value in node.value:
            key = self.scalar(key_node, field, "a key")
            if key not in allowed:
                self.error(key_node, f"{field}.{key}" if field else key,
                           f"unknown key '{key}'; {hint}")
            if key in out:
                self.error(key_node, f"{field}.{key}" if field else key, f"duplicate key '{key}'")
            out[key] = value
        return out

    def sequence(self, node: Any, field: str) -> list[Any]:
        if node is None or node.tag == "tag:yaml.org,2002:null":
            return []
        if not isinstance(node, yaml.SequenceNode):
            self.error(node, field, f"expected a list, found {self.describe(node)}")
        return list(node.value)

    def read(self, text: str) -> Topology:
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = mark.line + 1 if mark else 1
            raise TestbedError(f"{self.source}:{line}: not valid YAML: {getattr(e, 'problem', e)}") from None
        if root is None:
            raise TestbedError(f"{self.source}: the file is empty; it needs switches, hosts and links")
        top = self.mapping(root, "", ("switches", "hosts", "links"),
                           "the top level allows switches, hosts and links")
        t = Topology(self.source)
        for i, entry in enumerate(self.sequence(top.get("switches"), "switches")):
            f = self.mapping(entry, f"switches[{i}]", ("name",), "a switch is {name: s0}")
            if "name" not in f:
                self.error(entry, f"switches[{i}].name", "missing; a switch is {name: s0}")
            self.add_node(t, f["name"], f"switches[{i}].name", switch=True)
        for i, entry in enumerate(self.sequence(top.get("hosts"), "hosts")):
            f = self.mapping(entry, f"hosts[{i}]", ("name", "slots"), "a host is {name: n0, slots: 2}")
            if "name" not in f:
                self.error(entry, f"hosts[{i}].name", "missing; a host is {name: n0, slots: 2}")
            name = self.add_node(t, f["name"], f"hosts[{i}].name", switch=False)
            slots = 1
            if "slots" in f:
                text = self.scalar(f["slots"], f"hosts[{i}].slots", "an integer")
                if not re.fullmatch(r"\d+", text) or not 1 <= int(text) <= 65536:
                    self.error(f["slots"], f"hosts[{i}].slots",
                               f"slots '{text}' is not an integer from 1 to 65536")
                slots = int(text)
            t.slots[name] = slots
        for i, entry in enumerate(self.sequence(top.get("links"), "links")):
            t.links.append(self.read_link(t, entry, f"links[{i}]"))
        if not t.switches:
            raise TestbedError(f"{self.source}: switches: the topology has no switches; "
                               "the testbed needs at least one")
        if not t.hosts:
            raise TestbedError(f"{self.source}: hosts: the topology has no hosts; at least one is required")
        check_tree(t)
        return t

    def add_node(self, t: Topology, node: Any, field: str, switch: bool) -> str:
        name = self.scalar(node, field, "a name")
        if not NAME_RE.fullmatch(name):
            self.error(node, field, f"name '{name}' cannot be a hostname; use letters, digits "
                       "and '-' (namespace names become hostnames, which allow no '_')")
        if name == "head":
            self.error(node, field, "'head' is the testbed's head node; rename this node")
        if name in t.line:
            self.error(node, field, f"duplicate name '{name}' (first defined at line {t.line[name]}); "
                       "switch and host names must be unique")
        t.line[name] = node.start_mark.line + 1
        (t.switches if switch else t.hosts).append(name)
        return name

    def read_link(self, t: Topology, entry: Any, field: str) -> dict[str, Any]:
        hint = "write a link as [n0, s0, 1Gbps], [n0, s0, 1Gbps, 5us] or {a: n0, b: s0, speed: 1Gbps, latency: 5us}"
        if isinstance(entry, yaml.SequenceNode):
            parts = list(entry.value)
            if len(parts) not in (3, 4):
                self.error(entry, field, f"expected 3 or 4 items, found {len(parts)}; {hint}")
            names = dict(zip(("a", "b", "speed", "latency"), parts))
            sub = {k: f"{field}[{i}]" for i, k in enumerate(("a", "b", "speed", "latency"))}
        else:
            names = self.mapping(entry, field, ("a", "b", "speed", "latency"), hint)
            for key in ("a", "b", "speed"):
                if key not in names:
                    self.error(entry, f"{field}.{key}", "missing; a link map needs a, b and speed "
                               "(latency is optional)")
            sub = {k: f"{field}.{k}" for k in ("a", "b", "speed", "latency")}
        ends = []
        for key in ("a", "b"):
            name = self.scalar(names[key], sub[key], "a switch or host name")
            if name not in t.line:
                self.error(names[key], sub[key], f"'{name}' is not a declared switch or host")
            ends.append(name)
        text = self.scalar(names["speed"], sub["speed"], "a speed such as 1Gbps")
        speed = parse_speed(text)
        if speed is None:
            self.error(names["speed"], sub["speed"], f"speed '{text}' is not a positive speed; {SPEED_ALLOWED}")
        latency = 0.0
        if "latency" in names:
            text = self.scalar(names["latency"], sub["latency"], "a latency such as 5us")
            value = parse_latency(text)
            if value is None:
                self.error(names["latency"], sub["latency"], f"latency '{text}' is not a latency; {LATENCY_ALLOWED}")
            latency = value
        if ends[0] == ends[1]:
            self.error(entry, field, f"link connects '{ends[0]}' to itself; a link joins two different nodes")
        speed = int(speed) if float(speed).is_integer() else speed
        return {"a": ends[0], "b": ends[1], "speed_bps": speed, "latency_s": latency,
                "line": entry.start_mark.line + 1}


def check_tree(t: Topology) -> None:
    """Hosts are leaves, and the links form one tree over all nodes."""
    where = t.source
    degree: dict[str, list[dict[str, Any]]] = {n: [] for n in t.line}
    for link in t.links:
        degree[link["a"]].append(link)
        degree[link["b"]].append(link)
    for h in t.hosts:
        if len(degree[h]) > 1:
            lines = ", ".join(str(link["line"]) for link in degree[h])
            raise TestbedError(f"{where}:{t.line[h]}: links: host '{h}' has {len(degree[h])} links "
                               f"(lines {lines}); hosts must be leaves with exactly one link to a switch")
        if degree[h] and not any(t.is_switch(n) for n in (degree[h][0]["a"], degree[h][0]["b"])):
            raise TestbedError(f"{where}:{degree[h][0]['line']}: links: '{degree[h][0]['a']}' and "
                               f"'{degree[h][0]['b']}' are both hosts; a host connects to a switch")
    parent = {n: n for n in t.line}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for link in t.links:
        ra, rb = find(link["a"]), find(link["b"])
        if ra == rb:
            raise TestbedError(f"{where}:{link['line']}: links: [{link['a']}, {link['b']}] closes a cycle; "
                               "the network must be a tree (remove a link, e.g. one blocked by spanning tree)")
        parent[ra] = rb
    first = t.switches[0]
    for n in list(t.switches) + list(t.hosts):
        if find(n) != find(first):
            kind = "host" if n in t.slots else "switch"
            raise TestbedError(f"{where}:{t.line[n]}: links: {kind} '{n}' is not connected to '{first}'; "
                               "the network must be connected (add a link)")


def load_topology(path: str) -> Topology:
    if yaml is None:
        raise TestbedError("python3-yaml is missing (Debian package python3-yaml)")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise TestbedError(f"cannot read topology file '{path}': {e.strerror}") from None
    return _TopologyReader(path).read(text)


# ---------------------------------------------------------------------------
# The plan: every name, address and port, computed from the topology alone.
# It is the skeleton of testbed.json; `up` adds ifindexes, PIDs and timings.

def mac(kind: int, a: int, b: int) -> str:
    """A fixed, locally administered MAC: 02:74:74 ("tt"), then kind, a, b."""
    return f"02:74:74:{kind:02x}:{a:02x}:{b:02x}"


MAC_BRIDGE, MAC_SWITCH_PORT, MAC_HOST, MAC_HEAD = 1, 2, 3, 4
# The management network's: its switch's bridge and ports, the switches' mgmt0
# and the hosts' eth1 (the head's mgmt0 is MAC_HEAD 0:1).
MAC_MGMT_BRIDGE, MAC_MGMT_PORT, MAC_SWITCH_MGMT, MAC_HOST_MGMT = 5, 6, 7, 8


def host_ip(j: int, subnet: str = "198.18") -> str:
    return f"{subnet}.{1 + j // 254}.{1 + j % 254}"


def make_plan(t: Topology, prefix: str, mgmt_network: bool = False) -> dict[str, Any]:
    if not PREFIX_RE.fullmatch(prefix):
        raise TestbedError(f"prefix '{prefix}' is not allowed; it starts a hostname: use letters, digits "
                           "and '-' (no '_'), starting with a letter or digit")
    if len(t.switches) > MAX_SWITCHES:
        raise TestbedError(f"{t.source}: switches: {len(t.switches)} switches; the testbed's address plan "
                           f"allows at most {MAX_SWITCHES}")
    if len(t.hosts) > MAX_HOSTS:
        raise TestbedError(f"{t.source}: hosts: {len(t.hosts)} hosts; the testbed allows at most {MAX_HOSTS}")
    if mgmt_network:
        if MGMT_NAME in t.line:
            raise TestbedError(f"{t.source}:{t.line[MGMT_NAME]}: '{MGMT_NAME}' is the management switch of "
                               "--mgmt-network; rename this node")
        if len(t.switches) > MGMT_MAX_SWITCHES:
            raise TestbedError(f"{t.source}: switches: {len(t.switches)} switches; with --mgmt-network the "
                               f"address plan allows at most {MGMT_MAX_SWITCHES}")
        if 1 + len(t.switches) + len(t.hosts) > MGMT_MAX_PORTS:
            raise TestbedError(f"{t.source}: {len(t.switches)} switches and {len(t.hosts)} hosts need "
                               f"{1 + len(t.switches) + len(t.hosts)} ports on the management switch "
                               f"(with the head's); a Linux bridge has at most {MGMT_MAX_PORTS}")
    names = ["head"] + t.switches + t.hosts + ([MGMT_NAME] if mgmt_network else [])
    for name in names:
        ns = prefix + name
        if not HOSTNAME_RE.fullmatch(ns):
            raise TestbedError(f"prefix '{prefix}' is too long: namespace '{ns}' has {len(ns)} characters, "
                               "and a namespace name is a hostname (at most 63, no trailing '-'). "
                               "Interface names (at most 15) never contain the prefix.")
    root = t.switches[0]
    switches: dict[str, Any] = {}
    for i, s in enumerate(t.switches):
        switches[s] = {"namespace": prefix + s, "index": i, "ip": f"198.18.0.{i + 1}", "bridge": BRIDGE,
                       "mac": mac(MAC_BRIDGE, i >> 8, i & 0xFF), "ports": {}}
    hosts: dict[str, Any] = {}
    for j, h in enumerate(t.hosts):
        hosts[h] = {"namespace": prefix + h, "index": j, "ip": host_ip(j), "interface": NIC,
                    "mac": mac(MAC_HOST, j >> 8, j & 0xFF), "slots": t.slots[h]}
    head = {"namespace": prefix + "head", "ip": HEAD_IP, "interface": NIC, "mac": mac(MAC_HEAD, 0, 0),
            "switch": root, "switch_port": HEAD_PORT}

    def new_port(s: str, number: int | None = None) -> str:
        ports = switches[s]["ports"]
        n = len(ports) + (0 if HEAD_PORT in ports else 1) if number is None else number
        if n > 0xFF:
            raise TestbedError(f"switch '{s}' has more than 255 links; the testbed allows at most 255")
        name = f"p{n}"
        assert len(name) <= IFNAMSIZ
        ports[name] = {"mac": mac(MAC_SWITCH_PORT, switches[s]["index"], n)}
        return name

    p0 = new_port(root, 0)
    switches[root]["ports"][p0].update(peer="head", peer_namespace=head["namespace"], peer_interface=NIC,
                                       speed_bps=HEAD_LINK_BPS, latency_s=0.0, shaped=False)
    links = []
    for link in t.links:
        ifs: dict[str, str] = {}
        for end in (link["a"], link["b"]):
            ifs[end] = new_port(end) if end in switches else NIC
        for end, other in ((link["a"], link["b"]), (link["b"], link["a"])):
            peer_ns = switches[other]["namespace"] if other in switches else hosts[other]["namespace"]
            if end in switches:
                switches[end]["ports"][ifs[end]].update(
                    peer=other, peer_namespace=peer_ns, peer_interface=ifs[other],
                    speed_bps=link["speed_bps"], latency_s=link["latency_s"], shaped=True)
            else:
                hosts[end].update(switch=other, switch_port=ifs[other], speed_bps=link["speed_bps"],
                                  latency_s=link["latency_s"])
        links.append({"a": link["a"], "b": link["b"], "speed_bps": link["speed_bps"],
                      "latency_s": link["latency_s"], "line": link["line"], "interfaces": ifs})
    plan = {"version": 1, "prefix": prefix, "topology": os.path.abspath(t.source), "subnet": str(SUBNET),
            "head": head, "switches": switches, "hosts": hosts, "links": links}
    if mgmt_network:
        plan.update(mgmt_subnet=str(MGMT_SUBNET), mgmt=make_mgmt_plan(plan, prefix))
    return plan


def make_mgmt_plan(plan: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The management switch, and each node's "mgmt" NIC (added to the
    plan's switches, hosts and head): port m0 is the head's mgmt0, m<i+1>
    switch i's mgmt0 (198.19.0.<i+1>), then one port per host for its eth1
    (198.19.<1 + j/254>.<1 + j%254>). A switch's mgmt0 is not in its br0."""
    ports: dict[str, Any] = {}
    mgmt = {"namespace": prefix + MGMT_NAME, "ip": MGMT_SWITCH_IP, "bridge": BRIDGE,
            "mac": mac(MAC_MGMT_BRIDGE, 0, 0), "ports": ports}

    def plug(number: int, peer: str, node: dict[str, Any], interface: str, ip: str, nic_mac: str) -> None:
        port = f"m{number}"
        assert len(port) <= IFNAMSIZ
        ports[port] = {"mac": mac(MAC_MGMT_PORT, number >> 8, number & 0xFF), "peer": peer,
                       "peer_namespace": node["namespace"], "peer_interface": interface,
                       "speed_bps": MGMT_LINK_BPS, "latency_s": 0.0, "shaped": False}
        node["mgmt"] = {"interface": interface, "ip": ip, "mac": nic_mac, "switch": MGMT_NAME,
                        "switch_port": port, "speed_bps": MGMT_LINK_BPS}

    plug(0, "head", plan["head"], MGMT_HEAD_NIC, MGMT_HEAD_IP, mac(MAC_HEAD, 0, 1))
    for s, sw in plan["switches"].items():
        i = sw["index"]
        plug(1 + i, s, sw, MGMT_SWITCH_NIC, f"198.19.0.{i + 1}", mac(MAC_SWITCH_MGMT, i >> 8, i & 0xFF))
    first_host_port = 1 + len(plan["switches"])
    for h, node in plan["hosts"].items():
        j = node["index"]
        plug(first_host_port + j, h, node, MGMT_HOST_NIC, host_ip(j, "198.19"), mac(MAC_HOST_MGMT, j >> 8, j & 0xFF))
    return mgmt


def namespace_of(plan: dict[str, Any], name: str) -> str:
    return node_of(plan, name)["namespace"]


def node_of(plan: dict[str, Any], name: str) -> dict[str, Any]:
    """The head, a switch, a host, or (--mgmt-network) the management switch."""
    if name == "head":
        return plan["head"]
    node = plan["switches"].get(name) or plan["hosts"].get(name)
    if node is None and name == MGMT_NAME and plan.get("mgmt"):
        node = plan["mgmt"]
    return node


def switch_nodes(plan: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every emulated switch (a bridge br0 with snmpd and lldpd): the
    topology's in file order, then the management switch if there is one."""
    out = list(plan["switches"].items())
    if plan.get("mgmt"):
        out.append((MGMT_NAME, plan["mgmt"]))
    return out


def all_namespaces(plan: dict[str, Any]) -> list[str]:
    return ([plan["head"]["namespace"]] + [s["namespace"] for s in plan["switches"].values()]
            + [h["namespace"] for h in plan["hosts"].values()]
            + ([plan["mgmt"]["namespace"]] if plan.get("mgmt") else []))


# ---------------------------------------------------------------------------
# Commands and processes.

class Shell:
    """Runs commands; `verbose` echoes each one to stderr."""

    def __init__(self, verbose: bool = False):
        self.verbose = verbose

    def run(self, argv: list[str], check: bool = True, timeout: float = 60,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        if self.verbose:
            log("+ " + shlex.join(argv))
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                               stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise TestbedError(f"command not found: {argv[0]}") from None
        except subprocess.TimeoutExpired:
            raise TestbedError(f"command timed out after {timeout:g} s: {shlex.join(argv)}") from None
        if check and p.returncode != 0:
            detail = (p.stderr or p.stdout).strip()
            raise TestbedError(f"command failed (exit {p.returncode}): {shlex.join(argv)}"
                               + (f"\n  {detail}" if detail else ""))
        return p

    def ip(self, ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(["ip", "-n", ns, *args], check=check)

    def in_ns(self, ns: str, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run(["ip", "netns", "exec", ns, *argv], **kw)


def with_hostname(ns: str, argv: list[str]) -> list[str]:
    """argv run in namespace `ns` in its own UTS namespace whose hostname is `ns`
    (lldpd, snmpd and MPI read the hostname; the machine's stays untouched)."""
    return ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', ns, *argv]


def proc_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat),
    which tells a process from a later one that reuses its PID; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return None
    return int(fields[19])


def proc_alive(pid: int, start_time: int) -> bool:
    try:  # reap it if it is our own child (`up` cleaning up after itself)
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return proc_start_time(pid) == start_time


def proc_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def netns_exists(ns: str) -> bool:
    return os.path.exists(f"/run/netns/{ns}")


# ---------------------------------------------------------------------------
# State: testbed.json, rewritten atomically after everything `up` creates.

def default_state_dir(prefix: str) -> str:
    return os.path.join(STATE_ROOT, prefix)


class State:
    def __init__(self, state_dir: str, data: dict[str, Any]):
        self.dir = state_dir
        self.data = data

    @property
    def path(self) -> str:
        return os.path.join(self.dir, STATE_FILE)

    def file(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def save(self) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=2)
            f.write("\n")
        os.replace(tmp, self.path)

    @staticmethod
    def load(state_dir: str) -> State | None:
        try:
            with open(os.path.join(state_dir, STATE_FILE), encoding="utf-8") as f:
                return State(state_dir, json.load(f))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise TestbedError(f"cannot read {os.path.join(state_dir, STATE_FILE)}: {e}") from None


# ---------------------------------------------------------------------------
# up

def tbf_params(speed_bps: float) -> list[str]:
    """tbf at the link speed. The bucket holds 1 ms of traffic (at least four
    full frames, so small rates still pass whole packets); the queue holds
    20 ms, about what a switch port buffers."""
    rate_bytes = speed_bps / 8
    burst = max(int(rate_bytes * 0.001), 4 * 1514)
    return ["tbf", "rate", f"{int(speed_bps)}bit", "burst", str(burst), "latency", "20ms"]


def snmpd_conf(state: State, s: str, sw: dict[str, Any]) -> str:
    """snmpd.conf of switch `s` (a topology switch or the management switch)."""
    addresses = [sw["ip"]] + ([sw["mgmt"]["ip"]] if "mgmt" in sw else []) + ["127.0.0.1"]
    lines = [
        f"# snmpd of emulated switch {s} (namespace {sw['namespace']}), written by testbed.py up.",
        "agentAddress " + ",".join(f"udp:{a}:161" for a in addresses),
        "master agentx",
        f"agentXSocket {state.file(sw['namespace'] + '.agentx')}",
        f"rocommunity {SNMP_COMMUNITY} {SAFE_RANGE}",
        f"rocommunity {SNMP_COMMUNITY} 127.0.0.1",
        f"createUser {SNMP_V3_USER} SHA {SNMP_V3_AUTH} AES {SNMP_V3_PRIV}",
        f"rouser {SNMP_V3_USER} priv",
        f"sysName {sw['namespace']}",
        "sysLocation topotune emulated testbed",
        "sysContact root",
        "sysServices 2",  # a layer-2 device: a bridge
        "dontLogTCPWrappersConnects yes",
        "# ifType 6 (ethernetCsmacd) and the topology's speed: veths report 10 Gbit/s.",
    ]
    for port, p in sw["ports"].items():
        lines.append(f"interface {port} 6 {int(p['speed_bps'])}")
    if "mgmt" in sw:
        lines.append(f"interface {sw['mgmt']['interface']} 6 {int(sw['mgmt']['speed_bps'])}")
    lines.append("# BRIDGE-MIB dot1dBasePortIfIndex, which snmpd does not implement: bridge port = ifIndex, for")
    lines.append("# the ports of br0 only (never mgmt0: it is the out-of-band management port). The rows are")
    lines.append("# registered instances, which GETNEXT and GETBULK walks return.")
    for p in sw["ports"].values():
        lines.append(f"override .{OID_BASE_PORT_IF_INDEX}.{p['ifindex']} integer {p['ifindex']}")
    return "\n".join(lines) + "\n"


def mpirun_args(rsh_agent: str) -> list[str]:
    """Open MPI options that run a job across the testbed from its head node."""
    return ["--allow-run-as-root", "--mca", "plm_rsh_agent", rsh_agent,
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", str(SUBNET), "--mca", "oob_tcp_if_include", str(SUBNET),
            "--mca", "mpi_yield_when_idle", "1"]


def topotuned_conf(state: State, seed: str, server: str, agent: str) -> str:
    """topotuned's configuration: gRPC and /metrics on every address of the
    head namespace (loopback there is the admin's way in, without the token),
    discovery from the first switch, benchmark jobs through the testbed's
    mpirun wrapper."""
    def q(text: str) -> str:
        return json.dumps(text)  # a JSON string is a YAML string
    launcher = (f"{state.file('mpirun')} -np {{np}} --hostfile {{hostfile}} "
                f"--map-by ppr:{{ranks_per_node}}:node {{command}}")
    return "\n".join([
        "# topotuned on the testbed's head node (written by testbed.py up).",
        f"listen: 0.0.0.0:{SERVICE_PORT}",
        f"metrics_listen: 0.0.0.0:{METRICS_PORT}",
        f"database: {q(state.file('topotune.db'))}",
        f"token_file: {q(state.file('token'))}",
        "agent_timeout: 10s",
        "discovery:",
        f"  seeds: [{q(seed)}]",
        f"  community: {SNMP_COMMUNITY}",
        "  timeout: 1s",
        "  retries: 2",
        "tuning:",
        f"  launcher: {q(launcher)}",
        "  job_timeout: 900s",
        "  point_timeout: 120s",
        f"  agent_command: {q(agent)}",
        f"  server_address: {q(server)}",
        "",
    ])


def parse_metrics(text: str) -> dict[str, float]:
    """Unlabelled samples of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and "{" not in parts[0]:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def fetch_metrics_text(sh: "Shell", d: dict[str, Any]) -> str | None:
    """topotuned's /metrics, read from inside the head namespace; None when
    it does not answer."""
    url = f"http://127.0.0.1:{METRICS_PORT}/metrics"
    code = ("import sys, urllib.request\n"
            "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())")
    p = sh.in_ns(d["head"]["namespace"], [sys.executable, "-c", code, url], check=False)
    return p.stdout if p.returncode == 0 else None


def fetch_metrics(sh: "Shell", d: dict[str, Any]) -> dict[str, float] | None:
    """topotuned's unlabelled metrics; None when it does not answer."""
    text = fetch_metrics_text(sh, d)
    return parse_metrics(text) if text is not None else None


def find_binaries(bin_dir: str | None) -> dict[str, str]:
    """Absolute paths of topotuned and topotune-agent: in --bin-dir (a
    directory holding them, or a CMake build tree), else on PATH, else in the
    repository's build/ tree."""
    found = {}
    for name in BINARIES:
        candidates = []
        if bin_dir:
            candidates = [os.path.join(bin_dir, name), os.path.join(bin_dir, BUILD_SUBDIRS[name], name)]
        else:
            on_path = shutil.which(name)
            candidates = ([on_path] if on_path else []) + [os.path.join(REPO_ROOT, "build", BUILD_SUBDIRS[name],
                                                                                name)]
        path = next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)
        if path is None:
            raise TestbedError(f"{name} not found (looked at {', '.join(candidates)}); build topotune, pass "
                               "--bin-dir DIR (a directory or a CMake build tree), or use --no-services")
        found[name] = os.path.abspath(path)
    return found


def lldpd_conf(ns: str, kind: str) -> str:
    lines = [f"# lldpd of {ns} ({kind}), written by testbed.py up.",
             f"configure system hostname {ns}",
             "configure lldp tx-interval 1"]
    if kind == "switch":
        # Like most switches: the port id is the interface name (p1, p2, ...).
        lines.append("configure lldp portidsubtype ifname")
        lines.append("configure system capabilities enabled bridge")
    return "\n".join(lines) + "\n"


class Bringup:
    """The steps of `up`. Each records what it creates in the state before
    going on, so that a failure at any point can be undone by `down`."""

    def __init__(self, state: State, sh: Shell, opts: argparse.Namespace):
        self.state = state
        self.sh = sh
        self.opts = opts
        self.d = state.data
        self.children: list[subprocess.Popen[bytes]] = []
        self.fail_at = os.environ.get(FAIL_AT_ENV, "")
        self.bridge_mib_ok: set[str] = set()  # switch namespaces whose dot1dBasePortIfIndex is right

    def step(self, name: str) -> None:
        if self.fail_at == name:
            raise TestbedError(f"failing at step '{name}' as {FAIL_AT_ENV} asks")

    def run(self) -> None:
        t0 = time.monotonic()
        self.step("namespaces")
        self.create_namespaces()
        self.step("links")
        self.create_links()
        self.read_ifindexes()
        self.state.save()
        self.step("shaping")
        if self.opts.shape:
            self.shape()
        self.check_ping()
        self.write_helpers()
        self.step("snmpd")
        if self.opts.snmp:
            self.start_snmpd()
        self.step("lldpd")
        if self.opts.lldp:
            self.start_lldpd()
        self.step("converge")
        t1 = time.monotonic()
        self.wait_converged(t1 + self.opts.timeout)
        self.d["convergence_s"] = round(time.monotonic() - t1, 2)
        if self.opts.services:
            self.step("services")
            self.start_services()
            t2 = time.monotonic()
            self.wait_services(t2 + self.opts.timeout)
            self.d["services_ready_s"] = round(time.monotonic() - t2, 2)
        self.d["setup_s"] = round(time.monotonic() - t0, 2)
        self.d["status"] = "up"
        self.state.save()

    # -- network ------------------------------------------------------------

    def tcp_settings(self) -> list[str]:
        """The sysctls of every namespace's TCP (see the module comment)."""
        with open("/proc/sys/net/ipv4/tcp_allowed_congestion_control") as f:
            allowed = f.read().split()
        cc = "cubic" if "cubic" in allowed else "reno"
        if cc != "cubic":
            warning = (f"this machine allows no cubic congestion control in network namespaces "
                       f"(tcp_allowed_congestion_control: {' '.join(allowed)}): the testbed's TCP runs reno")
            log(f"warning: {warning}")
            self.d["warnings"].append(warning)
        self.d["tcp"] = {"congestion_control": cc, "slow_start_after_idle": 0}
        return [f"net.ipv4.tcp_congestion_control={cc}", "net.ipv4.tcp_slow_start_after_idle=0"]

    def create_namespaces(self) -> None:
        tcp = self.tcp_settings()
        for ns in all_namespaces(self.d):
            log(f"creating namespace {ns}")
            # Recorded first: if `up` dies right after creating it, `down`
            # still finds it (and skips it if it was never created).
            self.d["namespaces"].append(ns)
            self.state.save()
            try:
                self.sh.run(["ip", "netns", "add", ns])
            except TestbedError:
                self.d["namespaces"].pop()  # not ours: never delete it
                self.state.save()
                raise
            self.sh.ip(ns, "link", "set", "lo", "up")
            # IPv4 only: no IPv6 link-local addresses in LLDP management
            # addresses, and no IPv6 chatter on the shaped links.
            self.sh.in_ns(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                               "net.ipv6.conf.default.disable_ipv6=1"], check=False)
            self.sh.in_ns(ns, ["sysctl", "-q", "-w", *tcp])
        for s, sw in switch_nodes(self.d):
            ns = sw["namespace"]
            prefixlen = MGMT_SUBNET.prefixlen if sw is self.d.get("mgmt") else SUBNET.prefixlen
            self.sh.ip(ns, "link", "add", BRIDGE, "address", sw["mac"], "type", "bridge",
                       "stp_state", "0", "mcast_snooping", "0")
            self.sh.ip(ns, "addr", "add", f"{sw['ip']}/{prefixlen}", "dev", BRIDGE)
            self.sh.ip(ns, "link", "set", BRIDGE, "up")

    def veth(self, ns_a: str, if_a: str, mac_a: str, ns_b: str, if_b: str, mac_b: str) -> None:
        # Created inside the namespaces, so names never meet in the root namespace.
        self.sh.ip(ns_a, "link", "add", if_a, "address", mac_a, "type", "veth",
                   "peer", "name", if_b, "address", mac_b, "netns", ns_b)

    def attach(self, ns: str, ifname: str, is_switch: bool, ip: str | None = None,
               prefixlen: int = SUBNET.prefixlen) -> None:
        if is_switch:
            self.sh.ip(ns, "link", "set", ifname, "master", BRIDGE)
        if ip:
            self.sh.ip(ns, "addr", "add", f"{ip}/{prefixlen}", "dev", ifname)
        self.sh.ip(ns, "link", "set", ifname, "up")

    def create_links(self) -> None:
        sws, hosts, head = self.d["switches"], self.d["hosts"], self.d["head"]
        root = sws[head["switch"]]
        log(f"linking head {head['namespace']}:{NIC} <-> {head['switch']}:{HEAD_PORT} (unshaped)")
        self.veth(root["namespace"], HEAD_PORT, root["ports"][HEAD_PORT]["mac"],
                  head["namespace"], NIC, head["mac"])
        self.attach(root["namespace"], HEAD_PORT, True)
        self.attach(head["namespace"], NIC, False, head["ip"])
        for link in self.d["links"]:
            a, b = link["a"], link["b"]
            ends = []
            for n in (a, b):
                ifname = link["interfaces"][n]
                if n in sws:
                    ends.append((sws[n]["namespace"], ifname, sws[n]["ports"][ifname]["mac"], True, None))
                else:
                    ends.append((hosts[n]["namespace"], ifname, hosts[n]["mac"], False, hosts[n]["ip"]))
            log(f"linking {a}:{ends[0][1]} <-> {b}:{ends[1][1]} ({speed_text(link['speed_bps'])})")
            self.veth(ends[0][0], ends[0][1], ends[0][2], ends[1][0], ends[1][1], ends[1][2])
            for ns, ifname, _, is_switch, ip in ends:
                self.attach(ns, ifname, is_switch, ip)
        # After the data links, so that each node's first interface (whose MAC
        # lldpd takes as the chassis ID) is the same as without them.
        if self.d.get("mgmt"):
            self.create_mgmt_links()

    def create_mgmt_links(self) -> None:
        """The management network: every port of the management switch to a
        node's management NIC (a switch's mgmt0 stays out of its br0)."""
        mg = self.d["mgmt"]
        log(f"linking the management network: {len(mg['ports'])} ports of {mg['namespace']} (unshaped)")
        for port, p in mg["ports"].items():
            nic = node_of(self.d, p["peer"])["mgmt"]
            if self.opts.verbose:
                log(f"linking {MGMT_NAME}:{port} <-> {p['peer']}:{nic['interface']} ({nic['ip']})")
            self.veth(mg["namespace"], port, p["mac"], p["peer_namespace"], nic["interface"], nic["mac"])
            self.attach(mg["namespace"], port, True)
            self.attach(p["peer_namespace"], nic["interface"], False, nic["ip"], MGMT_SUBNET.prefixlen)

    def read_ifindexes(self) -> None:
        """ifIndex of every switch port and NIC: lldpRemLocalPortNum and the
        IF-MIB tables are indexed by it."""
        def indexes(ns: str) -> dict[str, int]:
            out = json.loads(self.sh.ip(ns, "-j", "link", "show").stdout)
            return {i["ifname"]: i["ifindex"] for i in out}
        for _, sw in switch_nodes(self.d):
            idx = indexes(sw["namespace"])
            for port, p in sw["ports"].items():
                p["ifindex"] = idx[port]
            if "mgmt" in sw:
                sw["mgmt"]["ifindex"] = idx[sw["mgmt"]["interface"]]
        for node in list(self.d["hosts"].values()) + [self.d["head"]]:
            idx = indexes(node["namespace"])
            node["ifindex"] = idx[NIC]
            if "mgmt" in node:
                node["mgmt"]["ifindex"] = idx[node["mgmt"]["interface"]]

    def shape_one(self, ns: str, ifname: str, speed_bps: float, latency_s: float) -> None:
        tbf = tbf_params(speed_bps)
        if latency_s > 0:
            delay = f"{latency_s * 1e6:g}us"
            p = self.sh.run(["tc", "-n", ns, "qdisc", "replace", "dev", ifname, "root", "handle", "1:",
                             "netem", "delay", delay], check=False)
            if p.returncode == 0:
                self.sh.run(["tc", "-n", ns, "qdisc", "replace", "dev", ifname, "parent", "1:1",
                             "handle", "10:", *tbf])
                return
            warning = ("link latency is not emulated: the kernel has no netem qdisc "
                       f"(tc said: {p.stderr.strip()})")
            if warning not in self.d["warnings"]:
                log(f"warning: {warning}")
                self.d["warnings"].append(warning)
        self.sh.run(["tc", "-n", ns, "qdisc", "replace", "dev", ifname, "root", *tbf])

    def shape(self) -> None:
        sws, hosts = self.d["switches"], self.d["hosts"]
        for link in self.d["links"]:
            log(f"shaping {link['a']} <-> {link['b']} to {speed_text(link['speed_bps'])} (tbf, both ends)")
            for n in (link["a"], link["b"]):
                ns = sws[n]["namespace"] if n in sws else hosts[n]["namespace"]
                self.shape_one(ns, link["interfaces"][n], link["speed_bps"], link["latency_s"])
        self.d["shaped"] = True

    def check_ping(self) -> None:
        targets = [s["ip"] for s in self.d["switches"].values()] + [h["ip"] for h in self.d["hosts"].values()]
        if self.d.get("mgmt"):  # through the head's mgmt0
            targets += [self.d["mgmt"]["ip"]] + [n["mgmt"]["ip"] for n in
                                                 list(self.d["switches"].values()) + list(self.d["hosts"].values())]
        log(f"pinging {len(targets)} addresses from the head")
        replies = ping_from(self.sh, self.d["head"]["namespace"], targets, timeout=10)
        missing = [ip for ip, rtt in replies.items() if rtt is None]
        if missing:
            raise TestbedError(f"no ping reply from the head to {', '.join(missing)}")

    def write_helpers(self) -> None:
        """Files for later users: an Open MPI hostfile, a hosts(5) file, and
        an Open MPI launch agent (--mca plm_rsh_agent) that works like ssh."""
        hosts = self.d["hosts"]
        with open(self.state.file("hostfile"), "w") as f:
            for h in hosts.values():
                f.write(f"{h['namespace']} slots={h['slots']}\n")
        with open(self.state.file("hosts"), "w") as f:
            f.write(f"{self.d['head']['ip']} {self.d['head']['namespace']}\n")
            for name, node in list(self.d["switches"].items()) + list(hosts.items()):
                f.write(f"{node['ip']} {node['namespace']} {name}\n")
            if self.d.get("mgmt"):
                f.write(f"{self.d['mgmt']['ip']} {self.d['mgmt']['namespace']} {MGMT_NAME}\n")
        agent = self.state.file("rsh-agent")
        with open(agent, "w") as f:
            f.write("#!/bin/sh\n# Open MPI launch agent for this testbed: runs the command in the named\n"
                    "# namespace with the words joined and run by sh -c, as ssh does.\n"
                    f"exec {shlex.quote(sys.executable)} {shlex.quote(os.path.abspath(__file__))} "
                    f"--state {shlex.quote(self.state.dir)} exec --shell \"$@\"\n")
        os.chmod(agent, 0o755)
        wrapper = self.state.file("mpirun")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n# mpirun for this testbed, from any namespace: runs in the head node's namespace,\n"
                    "# starts ranks through rsh-agent and keeps MPI traffic on the testbed's links.\n"
                    "# mpi_yield_when_idle: the emulated hosts share this machine's cores, so a\n"
                    "# rank that polls must let the others run (a real host has cores of its own).\n"
                    f"exec ip netns exec {shlex.quote(self.d['head']['namespace'])} mpirun "
                    + " ".join(shlex.quote(a) for a in mpirun_args(agent)) + ' "$@"\n')
        os.chmod(wrapper, 0o755)

    # -- daemons ------------------------------------------------------------

    def spawn(self, what: str, ns: str, argv: list[str], logfile: str,
              env: dict[str, str] | None = None) -> None:
        log(f"starting {what} on {ns}")
        if self.opts.verbose:
            log("+ " + shlex.join(argv))
        with open(logfile, "ab") as out:
            # A session of its own: the daemons outlive `up` and ignore the
            # terminal's signals. ip netns exec, unshare and sh all exec, so
            # the PID is the daemon's.
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, env=env)
        self.children.append(p)
        start = proc_start_time(p.pid)
        self.d["processes"].append({"pid": p.pid, "start_time": start, "what": what, "namespace": ns,
                                    "log": logfile})
        self.state.save()
        if start is None:
            raise TestbedError(f"{what} on {ns} exited at once; see {logfile}")

    def start_snmpd(self) -> None:
        for s, sw in switch_nodes(self.d):
            ns = sw["namespace"]
            conf = self.state.file(f"{ns}.snmpd.conf")
            with open(conf, "w") as f:
                f.write(snmpd_conf(self.state, s, sw))
            persist = self.state.file(f"{ns}.snmp")
            os.makedirs(persist, exist_ok=True)
            # SNMP_PERSISTENT_DIR keeps the v3 user's keys out of /var/lib/snmp;
            # -C skips /etc/snmp; -f stays in the foreground so the PID is ours.
            # MIBS= loads no MIB files: snmpd needs none, and Debian's set logs
            # hundreds of "Cannot adopt OID" lines without /etc/snmp/snmp.conf.
            env = dict(os.environ, SNMP_PERSISTENT_DIR=persist, MIBS="")
            self.spawn("snmpd", ns, with_hostname(ns, ["snmpd", "-f", "-C", "-c", conf, "-I", "-smux",
                                                       "-Lf", self.state.file(f"{ns}.snmpd.log")]),
                       self.state.file(f"{ns}.snmpd.out"), env=env)
        deadline = time.monotonic() + 15
        for _, sw in switch_nodes(self.d):
            sock = self.state.file(sw["namespace"] + ".agentx")
            while not os.path.exists(sock):
                self.check_children()
                if time.monotonic() > deadline:
                    raise TestbedError(f"snmpd on {sw['namespace']} did not create {sock}; "
                                       f"see {self.state.file(sw['namespace'] + '.snmpd.log')}")
                time.sleep(0.05)

    def start_lldpd(self) -> None:
        # The management switch runs lldpd as a switch does; a host's lldpd
        # runs on all its NICs (eth1 too), a switch's on mgmt0 too.
        nodes = ([("head", self.d["head"])] + [("switch", s) for _, s in switch_nodes(self.d)]
                 + [("host", h) for h in self.d["hosts"].values()])
        for kind, node in nodes:
            ns = node["namespace"]
            conf = self.state.file(f"{ns}.lldpd.conf")
            with open(conf, "w") as f:
                f.write(lldpd_conf(ns, kind))
            sock = self.state.file(f"{ns}.lldpd.sock")
            node["lldpd_socket"] = sock
            # -dd: foreground, log to stderr (our log file) instead of syslog.
            # -O: our commands instead of /etc/lldpd.conf and /etc/lldpd.d.
            argv = ["lldpd", "-dd", "-u", sock, "-O", conf]
            if kind == "switch":
                # The bridge address is the management address.
                argv += ["-m", node["ip"]]
                if self.opts.snmp:
                    argv += ["-X", self.state.file(f"{ns}.agentx")]
            elif kind == "head":
                argv += ["-r"]  # receive only: the head is not part of the topology
            self.spawn("lldpd", ns, with_hostname(ns, argv), self.state.file(f"{ns}.lldpd.log"))

    def check_children(self) -> None:
        for p, rec in zip(self.children, self.d["processes"]):
            if p.poll() is not None:
                raise TestbedError(f"{rec['what']} on {rec['namespace']} exited with status "
                                   f"{p.returncode}; see {rec['log']}")

    # -- topotune services ---------------------------------------------------

    def start_services(self) -> None:
        """topotuned in the head namespace (discovering from the first switch,
        launching benchmark jobs with the testbed's mpirun) and
        `topotune-agent serve` on every host."""
        d, head = self.d, self.d["head"]
        bins = d["binaries"]
        token = self.state.file("token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(os.urandom(16).hex() + "\n")
        first_switch = next(iter(d["switches"].values()))
        server = f"{head['ip']}:{SERVICE_PORT}"
        d["services"] = {
            "server": server,
            "admin_server": f"127.0.0.1:{SERVICE_PORT}",
            "metrics_url": f"http://{head['ip']}:{METRICS_PORT}/metrics",
            "token_file": token,
            "config": self.state.file("topotuned.yaml"),
            "database": self.state.file("topotune.db"),
        }
        with open(d["services"]["config"], "w") as f:
            f.write(topotuned_conf(self.state, first_switch["ip"], server, bins["topotune-agent"]))
        self.spawn("topotuned", head["namespace"],
                   with_hostname(head["namespace"], [bins["topotuned"], "--config", d["services"]["config"]]),
                   self.state.file("topotuned.log"))
        for node in d["hosts"].values():
            ns = node["namespace"]
            argv = [bins["topotune-agent"], "serve", "--server", server, "--token-file", token, "--hostname", ns,
                    "--interface", NIC]
            if self.opts.lldp:
                argv += ["--lldpd-socket", self.state.file(f"{ns}.lldpd.sock")]
            else:
                argv += ["--no-lldp"]
            self.spawn("topotune-agent", ns, with_hostname(ns, argv), self.state.file(f"{ns}.agent.log"))

    def services_missing(self) -> list[str]:
        """What topotuned's /metrics does not show yet: every agent alive and,
        with SNMP, a discovery that found every switch and host."""
        metrics = fetch_metrics(self.sh, self.d)
        if metrics is None:
            return ["topotuned's /metrics does not answer yet"]
        missing = []
        want = {"topotune_agents_alive": len(self.d["hosts"])}
        if self.opts.snmp and self.opts.lldp:
            want.update(topotune_discovery_switches=len(self.d["switches"]),
                        topotune_discovery_hosts=len(self.d["hosts"]))
        for name, value in want.items():
            if metrics.get(name) != value:
                missing.append(f"{name} is {metrics.get(name, 'absent')}, want {value}")
        return missing

    def wait_services(self, deadline: float) -> None:
        log(f"waiting for topotuned to see {len(self.d['hosts'])} agents"
            + (" and discover the tree" if self.opts.snmp and self.opts.lldp else ""))
        self.wait_for("topotune services", self.services_missing, deadline)

    # -- readiness ----------------------------------------------------------

    def lldp_missing(self) -> list[str]:
        """Expected (port, neighbour) pairs that a switch's lldpd does not see
        yet: on every port but the head's, and on a switch's mgmt0 the
        management switch."""
        missing = []
        mgmt = self.d.get("mgmt")
        for _, sw in switch_nodes(self.d):
            p = self.sh.run(["lldpcli", "-u", sw["lldpd_socket"], "-f", "json0", "show", "neighbors"],
                            check=False)
            seen = lldp_neighbours(p.stdout) if p.returncode == 0 else {}
            expected = [(port, info["peer_namespace"]) for port, info in sw["ports"].items()
                        if info["peer"] != "head"]  # the head's lldpd only listens
            if "mgmt" in sw:
                expected.append((sw["mgmt"]["interface"], mgmt["namespace"]))
            for port, peer_ns in expected:
                if peer_ns not in seen.get(port, set()):
                    missing.append(f"{sw['namespace']}:{port} (expects {peer_ns})")
        return missing

    def snmp_missing(self) -> list[str]:
        """Switches whose lldpRemTable, ifHighSpeed or dot1dBasePortIfIndex,
        walked from the head, is not yet what the topology says."""
        missing = []
        head_ns = self.d["head"]["namespace"]
        for _, sw in switch_nodes(self.d):
            ns = sw["namespace"]
            nics = dict(sw["ports"])  # interface -> its ifindex and speed
            if "mgmt" in sw:
                nics[sw["mgmt"]["interface"]] = sw["mgmt"]
            if self.opts.lldp:
                expected = (sum(1 for p in sw["ports"].values() if p["peer"] != "head")
                            + (1 if "mgmt" in sw else 0))  # mgmt0's neighbour, the management switch
                rows = snmp_walk(self.sh, head_ns, sw["ip"], OID_LLDP_REM_SYSNAME)
                if len(rows) != expected:
                    missing.append(f"{ns}: lldpRemTable has {len(rows)} of {expected} neighbours")
            items = list(nics.items())
            for start in range(0, len(items), 50):  # GETs of at most 50 OIDs
                chunk = items[start:start + 50]
                oids = [f"{OID_IF_HIGH_SPEED}.{p['ifindex']}" for _, p in chunk]
                got = snmp_get(self.sh, head_ns, sw["ip"], oids)
                bad = next(((port, p, oid) for (port, p), oid in zip(chunk, oids)
                            if got.get(oid) != str(int(p["speed_bps"] // 1_000_000))), None)
                if bad:
                    port, p, oid = bad
                    missing.append(f"{ns}:{port}: ifHighSpeed {got.get(oid, 'missing')}, "
                                   f"want {int(p['speed_bps'] // 1_000_000)}")
                    break
            if ns not in self.bridge_mib_ok:
                # Read from snmpd.conf at start: right at once, or never (the
                # message then says what is served).
                want = {str(p["ifindex"]): str(p["ifindex"]) for p in sw["ports"].values()}
                got_rows = {}
                for line in snmp_walk(self.sh, head_ns, sw["ip"], OID_BASE_PORT_IF_INDEX):
                    oid, _, value = line.partition(" ")
                    got_rows[oid.rsplit(".", 1)[1]] = value.strip()
                if got_rows == want:
                    self.bridge_mib_ok.add(ns)
                else:
                    missing.append(f"{ns}: dot1dBasePortIfIndex has {len(got_rows)} rows "
                                   f"({' '.join(f'{k}={v}' for k, v in sorted(got_rows.items())) or 'none'}), "
                                   f"want one per br0 port ({len(want)})")
        return missing

    def wait_converged(self, deadline: float) -> None:
        checks: list[tuple[str, Callable[[], list[str]]]] = []
        if self.opts.lldp:
            checks.append(("LLDP", self.lldp_missing))
        if self.opts.snmp:
            checks.append(("SNMP", self.snmp_missing))
        for what, check in checks:
            log(f"waiting for {what} to converge (timeout {self.opts.timeout:g} s)")
            self.wait_for(what, check, deadline)

    def wait_for(self, what: str, check: Callable[[], list[str]], deadline: float) -> None:
        """Polls `check` (what is still missing) until it returns nothing;
        reports progress every 5 s and fails at `deadline`."""
        start = time.monotonic()
        last_report = start
        while True:
            self.check_children()
            missing = check()
            if not missing:
                log(f"{what} ready after {time.monotonic() - start:.1f} s")
                return
            now = time.monotonic()
            if now > deadline:
                raise TestbedError(f"{what} not ready in {self.opts.timeout:g} s; missing: "
                                   + "; ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""))
            if now - last_report > 5:
                log(f"  {what}: {len(missing)} missing, e.g. {missing[0]}")
                last_report = now
            time.sleep(0.5)


def lldp_neighbours(text: str) -> dict[str, set[str]]:
    """Port -> neighbour system names, from `lldpcli -f json0 show neighbors`."""
    out: dict[str, set[str]] = {}
    try:
        doc = json.loads(text)
    except ValueError:
        return out
    for lldp in doc.get("lldp", []):
        for iface in lldp.get("interface", []):
            names = {n.get("value") for c in iface.get("chassis", []) for n in c.get("name", [])}
            out.setdefault(iface.get("name", ""), set()).update(names)
    return out


def snmp_args(ip: str) -> list[str]:
    return ["-v2c", "-c", SNMP_COMMUNITY, "-On", "-Oq", "-t", "1", "-r", "1", ip]


def snmp_walk(sh: Shell, ns: str, ip: str, oid: str) -> list[str]:
    p = sh.in_ns(ns, ["snmpwalk", *snmp_args(ip), oid], check=False)
    return [line for line in p.stdout.splitlines() if line.startswith("." + oid + ".")]


def snmp_get(sh: Shell, ns: str, ip: str, oids: list[str]) -> dict[str, str]:
    p = sh.in_ns(ns, ["snmpget", *snmp_args(ip), *oids], check=False)
    out = {}
    for line in p.stdout.splitlines():
        oid, _, value = line.partition(" ")
        out[oid.lstrip(".")] = value.strip()
    return out


# ---------------------------------------------------------------------------
# ICMP echo, run inside a namespace by re-executing this file there (no
# dependency on iputils-ping).

def icmp_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def icmp_echo(targets: list[str], timeout: float) -> dict[str, float | None]:
    """Sends ICMP echo requests (resent every 0.5 s) and returns each target's
    round-trip time in seconds, or None if it never answered."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    sent: dict[int, float] = {}
    rtt: dict[str, float | None] = {t: None for t in targets}
    start = time.monotonic()
    next_send = start
    while any(v is None for v in rtt.values()) and time.monotonic() - start < timeout:
        if time.monotonic() >= next_send:
            for seq, target in enumerate(targets):
                if rtt[target] is None:
                    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
                    payload = b"topotune-testbed"
                    packet = struct.pack("!BBHHH", 8, 0, icmp_checksum(header + payload), ident, seq) + payload
                    sent[seq] = time.monotonic()
                    sock.sendto(packet, (target, 0))
            next_send = time.monotonic() + 0.5
        sock.settimeout(max(0.01, next_send - time.monotonic()))
        try:
            data, (addr, _) = sock.recvfrom(2048)
        except socket.timeout:
            continue
        ihl = (data[0] & 0x0F) * 4
        kind, _, _, rid, seq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if kind == 0 and rid == ident and seq < len(targets) and targets[seq] == addr:
            if rtt[addr] is None:
                rtt[addr] = time.monotonic() - sent[seq]
    return rtt


def ping_from(sh: Shell, ns: str, targets: list[str], timeout: float) -> dict[str, float | None]:
    p = sh.in_ns(ns, [sys.executable, os.path.abspath(__file__), "_icmp", "--timeout", str(timeout), *targets],
                 check=False, timeout=timeout + 30)
    if p.returncode not in (0, 1):
        raise TestbedError(f"ping from {ns} failed: {p.stderr.strip()}")
    return {ip: (float(v) if v != "-" else None) for ip, v in (line.split() for line in p.stdout.splitlines())}


# ---------------------------------------------------------------------------
# down

def proc_comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def logging_into(state_dir: str) -> list[int]:
    """Processes whose standard output is a file in the state directory: the
    daemons `up` starts write their logs there, so this finds one that `up`
    started but did not live to record. (Not by name: lldpd rewrites its
    command line and its environment with its process title.)"""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                target = os.readlink(f"/proc/{entry}/fd/1")
            except OSError:
                continue
            if target.startswith(state_dir + "/"):
                found.append(int(entry))
    return found


def stop_processes(state: State, grace: float) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds, to the recorded processes,
    their descendants (lldpd forks an unprivileged child) and unrecorded ones
    that log into the state directory. Returns True when none is left."""
    targets: dict[int, tuple[int, str]] = {}  # pid -> (start time, what)
    for r in state.data.get("processes", []):
        if r.get("start_time") is not None and proc_alive(r["pid"], r["start_time"]):
            targets[r["pid"]] = (r["start_time"], f"{r['what']} on {r['namespace']}")
    children = proc_children()
    parent = {c: p for p, cs in children.items() for c in cs}
    logged = set(logging_into(state.dir))
    for pid in sorted(logged - set(targets)):
        st = proc_start_time(pid)
        if st is not None and parent.get(pid) not in logged:  # children come below
            targets[pid] = (st, f"unrecorded {proc_comm(pid)}")
    for pid, (_, what) in sorted(targets.items()):
        log(f"stopping {what} (pid {pid})")
    stack = list(targets)
    while stack:
        for child in children.get(stack.pop(), []):
            st = proc_start_time(child)
            if st is not None and child not in targets:
                targets[child] = (st, f"child {proc_comm(child)}")
                stack.append(child)
    alive = [(pid, st, what) for pid, (st, what) in targets.items()]
    for pid, _, _ in alive:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        alive = [a for a in alive if proc_alive(a[0], a[1])]
        time.sleep(0.05)
    for pid, st, what in alive:
        if proc_alive(pid, st):
            log(f"killing {what} (pid {pid}): still running after {grace:g} s")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    time.sleep(0.1 if alive else 0)
    return all(not proc_alive(pid, st) for pid, st, _ in alive)


def teardown(state: State, sh: Shell, grace: float, kill_strays: bool) -> bool:
    """Stops the testbed's processes and deletes the recorded namespaces.
    Returns True if everything recorded is gone."""
    ok = stop_processes(state, grace)
    for ns in reversed(state.data.get("namespaces", [])):
        if not netns_exists(ns):
            continue
        strays = sh.run(["ip", "netns", "pids", ns], check=False).stdout.split()
        if strays:
            if kill_strays:
                log(f"killing processes left in {ns}: {' '.join(strays)}")
                for pid in strays:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            else:
                log(f"warning: processes that the testbed did not start still run in {ns}: "
                    f"{' '.join(strays)} (they keep its network alive; --kill-strays stops them)")
        log(f"deleting namespace {ns}")
        if sh.run(["ip", "netns", "del", ns], check=False).returncode != 0 and netns_exists(ns):
            ok = False
    return ok


# ---------------------------------------------------------------------------
# Subcommands

def require_root() -> None:
    if os.geteuid() != 0:
        raise TestbedError("must run as root (network namespaces, veths and tc need CAP_NET_ADMIN)")


def require_tools(opts: argparse.Namespace) -> None:
    tools = ["ip", "tc", "unshare", "hostname", "sysctl"]
    if opts.lldp:
        tools += ["lldpd", "lldpcli"]
    if opts.snmp:
        tools += ["snmpd", "snmpwalk", "snmpget"]
    if getattr(opts, "services", False):
        tools += ["mpirun"]
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise TestbedError(f"missing programs: {', '.join(missing)} (Debian packages iproute2, "
                           "util-linux, hostname, procps, lldpd, snmpd, snmp, openmpi-bin)")


def state_dir_of(opts: argparse.Namespace) -> str:
    return os.path.abspath(opts.state or default_state_dir(opts.prefix))


def cmd_plan(opts: argparse.Namespace) -> int:
    plan = make_plan(load_topology(opts.topology), opts.prefix, opts.mgmt_network)
    json.dump(plan, sys.stdout, indent=2)
    print()
    return 0


def cmd_up(opts: argparse.Namespace) -> int:
    topo = load_topology(opts.topology)
    plan = make_plan(topo, opts.prefix, opts.mgmt_network)
    require_root()
    require_tools(opts)
    binaries = find_binaries(opts.bin_dir) if opts.services else {}
    state_dir = state_dir_of(opts)
    longest = max(len(os.path.join(state_dir, f"{ns}.lldpd.sock")) for ns in all_namespaces(plan))
    if longest > UNIX_PATH_MAX:
        raise TestbedError(f"state directory '{state_dir}' is too long: its control sockets would have "
                           f"{longest} characters, and a Unix socket path allows {UNIX_PATH_MAX}")
    old = State.load(state_dir)
    if old is not None:
        raise TestbedError(f"a testbed is recorded in {old.path} (status {old.data.get('status')}); "
                           f"run '{PROG}.py down --state {state_dir}' first")
    taken = [ns for ns in all_namespaces(plan) if netns_exists(ns)]
    if taken:
        raise TestbedError(f"namespaces already exist: {', '.join(taken)}; choose another --prefix")

    os.makedirs(state_dir, exist_ok=True)
    plan.update(state_dir=state_dir, status="creating", started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                options={"shape": opts.shape, "lldp": opts.lldp, "snmp": opts.snmp, "services": opts.services,
                         "mgmt_network": opts.mgmt_network},
                binaries=binaries,
                shaped=False, namespaces=[], processes=[], warnings=[])
    state = State(state_dir, plan)
    state.save()
    sh = Shell(opts.verbose)

    def on_signal(signum: int, _frame: Any) -> None:
        raise TestbedError(f"interrupted by signal {signum}")

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        Bringup(state, sh, opts).run()
    except (TestbedError, KeyboardInterrupt) as e:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # finish the cleanup
        for s in old_handlers:
            signal.signal(s, signal.SIG_IGN)
        log(f"error: {e or 'interrupted'}")
        state.data["status"] = "failed"
        state.save()
        log("tearing down what was created")
        if teardown(state, sh, opts.grace, kill_strays=False):
            remove_state(state)
        else:
            log(f"some things could not be removed; see {state.path} and retry '{PROG}.py down'")
        return 1
    for s, h in old_handlers.items():
        signal.signal(s, h)
    d = state.data
    mgmt_text = f", management switch {d['mgmt']['ip']}" if d.get("mgmt") else ""
    log(f"testbed up in {d['setup_s']:g} s (converged in {d['convergence_s']:g} s): "
        f"{len(d['switches'])} switches, {len(d['hosts'])} hosts, head {d['head']['ip']}{mgmt_text}; "
        f"state {state.path}")
    print(state.path)
    return 0


def remove_state(state: State) -> None:
    """Removes the state directory (only files that `up` writes live there),
    and the default parent directory once no testbed uses it."""
    shutil.rmtree(state.dir, ignore_errors=True)
    if os.path.dirname(state.dir) == STATE_ROOT:
        try:
            os.rmdir(STATE_ROOT)
        except OSError:
            pass  # another testbed's state is there


def cmd_down(opts: argparse.Namespace) -> int:
    require_root()
    state_dir = state_dir_of(opts)
    state = State.load(state_dir)
    if state is None:
        log(f"nothing to tear down: no {os.path.join(state_dir, STATE_FILE)}")
        return 0
    sh = Shell(opts.verbose)
    if not teardown(state, sh, opts.grace, opts.kill_strays):
        log(f"error: some recorded namespaces or processes remain; {state.path} is kept")
        return 1
    if opts.keep_logs:
        state.data.update(status="down", namespaces=[], processes=[])
        state.save()
        os.replace(state.path, state.file("testbed.down.json"))
    else:
        remove_state(state)
    log("testbed down")
    return 0


def resolve_namespace(opts: argparse.Namespace, name: str) -> str:
    state = State.load(state_dir_of(opts))
    if state is not None:
        d = state.data
        if node_of(d, name) is not None:
            return namespace_of(d, name)
        if name in d.get("namespaces", []):
            return name
    for ns in (name, opts.prefix + name):
        if ns.startswith(opts.prefix) and netns_exists(ns):
            return ns
    raise TestbedError(f"no testbed node or namespace '{name}' (state {state_dir_of(opts)})")


def cmd_exec(opts: argparse.Namespace) -> int:
    require_root()
    argv = list(opts.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise TestbedError("exec needs a command: exec NAME -- CMD [ARG...]")
    ns = resolve_namespace(opts, opts.name)
    if opts.shell:
        # Like ssh: the words are joined by spaces and run by a shell.
        argv = ["sh", "-c", " ".join(argv)]
    sys.stdout.flush()
    os.execvp("ip", with_hostname(ns, argv))
    return 127  # not reached


def cmd_ping(opts: argparse.Namespace) -> int:
    require_root()
    state = State.load(state_dir_of(opts))
    if state is None:
        raise TestbedError(f"no testbed at {state_dir_of(opts)}")
    d = state.data
    ns = resolve_namespace(opts, opts.source)
    targets = []
    for t in opts.targets:
        try:
            ipaddress.ip_address(t)
            targets.append(t)
        except ValueError:
            node = node_of(d, t)
            if node is None:
                node = next((n for n in [d["head"], *d["switches"].values(), *d["hosts"].values(),
                                         *([d["mgmt"]] if d.get("mgmt") else [])]
                             if n["namespace"] == t), None)
            if node is None:
                raise TestbedError(f"unknown ping target '{t}'")
            targets.append(node["ip"])
    for t in targets:
        if ipaddress.ip_address(t) not in SAFE_RANGE:
            raise TestbedError(f"refusing to ping {t}: the testbed only uses {SAFE_RANGE}")
    replies = ping_from(Shell(opts.verbose), ns, targets, opts.timeout)
    for ip, rtt in replies.items():
        print(f"{ip}: " + (f"reply in {rtt * 1000:.3f} ms" if rtt is not None else "no reply"))
    return 0 if all(v is not None for v in replies.values()) else 1


def cmd_metrics(opts: argparse.Namespace) -> int:
    require_root()
    state = State.load(state_dir_of(opts))
    if state is None:
        raise TestbedError(f"no testbed at {state_dir_of(opts)}")
    if not state.data.get("services"):
        raise TestbedError("this testbed runs no topotuned (it was brought up with --no-services)")
    text = fetch_metrics_text(Shell(opts.verbose), state.data)
    if text is None:
        raise TestbedError(f"topotuned's /metrics does not answer; see {state.file('topotuned.log')}")
    sys.stdout.write(text)
    return 0


def cmd_icmp(opts: argparse.Namespace) -> int:
    """Internal: runs in the source namespace on behalf of ping_from."""
    for ip, rtt in icmp_echo(opts.targets, opts.timeout).items():
        print(ip, "-" if rtt is None else f"{rtt:.6f}")
    return 0


def cmd_status(opts: argparse.Namespace) -> int:
    state_dir = state_dir_of(opts)
    state = State.load(state_dir)
    if state is None:
        print(f"no testbed at {state_dir}")
        return 1
    d = state.data
    present = [ns for ns in d.get("namespaces", []) if netns_exists(ns)]
    procs = d.get("processes", [])
    running = [p for p in procs if p.get("start_time") is not None and proc_alive(p["pid"], p["start_time"])]
    print(f"testbed {d['prefix']} ({d.get('status')}), topology {d['topology']}, state {state.path}")
    print(f"  namespaces: {len(present)}/{len(d.get('namespaces', []))} present; "
          f"processes: {len(running)}/{len(procs)} running; shaped: {d.get('shaped')}")
    for p in procs:
        if p not in running:
            print(f"  not running: {p['what']} on {p['namespace']} (pid {p['pid']}, log {p['log']})")

    def mgmt_nic(node: dict[str, Any]) -> str:
        m = node.get("mgmt")
        return f"; {m['interface']} {m['ip']} on {m['switch']}:{m['switch_port']}" if m else ""

    h = d["head"]
    print(f"  head   {h['namespace']:<16} {h['ip']:<15} on {h['switch']}:{h['switch_port']}{mgmt_nic(h)}")
    for s, sw in d["switches"].items():
        ports = " ".join(f"{port}={p['peer']}" for port, p in sw["ports"].items())
        print(f"  switch {sw['namespace']:<16} {sw['ip']:<15} {ports}{mgmt_nic(sw)}")
    for name, node in d["hosts"].items():
        print(f"  host   {node['namespace']:<16} {node['ip']:<15} {node['mac']} on {node['switch']}:"
              f"{node['switch_port']} ({speed_text(node['speed_bps'])}){mgmt_nic(node)}")
    if d.get("mgmt"):
        mg = d["mgmt"]
        print(f"  mgmt   {mg['namespace']:<16} {mg['ip']:<15} management switch, {len(mg['ports'])} ports "
              f"(m0=head, m1..: the switches' mgmt0, then the hosts' eth1)")
    sv = d.get("services")
    if sv:
        print(f"  topotuned {sv['server']} (admin {sv['admin_server']} inside {h['namespace']}), "
              f"metrics {sv['metrics_url']}, token {sv['token_file']}")
    for w in d.get("warnings", []):
        print(f"  warning: {w}")
    healthy = d.get("status") == "up" and len(present) == len(d.get("namespaces", [])) and len(running) == len(procs)
    return 0 if healthy else 1


USAGE_EPILOG = f"""
examples:
  %(prog)s up deploy/examples/two-switch-4x4.yaml
  %(prog)s up --mgmt-network --no-services deploy/examples/three-level.yaml   # + tt-mgmt, mgmt0/eth1
  %(prog)s status
  %(prog)s exec h0 -- hostname              # prints tt-h0
  %(prog)s exec head -- snmpwalk -v2c -c public 198.18.0.1 1.0.8802.1.1.2.1.4.1.1
  %(prog)s ping h0 h7
  %(prog)s exec head -- topotune topology show              # the tree topotuned discovered
  /run/topotune-testbed/tt-/mpirun -np 8 --hostfile /run/topotune-testbed/tt-/hostfile ./a.out
  %(prog)s down

files in the state directory (default {STATE_ROOT}/<prefix>):
  testbed.json       what exists: namespaces, PIDs, addresses, MACs, ports, ifindexes
  hostfile           Open MPI hostfile (namespace names and slots)
  hosts              hosts(5) lines for every node
  rsh-agent          for mpirun --mca plm_rsh_agent (runs commands like ssh would)
  mpirun             mpirun with the testbed's options, run in the head namespace
  topotuned.yaml     topotuned's configuration; topotuned.log, topotune.db, token
  <ns>.agent.log     topotune-agent serve on each host
  <ns>.lldpd.sock    lldpd control socket (lldpcli -u ...); <ns>.lldpd.log
  <ns>.snmpd.conf    snmpd configuration; <ns>.snmpd.log, <ns>.agentx, <ns>.snmp/

exit status: 0 success, 1 failure (up tears down what it created), 2 usage error
"""


def common_options(defaults: bool) -> argparse.ArgumentParser:
    """Options accepted before and after the subcommand. Only the top level
    sets defaults, so that a subcommand does not reset what came before it."""
    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--prefix", default=default(DEFAULT_PREFIX),
                        help=f"prefix of every namespace name (default {DEFAULT_PREFIX})")
    common.add_argument("--state", metavar="DIR", default=default(None),
                        help=f"state directory (default {STATE_ROOT}/<prefix>)")
    common.add_argument("-v", "--verbose", action="store_true", default=default(False),
                        help="print every command run")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = common_options(defaults=False)
    parser = argparse.ArgumentParser(
        prog=os.path.basename(sys.argv[0]), parents=[common_options(defaults=True)],
        description="Emulated topotune cluster in network namespaces: Linux bridges as switches, "
                    "veth links shaped with tc, real lldpd everywhere and snmpd (LLDP-MIB over AgentX) "
                    "on the switches. Addresses come from 198.18.0.0/15 only.",
        epilog=USAGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    up = sub.add_parser("up", parents=[common], help="build the testbed from a topology file",
                        description="Creates the namespaces, links, shaping, lldpd and snmpd of TOPOLOGY, "
                                    "then waits until every switch's lldpd sees all its neighbours and "
                                    "snmpwalk from the head returns them; then starts topotuned on the "
                                    "head and topotune-agent on every host and waits until topotuned "
                                    "sees them all and has discovered the tree. Prints the state "
                                    "file's path.")
    up.add_argument("topology", metavar="TOPOLOGY.yaml")
    up.add_argument("--no-shape", dest="shape", action="store_false", help="do not shape links with tc")
    up.add_argument("--no-lldp", dest="lldp", action="store_false", help="do not run lldpd")
    up.add_argument("--no-snmp", dest="snmp", action="store_false", help="do not run snmpd")
    up.add_argument("--no-services", dest="services", action="store_false",
                    help="do not start topotuned and the agents")
    up.add_argument("--mgmt-network", action="store_true",
                    help=f"add an out-of-band management network ({MGMT_SUBNET}): a management switch "
                         f"<prefix>{MGMT_NAME} cabled to every switch's {MGMT_SWITCH_NIC} (not a bridge port), "
                         f"every host's {MGMT_HOST_NIC} and the head's {MGMT_HEAD_NIC}")
    up.add_argument("--bin-dir", metavar="DIR",
                    help="where topotuned and topotune-agent are: a directory or a CMake build tree "
                         "(default: PATH, then the repository's build/)")
    up.add_argument("--timeout", type=float, default=60, metavar="S",
                    help="seconds to wait for LLDP and SNMP to converge, and then for topotuned to see "
                         "every agent and the discovered tree (default 60)")
    up.add_argument("--grace", type=float, default=5, metavar="S",
                    help="on failure, seconds between SIGTERM and SIGKILL (default 5)")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", parents=[common], help="remove what up created",
                          description="Stops exactly the recorded processes (SIGTERM, then SIGKILL after "
                                      "--grace) and deletes exactly the recorded namespaces. Idempotent; "
                                      "works after a failed up.")
    down.add_argument("--grace", type=float, default=5, metavar="S",
                      help="seconds between SIGTERM and SIGKILL (default 5)")
    down.add_argument("--kill-strays", action="store_true",
                      help="also kill processes the testbed did not start that run in its namespaces")
    down.add_argument("--keep-logs", action="store_true", help="keep the state directory's logs")
    down.set_defaults(func=cmd_down)

    ex = sub.add_parser("exec", parents=[common], help="run a command in a node's namespace",
                        description="Runs CMD in the namespace of NAME (a switch or host name, 'head', or a "
                                    "namespace name), in its own UTS namespace with hostname = namespace "
                                    "name. With --shell the words are joined and run by sh -c, as ssh "
                                    "does (for mpirun's plm_rsh_agent).")
    ex.add_argument("--shell", action="store_true", help="join CMD's words and run them with sh -c")
    ex.add_argument("name", metavar="NAME")
    ex.add_argument("command", metavar="-- CMD", nargs=argparse.REMAINDER)
    ex.set_defaults(func=cmd_exec)

    st = sub.add_parser("status", parents=[common], help="show what exists",
                        description="Shows the recorded testbed and whether its namespaces and processes "
                                    "still exist. Exit status 0 if it is up and complete.")
    st.set_defaults(func=cmd_status)

    pg = sub.add_parser("ping", parents=[common], help="ICMP echo from one node to others",
                        description="Sends ICMP echo requests from SOURCE's namespace to each TARGET (node "
                                    "name or address in 198.18.0.0/15). Exit status 0 if all reply.")
    pg.add_argument("source", metavar="SOURCE")
    pg.add_argument("targets", metavar="TARGET", nargs="+")
    pg.add_argument("--timeout", type=float, default=5, metavar="S")
    pg.set_defaults(func=cmd_ping)

    mt = sub.add_parser("metrics", parents=[common], help="print topotuned's Prometheus metrics",
                        description="Prints topotuned's /metrics (Prometheus text format), read from "
                                    "inside the head namespace.")
    mt.set_defaults(func=cmd_metrics)

    pl = sub.add_parser("plan", parents=[common], help="print the plan for a topology (no root needed)",
                        description="Checks TOPOLOGY and prints the names, addresses, MACs and ports that "
                                    "up would create, as JSON.")
    pl.add_argument("topology", metavar="TOPOLOGY.yaml")
    pl.add_argument("--mgmt-network", action="store_true", help="with the management network of up --mgmt-network")
    pl.set_defaults(func=cmd_plan)

    icmp = sub.add_parser("_icmp", parents=[common])  # internal, see ping_from
    icmp.add_argument("targets", nargs="+")
    icmp.add_argument("--timeout", type=float, default=5)
    icmp.set_defaults(func=cmd_icmp)
    return parser


def main() -> int:
    opts = build_parser().parse_args()
    try:
        return opts.func(opts)
    except TestbedError as e:
        log(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
