#include "bench_kernels/driver/tcp_counters.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace topotune::bench {
namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<std::string> Slurp(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<long long> ProcNetValue(std::string_view text, std::string_view prefix, std::string_view name) {
  // The first line under the prefix names the columns, the next one holds
  // their values.
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.size() > prefix.size() && line.substr(0, prefix.size()) == prefix && line[prefix.size()] == ':')
      lines.push_back(line.substr(prefix.size() + 1));
    start = end + 1;
  }
  if (lines.size() < 2) return std::nullopt;
  std::vector<std::string_view> names = Words(lines[0]), values = Words(lines[1]);
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (names[i] != name) continue;
    long long v = 0;
    auto [end, ec] = std::from_chars(values[i].data(), values[i].data() + values[i].size(), v);
    if (ec != std::errc() || end != values[i].data() + values[i].size()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

std::optional<TcpCounters> ParseTcpCounters(std::string_view netstat, std::string_view snmp) {
  auto timeouts = ProcNetValue(netstat, "TcpExt", "TCPTimeouts");
  auto retrans = ProcNetValue(snmp, "Tcp", "RetransSegs");
  if (!timeouts || !retrans) return std::nullopt;
  return TcpCounters{.timeouts = *timeouts, .retrans_segs = *retrans};
}

std::optional<TcpCounters> ReadTcpCounters() {
  auto netstat = Slurp("/proc/net/netstat");
  auto snmp = Slurp("/proc/net/snmp");
  if (!netstat || !snmp) return std::nullopt;
  return ParseTcpCounters(*netstat, *snmp);
}

}  // namespace topotune::bench
