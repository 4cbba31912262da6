#!/usr/bin/env python3
"""An example client of topotuned in Python, for third-party client authors.

It talks to a running topotuned over gRPC and calls, in order:

  1. grpc.health.v1.Health/Check for the server ("") and for each of
     topotune.v1.Plans, topotune.v1.Admin and topotune.v1.Agents;
  2. topotune.v1.Admin/GetTopology: the current topology's version and size;
  3. topotune.v1.Plans/GetPlan for a placement of ranks on hosts: the plan id,
     each collective's decision table and compiled schedules.

It generates nothing itself. The topotune.v1 stubs come from
generate_stubs.sh (next to this file), in the directory given by --stubs or
on PYTHONPATH. The health messages are built at run time from a descriptor
(Debian has no grpcio-health-checking package), so only python3-grpcio and
python3-protobuf are needed.

Example:
  tests/clients/python/generate_stubs.sh /tmp/stubs
  tests/clients/python/topotune_client.py --stubs /tmp/stubs --server head:50051 \\
      --rank-hosts h0,h0,h1,h1 --force tree_scheduled --ranks 0
"""

import argparse
import importlib
import os
import re
import sys

PROG = "topotune_client"

# Exit statuses (also in --help).
EXIT_OK = 0
EXIT_FAILED = 1  # an RPC failed, or a setup problem (stubs, token, CA file)
EXIT_USAGE = 2  # argparse's own
EXIT_NO_HEALTH = 3  # --require-health, and a service is not SERVING

# GetPlanResponse can be large (programs of every rank): the API asks
# clients to accept up to kMaxPlanResponseBytes (proto/limits.h).
MAX_PLAN_RESPONSE_BYTES = 64 * 1024 * 1024

# The services whose health is checked; "" is the server as a whole.
HEALTH_SERVICES = ("", "topotune.v1.Plans", "topotune.v1.Admin", "topotune.v1.Agents")

COLLECTIVES = ("alltoall", "alltoallv", "allgather")


class ClientError(Exception):
    """A failure to report on one line, then exit with EXIT_FAILED."""


def rpc_error(method, err):
    """A ClientError for a failed call (a grpc.RpcError): the status code's name and details."""
    code = err.code() if hasattr(err, "code") else None
    name = code.name if code is not None else "UNKNOWN"
    details = err.details() if hasattr(err, "details") else str(err)
    return ClientError(f"{method} failed: {name}: {details or '(no details)'}")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else PROG,
        description="Example Python client of topotuned: health check, Admin.GetTopology, Plans.GetPlan.",
        epilog=(
            "Stubs: generate them with tests/clients/python/generate_stubs.sh DIR (protoc >= 3.15 and "
            "grpc_python_plugin; Debian 12: apt install protobuf-compiler protobuf-compiler-grpc "
            "python3-grpcio python3-protobuf). "
            "Exit status: 0 success; 1 an RPC failed or a setup problem (the message says which); "
            "2 usage error; 3 --require-health and a service is not SERVING."
        ),
    )
    parser.add_argument("--stubs", metavar="DIR",
                        help="directory with the generated topotune/v1/*_pb2*.py (default: found on PYTHONPATH)")
    parser.add_argument("--server", metavar="HOST:PORT", default="127.0.0.1:50051",
                        help="topotuned's gRPC address (default: %(default)s)")
    parser.add_argument("--token-file", metavar="FILE",
                        help="send the token in FILE as metadata 'authorization: Bearer <token>' "
                             "(the calls made here are open; writes need it)")
    parser.add_argument("--ca-file", metavar="FILE",
                        help="use TLS and check the server's certificate against this CA certificate (PEM)")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=10.0,
                        help="deadline of each call (default: %(default)s)")
    parser.add_argument("--rank-hosts", metavar="H0,H1,...",
                        help="the host of each rank, in rank order (default: every host of the topology once)")
    parser.add_argument("--collective", choices=COLLECTIVES, default="alltoall",
                        help="the collective to ask a plan for (default: %(default)s)")
    parser.add_argument("--force", metavar="ALGORITHM",
                        help="force this algorithm for every size (ForcedAlgorithm), e.g. tree_scheduled")
    parser.add_argument("--ranks", metavar="R0,R1,...",
                        help="ask for the programs of these ranks only (default: every rank's)")
    parser.add_argument("--tables-only", action="store_true",
                        help="ask for decision tables only, no compiled programs")
    parser.add_argument("--job-id", default="", help="the job id sent with GetPlan (default: empty)")
    parser.add_argument("--require-health", action="store_true",
                        help="exit 3 unless every health check answers SERVING")
    parser.add_argument("--skip-health", action="store_true", help="do not call the health service")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    if args.require_health and args.skip_health:
        parser.error("--require-health and --skip-health exclude each other")
    if not re.fullmatch(r".+:[0-9]+", args.server):
        parser.error(f"--server must be HOST:PORT, got {args.server!r}")
    if args.rank_hosts is not None:
        args.rank_hosts = [h.strip() for h in args.rank_hosts.split(",")]
        if not all(args.rank_hosts):
            parser.error(f"--rank-hosts has an empty host name: {','.join(args.rank_hosts)!r}")
    if args.ranks is not None:
        try:
            args.ranks = [int(r) for r in args.ranks.split(",")]
        except ValueError:
            parser.error(f"--ranks must be comma-separated integers, got {args.ranks!r}")
    return args


def import_stubs(stubs_dir):
    """Imports grpc and the generated topotune.v1 modules; returns them by name."""
    try:
        grpc = importlib.import_module("grpc")
        importlib.import_module("google.protobuf")
    except ImportError as e:
        raise ClientError(f"cannot import gRPC for Python ({e}) into {sys.executable}; on Debian 12: "
                          "apt install python3-grpcio python3-protobuf, and run /usr/bin/python3") from e
    if stubs_dir is not None:
        if not os.path.isdir(os.path.join(stubs_dir, "topotune", "v1")):
            raise ClientError(f"--stubs {stubs_dir}: no topotune/v1 there; generate the stubs with "
                              f"tests/clients/python/generate_stubs.sh {stubs_dir}")
        sys.path.insert(0, os.path.abspath(stubs_dir))
    mods = {"grpc": grpc}
    for name in ("common_pb2", "plans_pb2", "plans_pb2_grpc", "admin_pb2", "admin_pb2_grpc"):
        try:
            mods[name] = importlib.import_module(f"topotune.v1.{name}")
        except ImportError as e:
            where = f"--stubs {stubs_dir}" if stubs_dir is not None else "PYTHONPATH (or give --stubs DIR)"
            raise ClientError(
                f"cannot import topotune.v1.{name} from {where}: {e}. Generate the stubs with "
                "tests/clients/python/generate_stubs.sh DIR; code from protoc 3.21 needs python3-protobuf "
                ">= 3.20") from e
    return mods


def health_messages():
    """The classes of grpc.health.v1.HealthCheckRequest and HealthCheckResponse.

    They are built from a descriptor written here, in a private pool: no
    grpc_health package and no copy of health.proto are needed, and a pool of
    our own cannot clash with a grpc_health package that is installed."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="topotune_client/grpc_health_v1.proto", package="grpc.health.v1",
                                           syntax="proto3")
    req = f.message_type.add(name="HealthCheckRequest")
    req.field.add(name="service", number=1, type=fdp.TYPE_STRING, label=fdp.LABEL_OPTIONAL)
    resp = f.message_type.add(name="HealthCheckResponse")
    status = resp.enum_type.add(name="ServingStatus")
    for name, number in (("UNKNOWN", 0), ("SERVING", 1), ("NOT_SERVING", 2), ("SERVICE_UNKNOWN", 3)):
        status.value.add(name=name, number=number)
    resp.field.add(name="status", number=1, type=fdp.TYPE_ENUM, label=fdp.LABEL_OPTIONAL,
                   type_name=".grpc.health.v1.HealthCheckResponse.ServingStatus")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(f.SerializeToString())
    req_desc = pool.FindMessageTypeByName("grpc.health.v1.HealthCheckRequest")
    resp_desc = pool.FindMessageTypeByName("grpc.health.v1.HealthCheckResponse")
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(req_desc), message_factory.GetMessageClass(resp_desc)
    factory = message_factory.MessageFactory(pool)
    return factory.GetPrototype(req_desc), factory.GetPrototype(resp_desc)


def check_health(grpc, channel, call):
    """Checks every service; prints one line each. True when all are SERVING."""
    request_cls, response_cls = health_messages()
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=request_cls.SerializeToString,
                                response_deserializer=response_cls.FromString)
    names = response_cls.DESCRIPTOR.enum_types_by_name["ServingStatus"].values_by_number
    all_serving = True
    for service in HEALTH_SERVICES:
        label = service or '""'
        try:
            response = check(request_cls(service=service), **call)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                print("health: UNIMPLEMENTED (this topotuned has no health service)")
                return False
            if e.code() == grpc.StatusCode.NOT_FOUND:  # Check's answer for a service it does not know.
                print(f"health {label}: NOT_FOUND (unknown service)")
                all_serving = False
                continue
            raise rpc_error(f"grpc.health.v1.Health/Check({label})", e) from e
        status = names[response.status].name if response.status in names else str(response.status)
        print(f"health {label}: {status}")
        all_serving = all_serving and status == "SERVING"
    return all_serving


def size(n):
    """Bytes as the API's message sizes are usually read: 65536 -> 64KiB."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def topology_hosts(yaml_text):
    """The host names of a topology file (GetTopologyResponse.yaml), in order."""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        doc = yaml.safe_load(yaml_text) or {}
        return [h["name"] if isinstance(h, dict) else str(h) for h in doc.get("hosts") or []]
    # Without python3-yaml: topotuned writes block style, one "- name: X"
    # (or "- {name: X, ...}") per host under "hosts:".
    hosts, in_hosts = [], False
    for line in yaml_text.splitlines():
        if re.match(r"^\S", line):
            in_hosts = line.startswith("hosts:")
            continue
        m = re.match(r"^\s*-\s*\{?\s*name:\s*([^,}\s]+)", line) if in_hosts else None
        if m:
            hosts.append(m.group(1).strip("'\""))
    return hosts


def print_table(indent, table):
    for r in table.ranges:
        end = size(r.max_msize) if r.max_msize else "no end"
        print(f"{indent}{size(r.min_msize)} to {end}: {r.algorithm}")


def print_plan(mods, response, wanted_ranks):
    common = mods["common_pb2"]
    plans = mods["plans_pb2"]
    print(f"plan: plan_id {response.plan_id}, topology version {response.topology_version}, "
          f"{response.nprocs} ranks, {response.ranks_per_node} ranks per node")
    # Stubs generated from protos older than GetPlanResponse.warnings lack it.
    for warning in getattr(response, "warnings", ()):
        print(f"  warning: {warning}")
    for plan in response.plans:
        collective = common.Collective.Name(plan.collective).removeprefix("COLLECTIVE_").lower()
        source = plans.DecisionSource.Name(plan.source).removeprefix("DECISION_SOURCE_")
        layout = f" (measured on {plan.tuned_nprocs} ranks, {plan.tuned_ranks_per_node} per node)" \
            if plan.tuned_nprocs else ""
        print(f"  {collective}: source {source}{layout}")
        print("    decision table:")
        print_table("      ", plan.table)
        for pt in plan.pattern_tables:
            pattern = common.AlltoallvPattern.Name(pt.pattern).removeprefix("ALLTOALLV_PATTERN_")
            print(f"    decision table of pattern {pattern} (source "
                  f"{plans.DecisionSource.Name(pt.source).removeprefix('DECISION_SOURCE_')}):")
            print_table("      ", pt.table)
        if not plan.schedules:
            print("    schedules: none")
        for s in plan.schedules:
            kind = ", host-combined" if s.host_of_rank else ""
            head = f"    schedule {s.algorithm}: num_ranks {s.num_ranks}, num_phases {s.num_phases}{kind}"
            if s.programs:
                ranks = ",".join(str(p.rank) for p in s.programs)
                which = f"ranks {ranks}" if wanted_ranks else "every rank"
                print(f"{head}, {len(s.programs)} programs returned ({which})")
            else:
                print(f"{head}, programs omitted: {s.omitted_reason or '(no reason given)'}")
        if plan.HasField("ring"):
            print(f"    ring order: {len(plan.ring.order)} ranks")


def run(args):
    mods = import_stubs(args.stubs)
    grpc = mods["grpc"]
    common, plans, admin = mods["common_pb2"], mods["plans_pb2"], mods["admin_pb2"]

    metadata = []
    if args.token_file is not None:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise ClientError(f"--token-file: cannot read {args.token_file}: {e.strerror}") from e
        if not token:
            raise ClientError(f"--token-file: {args.token_file} is empty")
        metadata.append(("authorization", f"Bearer {token}"))

    options = [("grpc.max_receive_message_length", MAX_PLAN_RESPONSE_BYTES)]
    if args.ca_file is not None:
        try:
            with open(args.ca_file, "rb") as f:
                ca = f.read()
        except OSError as e:
            raise ClientError(f"--ca-file: cannot read {args.ca_file}: {e.strerror}") from e
        channel = grpc.secure_channel(args.server, grpc.ssl_channel_credentials(root_certificates=ca), options)
    else:
        channel = grpc.insecure_channel(args.server, options)
    call = {"timeout": args.timeout, "metadata": metadata}
    print(f"server: {args.server}{' (TLS)' if args.ca_file else ''}")

    with channel:
        healthy = True
        if not args.skip_health:
            healthy = check_health(grpc, channel, call)

        try:
            topo = mods["admin_pb2_grpc"].AdminStub(channel).GetTopology(admin.GetTopologyRequest(), **call)
        except grpc.RpcError as e:
            raise rpc_error("topotune.v1.Admin/GetTopology", e) from e
        origin = admin.TopologyOrigin.Name(topo.origin).removeprefix("TOPOLOGY_ORIGIN_")
        print(f"topology: version {topo.version}, {topo.num_switches} switches, {topo.num_hosts} hosts, "
              f"{topo.num_links} links (origin {origin}, {topo.source})")

        rank_hosts = args.rank_hosts
        if rank_hosts is None:
            rank_hosts = topology_hosts(topo.yaml)
            if not rank_hosts:
                raise ClientError("the topology lists no hosts; give --rank-hosts")
        collective = common.Collective.Value("COLLECTIVE_" + args.collective.upper())
        request = plans.GetPlanRequest(job_id=args.job_id, rank_hosts=rank_hosts, collectives=[collective],
                                       tables_only=args.tables_only, ranks=args.ranks or [])
        if args.force:
            request.force.add(collective=collective, algorithm=args.force)
        print(f"placement: {len(rank_hosts)} ranks on {','.join(rank_hosts)}")
        try:
            response = mods["plans_pb2_grpc"].PlansStub(channel).GetPlan(request, **call)
        except grpc.RpcError as e:
            raise rpc_error("topotune.v1.Plans/GetPlan", e) from e
        print_plan(mods, response, args.ranks)

    if args.require_health and not healthy:
        print(f"{PROG}: --require-health: the health service did not answer SERVING for every service",
              file=sys.stderr)
        return EXIT_NO_HEALTH
    return EXIT_OK


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except ClientError as e:
        sys.stdout.flush()
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:
        # stdout closed early (`| head`): no traceback, and none at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
