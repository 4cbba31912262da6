// TCP loss counters of the network namespace a rank runs in, for
// topotune-bench --tcp-counters: how many retransmission timeouts (each a
// stall of 200 ms or more) and retransmitted segments each algorithm's
// timed calls caused.
//
// Accepts: the text of /proc/net/netstat (TcpExt: TCPTimeouts) and of
//   /proc/net/snmp (Tcp: RetransSegs), tables of a header line of names and
//   a line of values under one prefix.
// Returns: the counters, or nullopt when a file is unreadable or lacks them
//   (a kernel without TcpExt, a non-Linux system).
#ifndef TOPOTUNE_BENCH_KERNELS_DRIVER_TCP_COUNTERS_H_
#define TOPOTUNE_BENCH_KERNELS_DRIVER_TCP_COUNTERS_H_

#include <optional>
#include <string_view>

namespace topotune::bench {

struct TcpCounters {
  long long timeouts = 0;      // TcpExt TCPTimeouts: retransmission timer expiries.
  long long retrans_segs = 0;  // Tcp RetransSegs: segments sent again.
};

// The value of `name` in the table of lines starting with "prefix:"; nullopt
// when the table or the name is missing or the value is not a number.
std::optional<long long> ProcNetValue(std::string_view text, std::string_view prefix, std::string_view name);

// Both counters from the two files' texts.
std::optional<TcpCounters> ParseTcpCounters(std::string_view netstat, std::string_view snmp);

// Reads /proc/net/netstat and /proc/net/snmp of this process's namespace.
std::optional<TcpCounters> ReadTcpCounters();

}  // namespace topotune::bench

#endif  // TOPOTUNE_BENCH_KERNELS_DRIVER_TCP_COUNTERS_H_
