#include "agent/lldp.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "agent/facts.h"
#include "agent/process.h"
#include "proto/limits.h"

namespace topotune::agent {
namespace {

using nlohmann::json;

// A JSON scalar as text: strings as they are, numbers and booleans as JSON
// writes them (lldpcli turns the attribute values "on"/"yes" into true);
// "" for null, objects and arrays.
std::string Text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number() || j.is_boolean()) return j.dump();
  return "";
}

// The member `key` of an object, or null.
const json& Member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// Calls fn(name, body) for each element of a "name"-keyed list: the object
// {"eth0": {...}} (one element) or the array [{"p1": {...}}, {"p2": {...}}].
template <typename Fn>
void ForEachNamed(const json& j, Fn fn) {
  if (j.is_array()) {
    for (const json& e : j) ForEachNamed(e, fn);
    return;
  }
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) fn(it.key(), it.value());
}

// A string cut to kMaxLldpStringBytes at a UTF-8 character boundary.
std::string Bounded(std::string s, std::string_view field, std::vector<std::string>* warnings) {
  const size_t limit = static_cast<size_t>(v1::limits::kMaxLldpStringBytes);
  if (s.size() <= limit) return s;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  warnings->push_back(fmt::format("lldpcli: {} of {} bytes cut to {} (the 802.1AB maximum)", field, s.size(), cut));
  s.resize(cut);
  return s;
}

// The first IPv4 address of a "mgmt-ip" (a string or a list), else the first
// address.
std::string ManagementAddress(const json& mgmt) {
  std::vector<std::string> all;
  if (mgmt.is_array()) {
    for (const json& e : mgmt)
      if (std::string t = Text(e); !t.empty()) all.push_back(t);
  } else if (std::string t = Text(mgmt); !t.empty()) {
    all.push_back(t);
  }
  auto v4 = std::find_if(all.begin(), all.end(), [](const std::string& a) { return a.find(':') == std::string::npos; });
  if (v4 != all.end()) return *v4;
  return all.empty() ? "" : all.front();
}

// One interface's entry: {"via": ..., "chassis": {...}, "port": {...}}. Adds
// the neighbour to `out` or a warning saying why not.
void ParseInterface(const std::string& ifname, const json& body, LldpNeighbors* out) {
  auto warn = [&](const std::string& why) {
    out->warnings.push_back(fmt::format("lldpcli: neighbour on {} ignored: {}", ifname, why));
  };
  if (!body.is_object()) return warn("its entry is not an object");

  const json* chassis = &Member(body, "chassis");
  if (chassis->is_array()) {
    if (chassis->empty()) return warn("empty chassis list");
    chassis = &chassis->front();
  }
  if (!chassis->is_object()) return warn("no chassis");
  // Unnamed: the body itself, with an "id" object. Named: {"NAME": body}.
  std::string system_name;
  const json* cbody = chassis;
  const json& direct_id = Member(*chassis, "id");
  const bool unnamed = direct_id.is_object() && (direct_id.contains("type") || direct_id.contains("value"));
  if (!unnamed) {
    if (chassis->size() != 1 || !chassis->begin().value().is_object()) return warn("chassis has no id");
    system_name = chassis->begin().key();
    cbody = &chassis->begin().value();
  }
  const json& cid = Member(*cbody, "id");
  const json& port = Member(body, "port");
  const json& pid = Member(port, "id");
  if (!port.is_object()) return warn("no port");

  v1::LldpNeighbor n;
  n.set_local_interface(Bounded(ifname, "local interface", &out->warnings));
  // An id is {"type": T, "value": V}; a bare string is a value of unknown type.
  const std::string ctype = cid.is_object() ? Text(Member(cid, "type")) : "";
  std::string cvalue = cid.is_object() ? Text(Member(cid, "value")) : Text(cid);
  const std::string ptype = pid.is_object() ? Text(Member(pid, "type")) : "";
  std::string pvalue = pid.is_object() ? Text(Member(pid, "value")) : Text(pid);
  if (cvalue.empty()) return warn("chassis has no id");
  if (pvalue.empty()) return warn("port has no id");

  const v1::LldpChassisIdSubtype csub = ChassisIdSubtypeFromLldpcli(ctype);
  if (csub == v1::LLDP_CHASSIS_ID_SUBTYPE_UNSPECIFIED && ctype != "unhandled")
    out->warnings.push_back(fmt::format("lldpcli: {}: unknown chassis id type '{}'", ifname, ctype));
  if (csub == v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS) {
    std::optional<std::string> mac = NormalizeMac(cvalue);
    if (!mac) return warn(fmt::format("chassis id '{}' has type mac but is not a MAC address", cvalue));
    cvalue = *mac;
  }
  const v1::LldpPortIdSubtype psub = PortIdSubtypeFromLldpcli(ptype);
  if (psub == v1::LLDP_PORT_ID_SUBTYPE_UNSPECIFIED && ptype != "unhandled")
    out->warnings.push_back(fmt::format("lldpcli: {}: unknown port id type '{}'", ifname, ptype));
  if (psub == v1::LLDP_PORT_ID_SUBTYPE_MAC_ADDRESS) {
    std::optional<std::string> mac = NormalizeMac(pvalue);
    if (!mac) return warn(fmt::format("port id '{}' has type mac but is not a MAC address", pvalue));
    pvalue = *mac;
  }
  n.set_chassis_id_subtype(csub);
  n.set_chassis_id(Bounded(cvalue, "chassis id", &out->warnings));
  n.set_system_name(Bounded(system_name, "system name", &out->warnings));
  n.set_port_id_subtype(psub);
  n.set_port_id(Bounded(pvalue, "port id", &out->warnings));
  n.set_port_description(Bounded(Text(Member(port, "descr")), "port description", &out->warnings));
  n.set_management_address(Bounded(ManagementAddress(Member(*cbody, "mgmt-ip")), "management address", &out->warnings));
  out->neighbors.push_back(std::move(n));
}

}  // namespace

v1::LldpChassisIdSubtype ChassisIdSubtypeFromLldpcli(std::string_view type) {
  if (type == "mac") return v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS;
  if (type == "ip") return v1::LLDP_CHASSIS_ID_SUBTYPE_NETWORK_ADDRESS;
  if (type == "ifname") return v1::LLDP_CHASSIS_ID_SUBTYPE_INTERFACE_NAME;
  if (type == "ifalias") return v1::LLDP_CHASSIS_ID_SUBTYPE_INTERFACE_ALIAS;
  if (type == "local") return v1::LLDP_CHASSIS_ID_SUBTYPE_LOCAL;
  return v1::LLDP_CHASSIS_ID_SUBTYPE_UNSPECIFIED;
}

v1::LldpPortIdSubtype PortIdSubtypeFromLldpcli(std::string_view type) {
  if (type == "mac") return v1::LLDP_PORT_ID_SUBTYPE_MAC_ADDRESS;
  if (type == "ip") return v1::LLDP_PORT_ID_SUBTYPE_NETWORK_ADDRESS;
  if (type == "ifname") return v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME;
  if (type == "ifalias") return v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_ALIAS;
  if (type == "local") return v1::LLDP_PORT_ID_SUBTYPE_LOCAL;
  return v1::LLDP_PORT_ID_SUBTYPE_UNSPECIFIED;
}

LldpNeighbors ParseLldpcliJson(std::string_view text) {
  LldpNeighbors out;
  const json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    std::string head(text.substr(0, 60));
    std::replace_if(
        head.begin(), head.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    out.warnings.push_back(
        fmt::format("lldpcli: output is not JSON ({} bytes, starting '{}'); no LLDP neighbour", text.size(), head));
    return out;
  }
  const json& lldp = Member(root, "lldp");
  if (lldp.is_null()) {
    out.warnings.push_back("lldpcli: output has no \"lldp\" object; no LLDP neighbour");
    return out;
  }
  // The accessors above never throw on a wrong type, but nlohmann-json's
  // iteration and key access can on a malformed document: keep that a
  // warning too.
  try {
    auto each_lldp = [&](const json& l) {
      ForEachNamed(Member(l, "interface"),
                   [&](const std::string& ifname, const json& body) { ParseInterface(ifname, body, &out); });
    };
    if (lldp.is_array()) {
      for (const json& l : lldp) each_lldp(l);
    } else {
      each_lldp(lldp);
    }
  } catch (const std::exception& e) {
    out.warnings.push_back(fmt::format("lldpcli: unexpected JSON shape: {}", e.what()));
  }
  return out;
}

std::optional<v1::LldpNeighbor> NeighborOn(const LldpNeighbors& all, std::string_view interface,
                                           std::vector<std::string>* warnings) {
  std::vector<const v1::LldpNeighbor*> on;
  for (const v1::LldpNeighbor& n : all.neighbors)
    if (interface.empty() || n.local_interface() == interface) on.push_back(&n);
  if (on.empty()) return std::nullopt;
  if (on.size() > 1 && warnings) {
    warnings->push_back(fmt::format("lldpcli: {} neighbours on {}; using the first ({} port {})", on.size(),
                                    interface.empty() ? "the host" : interface, on[0]->system_name(),
                                    on[0]->port_id()));
  }
  return *on[0];
}

StatusOr<std::string> RunLldpcli(const std::string& lldpd_socket, std::chrono::milliseconds timeout) {
  const std::string lldpcli = FindExecutable("lldpcli");
  if (lldpcli.empty()) return Status::NotFound("lldpcli is not installed (Debian package lldpd)");
  std::vector<std::string> argv = {lldpcli};
  if (!lldpd_socket.empty()) argv.insert(argv.end(), {"-u", lldpd_socket});
  argv.insert(argv.end(), {"-f", "json", "show", "neighbors"});
  StatusOr<ProcessResult> r = RunProcess(argv, timeout);
  if (!r.ok()) return r.status();
  if (r->exit_status != 0) {
    std::string why = r->err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (const size_t nl = why.rfind('\n'); nl != std::string::npos) why = why.substr(nl + 1);
    return Status::FailedPrecondition(fmt::format("lldpcli exited with status {} (is lldpd running?){}{}",
                                                  r->exit_status, why.empty() ? "" : ": ", why));
  }
  return std::move(r->out);
}

}  // namespace topotune::agent
