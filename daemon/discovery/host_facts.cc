// The host facts of a tree build (HostFact, tree_builder.h): hosts files
// parsed with errors naming the file, line, host and key, and the facts of a
// hosts file and of agents merged by host name.
//
// Thread-safety: pure functions.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "daemon/discovery/tree_builder.h"

namespace topotune::discovery {

StatusOr<std::vector<HostFact>> ParseHostFacts(const std::string& text, const std::string& source) {
  std::vector<HostFact> facts;
  try {
    YAML::Node root = YAML::Load(text);
    YAML::Node hosts = root["hosts"];
    if (!hosts || !hosts.IsSequence())
      return Status::InvalidArgument(fmt::format("{}: expected a 'hosts:' list of {{name, macs, mpi_mac}}", source));
    std::set<std::string> names;
    for (size_t i = 0; i < hosts.size(); ++i) {
      const YAML::Node& h = hosts[i];
      std::string where = fmt::format("{}:{}: hosts[{}]", source, h.Mark().line + 1, i);
      if (!h.IsMap() || !h["name"] || !h["name"].IsScalar() || h["name"].Scalar().empty())
        return Status::InvalidArgument(fmt::format("{}: each host needs a non-empty 'name'", where));
      HostFact f;
      f.name = h["name"].Scalar();
      if (!names.insert(f.name).second)
        return Status::InvalidArgument(fmt::format("{}: duplicate host name '{}'", where, f.name));
      if (h["macs"]) {
        if (!h["macs"].IsSequence())
          return Status::InvalidArgument(fmt::format("{}.macs: expected a list of MAC addresses", where));
        for (size_t j = 0; j < h["macs"].size(); ++j) {
          std::string text_mac = h["macs"][j].as<std::string>();
          auto mac = text_mac.size() == 6 ? std::nullopt : ParseMac(text_mac);
          if (!mac)
            return Status::InvalidArgument(
                fmt::format("{}.macs[{}]: '{}' is not a MAC address (use aa:bb:cc:dd:ee:ff)", where, j, text_mac));
          f.macs.push_back(*mac);
        }
      }
      if (const YAML::Node mpi = h["mpi_mac"]) {
        const std::string text_mac = mpi.IsScalar() ? mpi.Scalar() : "";
        // Six raw bytes are a walk's form, never a file's (as for macs).
        auto mac = text_mac.size() == 6 ? std::nullopt : ParseMac(text_mac);
        if (!mac) {
          const std::string shown = mpi.IsScalar() || mpi.IsNull() ? "'" + Printable(text_mac) + "'" : "a list or map";
          return Status::InvalidArgument(
              fmt::format("{}.mpi_mac: {} is not a MAC address (use aa:bb:cc:dd:ee:ff, the MAC of the NIC MPI uses)",
                          where, shown));
        }
        if (std::find(f.macs.begin(), f.macs.end(), *mac) == f.macs.end()) f.macs.push_back(*mac);
        f.mpi_mac = *mac;
      }
      facts.push_back(std::move(f));
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg));
  }
  return facts;
}

StatusOr<std::vector<HostFact>> LoadHostFacts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError(fmt::format("{}: cannot read the hosts file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseHostFacts(ss.str(), path);
}

std::vector<HostFact> MergeHostFacts(std::vector<HostFact> file, std::vector<HostFact> agents,
                                     std::vector<std::string>* warnings) {
  auto add_mac = [](HostFact& f, const Mac& mac) {
    if (std::find(f.macs.begin(), f.macs.end(), mac) == f.macs.end()) f.macs.push_back(mac);
  };
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < file.size(); ++i) by_name.emplace(file[i].name, i);
  for (HostFact& agent : agents) {
    if (agent.mpi_mac) add_mac(agent, *agent.mpi_mac);
    auto it = by_name.find(agent.name);
    if (it == by_name.end()) {
      if (agent.macs.empty()) continue;
      by_name.emplace(agent.name, file.size());
      file.push_back(std::move(agent));
      continue;
    }
    HostFact& known = file[it->second];
    for (const Mac& mac : agent.macs) add_mac(known, mac);
    if (!agent.mpi_mac) continue;
    if (!known.mpi_mac) {
      known.mpi_mac = agent.mpi_mac;
    } else if (*known.mpi_mac != *agent.mpi_mac && warnings != nullptr) {
      warnings->push_back(fmt::format("host '{}': the hosts file's mpi_mac {} is kept; its agent reports {}",
                                      Printable(known.name), FormatMac(*known.mpi_mac), FormatMac(*agent.mpi_mac)));
    }
  }
  return file;
}

}  // namespace topotune::discovery
