// The decisions of the rules export tests (tests/ompi_rules,
// tests/mpich_rules): their generators store test tables the way tuning
// does, for `topotune export` to fetch from a real topotuned.
//
// Thread-safety: opens its own store; call from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/store.h"
#include "tuner/ompi_rules.h"
#include "tuner/status.h"
#include "tuner/topology_io.h"

namespace topotune::rules_test {

// Stores the topology file `topology_path` in topotuned's `database` (the
// same version topotuned then finds when started with --topology-file of
// that file) and `sets` as that version's decisions, one node each (ranks
// per node = communicator size), alltoallv as the uniform pattern's. The
// topology version, or why it could not.
inline StatusOr<int64_t> SeedRuleSets(const std::string& database, const std::string& topology_path,
                                      const std::vector<OmpiRuleSet>& sets) {
  auto topology = LoadTopologyFile(topology_path);
  if (!topology.ok()) return topology.status();
  auto store = db::Store::Open(database);
  if (!store.ok()) return store.status();
  auto version = store->PutTopology(*topology, topology_path);
  if (!version.ok()) return version.status();
  for (const OmpiRuleSet& s : sets) {
    auto put = store->PutDecision(
        {*version, s.collective, s.comm_size, s.comm_size, s.collective == "alltoallv" ? "uniform" : ""}, s.table, {});
    if (!put.ok()) return put.status();
  }
  return *version;
}

}  // namespace topotune::rules_test
