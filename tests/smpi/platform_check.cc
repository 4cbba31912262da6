// platform_check: loads a SimGrid platform written by `topotune topology
// export --simgrid` into SimGrid itself (s4u, no simulation run) and checks it
// against the topology file it came from:
//
//   * every host exists, with as many cores as the host has slots;
//   * every topology link is a SPLITDUPLEX link whose halves "<id>_UP" and
//     "<id>_DOWN" both have the link's bandwidth and latency (or the default
//     latency given on the command line, for links without one);
//   * for every ordered pair of distinct hosts, the route SimGrid computes
//     (Floyd over the one-hop routes) is exactly the tree path, each link
//     taken in its UP half when travelled from its first endpoint in the file
//     to its second and in its DOWN half the other way, and the route's
//     latency is the sum of the path's latencies.
//
// The last check is the one that matters for full duplex: were UP and DOWN
// swapped on one side, traffic in opposite directions would share one half.
//
// Usage: platform_check TOPOLOGY.yaml PLATFORM.xml [DEFAULT_LATENCY]
// Exit status 0 when everything matches, 1 otherwise (mismatches on stderr).
#include <cmath>
#include <cstdio>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/topology.h"
#include "tuner/topology_io.h"

namespace {

using topotune::Topology;

int errors = 0;

template <typename... Args>
void Fail(const char* format, Args... args) {
  if (++errors <= 20) {
    std::fprintf(stderr, "platform_check: ");
    std::fprintf(stderr, format, args...);
    std::fprintf(stderr, "\n");
  }
}

bool Near(double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y)); }

// The links from node `from` to node `to` as (link index, travelled from a to b).
std::vector<std::pair<int, bool>> TreePath(const Topology& topo, int from, int to) {
  std::vector<int> via(topo.num_nodes(), -2);  // Link that reached each node; -1 at `from`.
  std::vector<int> stack = {from};
  via[from] = -1;
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    for (int link : topo.incident(node)) {
      const int next = topo.Other(link, node);
      if (via[next] != -2) continue;
      via[next] = link;
      stack.push_back(next);
    }
  }
  std::vector<std::pair<int, bool>> path;
  for (int node = to; node != from;) {
    const int link = via[node];
    const int prev = topo.Other(link, node);
    path.emplace_back(link, topo.links()[link].a == prev);
    node = prev;
  }
  return {path.rbegin(), path.rend()};
}

}  // namespace

int main(int argc, char** argv) {
  simgrid::s4u::Engine engine(&argc, argv);  // Takes SimGrid's own --cfg/--log flags out of argv.
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: platform_check TOPOLOGY.yaml PLATFORM.xml [DEFAULT_LATENCY]\n");
    return 2;
  }
  auto topo = topotune::LoadTopologyFile(argv[1]);
  if (!topo.ok()) {
    std::fprintf(stderr, "platform_check: %s\n", topo.status().message().c_str());
    return 2;
  }
  double default_latency = 10e-6;
  if (argc == 4) {
    auto parsed = topotune::ParseLatency(argv[3]);
    if (!parsed) {
      std::fprintf(stderr, "platform_check: bad latency '%s'\n", argv[3]);
      return 2;
    }
    default_latency = *parsed;
  }
  engine.load_platform(argv[2]);
  engine.seal_platform();

  const auto& nodes = topo->nodes();
  const auto& links = topo->links();
  std::vector<simgrid::s4u::Host*> hosts(topo->num_nodes(), nullptr);
  for (int h : topo->hosts()) {
    hosts[h] = engine.host_by_name_or_null(nodes[h].name);
    if (hosts[h] == nullptr) {
      Fail("host %s is missing", nodes[h].name.c_str());
    } else if (hosts[h]->get_core_count() != nodes[h].slots) {
      Fail("host %s has %d cores, expected %d (its slots)", nodes[h].name.c_str(), hosts[h]->get_core_count(),
           nodes[h].slots);
    }
  }
  if (engine.get_host_count() != topo->hosts().size())
    Fail("the platform has %zu hosts, the topology %zu", engine.get_host_count(), topo->hosts().size());

  std::vector<std::string> ids(links.size());
  std::vector<double> latency(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    ids[i] = nodes[links[i].a].name + "-" + nodes[links[i].b].name;
    latency[i] = links[i].latency_s > 0 ? links[i].latency_s : default_latency;
    const simgrid::s4u::Link* whole = nullptr;
    try {
      whole = engine.split_duplex_link_by_name(ids[i]);
    } catch (const std::invalid_argument&) {
      // Reported below.
    }
    if (whole == nullptr || whole->get_sharing_policy() != simgrid::s4u::Link::SharingPolicy::SPLITDUPLEX) {
      Fail("link %s is missing or not SPLITDUPLEX", ids[i].c_str());
      continue;
    }
    for (const char* half : {"_UP", "_DOWN"}) {
      const simgrid::s4u::Link* l = engine.link_by_name_or_null(ids[i] + half);
      if (l == nullptr) {
        Fail("link %s%s is missing", ids[i].c_str(), half);
        continue;
      }
      if (!Near(l->get_bandwidth(), links[i].speed_bps / 8))
        Fail("link %s%s: %g B/s, expected %g", ids[i].c_str(), half, l->get_bandwidth(), links[i].speed_bps / 8);
      if (!Near(l->get_latency(), latency[i]))
        Fail("link %s%s: latency %g s, expected %g", ids[i].c_str(), half, l->get_latency(), latency[i]);
    }
  }

  long routes = 0;
  for (int src : topo->hosts()) {
    for (int dst : topo->hosts()) {
      if (src == dst || hosts[src] == nullptr || hosts[dst] == nullptr) continue;
      std::vector<simgrid::s4u::Link*> route;
      double route_latency = 0;
      hosts[src]->route_to(hosts[dst], route, &route_latency);
      std::string got, want;
      double want_latency = 0;
      for (const simgrid::s4u::Link* l : route) got += " " + l->get_name();
      for (auto [link, forward] : TreePath(*topo, src, dst)) {
        want += " " + ids[link] + (forward ? "_UP" : "_DOWN");
        want_latency += latency[link];
      }
      if (got != want)
        Fail("route %s -> %s:%s; expected%s", nodes[src].name.c_str(), nodes[dst].name.c_str(), got.c_str(),
             want.c_str());
      if (!Near(route_latency, want_latency))
        Fail("route %s -> %s: latency %g s, expected %g", nodes[src].name.c_str(), nodes[dst].name.c_str(),
             route_latency, want_latency);
      ++routes;
    }
  }
  if (errors > 0) {
    std::fprintf(stderr, "platform_check: %s: %d mismatches\n", argv[2], errors);
    return 1;
  }
  std::printf("platform_check: %s: %zu hosts, %zu links, %ld routes match %s\n", argv[2], topo->hosts().size(),
              links.size(), routes, argv[1]);
  return 0;
}
