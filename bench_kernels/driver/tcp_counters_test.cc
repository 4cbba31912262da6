#include "bench_kernels/driver/tcp_counters.h"

#include <gtest/gtest.h>

namespace topotune::bench {
namespace {

// Excerpts of Linux 6.1's files, columns cut.
constexpr char kNetstat[] =
    "TcpExt: SyncookiesSent SyncookiesRecv TCPTimeouts TCPLossProbes\n"
    "TcpExt: 0 0 17 4\n"
    "IpExt: InNoRoutes InTruncatedPkts\n"
    "IpExt: 0 0\n";
constexpr char kSnmp[] =
    "Ip: Forwarding DefaultTTL\n"
    "Ip: 1 64\n"
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs "
    "OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
    "Tcp: 1 200 120000 -1 10 9 0 0 4 5000 6000 123 0 2 0\n"
    "Udp: InDatagrams NoPorts\n"
    "Udp: 3 0\n";

TEST(TcpCounters, ReadsTimeoutsAndRetransmittedSegments) {
  auto c = ParseTcpCounters(kNetstat, kSnmp);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->timeouts, 17);
  EXPECT_EQ(c->retrans_segs, 123);
}

TEST(TcpCounters, ValuesByNameUnderTheirPrefix) {
  EXPECT_EQ(ProcNetValue(kSnmp, "Tcp", "MaxConn"), -1);
  EXPECT_EQ(ProcNetValue(kSnmp, "Udp", "InDatagrams"), 3);
  EXPECT_EQ(ProcNetValue(kNetstat, "IpExt", "InTruncatedPkts"), 0);
  // "Tcp" is not "TcpExt", nor a name of another table.
  EXPECT_FALSE(ProcNetValue(kNetstat, "Tcp", "TCPTimeouts").has_value());
  EXPECT_FALSE(ProcNetValue(kSnmp, "Tcp", "InDatagrams").has_value());
}

TEST(TcpCounters, MissingOrMalformedTablesGiveNothing) {
  EXPECT_FALSE(ParseTcpCounters("", kSnmp).has_value());
  EXPECT_FALSE(ParseTcpCounters(kNetstat, "Tcp: RetransSegs\n").has_value());
  EXPECT_FALSE(ProcNetValue("Tcp: RetransSegs\nTcp: 12x\n", "Tcp", "RetransSegs").has_value());
}

TEST(TcpCounters, ThisMachineHasThem) {
  // Linux always has both files; the values only grow.
  auto a = ReadTcpCounters();
  ASSERT_TRUE(a.has_value());
  auto b = ReadTcpCounters();
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(b->timeouts, a->timeouts);
  EXPECT_GE(b->retrans_segs, a->retrans_segs);
}

}  // namespace
}  // namespace topotune::bench
