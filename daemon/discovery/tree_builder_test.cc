// Hosts files (ParseHostFacts) and the merge of their facts with agents'
// (MergeHostFacts). Tree building itself is tested over generated trees in
// tests/discovery/discovery_tree_test.cc.
#include "daemon/discovery/tree_builder.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace topotune::discovery {
namespace {

Mac M(const char* text) { return ParseMac(text).value(); }

std::vector<std::string> Texts(const std::vector<Mac>& macs) {
  std::vector<std::string> out;
  for (const Mac& m : macs) out.push_back(FormatMac(m));
  return out;
}

TEST(HostFacts, MpiMacIsReadAndAddedToMacs) {
  const std::string text =
      "hosts:\n"
      "  - name: n0\n"
      "    macs: [\"02:00:00:00:00:01\", \"02:00:00:00:01:01\"]\n"
      "    mpi_mac: \"02-00-00-00-01-01\"\n"  // Any form ParseMac takes.
      "  - name: n1\n"
      "    macs: [\"02:00:00:00:00:02\"]\n"
      "    mpi_mac: 02:00:00:00:02:02\n"  // Not in macs: added.
      "  - name: n2\n"
      "    mpi_mac: \"02:00:00:00:00:03\"\n"  // No macs at all.
      "  - name: n3\n"
      "    macs: [\"02:00:00:00:00:04\"]\n";
  StatusOr<std::vector<HostFact>> facts = ParseHostFacts(text, "hosts.yaml");
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  ASSERT_EQ(facts->size(), 4u);
  const std::vector<HostFact>& f = *facts;
  EXPECT_EQ(Texts(f[0].macs), (std::vector<std::string>{"02:00:00:00:00:01", "02:00:00:00:01:01"}));
  ASSERT_TRUE(f[0].mpi_mac.has_value());
  EXPECT_EQ(FormatMac(*f[0].mpi_mac), "02:00:00:00:01:01");
  EXPECT_EQ(Texts(f[1].macs), (std::vector<std::string>{"02:00:00:00:00:02", "02:00:00:00:02:02"}));
  ASSERT_TRUE(f[1].mpi_mac.has_value());
  EXPECT_EQ(FormatMac(*f[1].mpi_mac), "02:00:00:00:02:02");
  EXPECT_EQ(Texts(f[2].macs), std::vector<std::string>{"02:00:00:00:00:03"});
  ASSERT_TRUE(f[2].mpi_mac.has_value());
  EXPECT_EQ(FormatMac(*f[2].mpi_mac), "02:00:00:00:00:03");
  EXPECT_FALSE(f[3].mpi_mac.has_value());  // Optional.
  EXPECT_EQ(Texts(f[3].macs), std::vector<std::string>{"02:00:00:00:00:04"});
}

TEST(HostFacts, BadMpiMacIsAnErrorNamingTheKey) {
  const std::string head =
      "hosts:\n"
      "  - name: n0\n"
      "    macs: [\"02:00:00:00:00:01\"]\n"
      "  - name: n1\n"
      "    macs: [\"02:00:00:00:00:02\"]\n";
  struct Case {
    std::string line;
    std::string shown;
  };
  for (const Case& c :
       {Case{"    mpi_mac: eth0\n", "'eth0'"}, Case{"    mpi_mac: \"02:00:00:00:00\"\n", "'02:00:00:00:00'"},
        Case{"    mpi_mac: abcdef\n", "'abcdef'"},  // Six characters are not six raw bytes here.
        Case{"    mpi_mac:\n", "''"}, Case{"    mpi_mac: [\"02:00:00:00:00:02\"]\n", "a list or map"}}) {
    SCOPED_TRACE(c.line);
    StatusOr<std::vector<HostFact>> facts = ParseHostFacts(head + c.line, "hosts.yaml");
    ASSERT_FALSE(facts.ok());
    EXPECT_EQ(facts.status().code(), Status::Code::kInvalidArgument);
    const std::string& message = facts.status().message();
    EXPECT_EQ(message.rfind("hosts.yaml:", 0), 0u) << message;
    EXPECT_NE(message.find("hosts[1].mpi_mac: " + c.shown + " is not a MAC address (use aa:bb:cc:dd:ee:ff"),
              std::string::npos)
        << message;
  }
}

TEST(HostFacts, AgentsFillTheHostsFileByName) {
  std::vector<HostFact> file = {
      {"n0", {M("02:00:00:00:00:01")}, std::nullopt},
      {"n1", {M("02:00:00:00:00:02")}, M("02:00:00:00:00:02")},
      {"n4", {}, std::nullopt},  // A hosts-file entry without MACs stays.
  };
  std::vector<HostFact> agents = {
      {"n0", {M("02:00:00:00:00:01"), M("02:00:00:00:01:01")}, M("02:00:00:00:01:01")},
      {"n1", {M("02:00:00:00:00:02"), M("02:00:00:00:01:02")}, M("02:00:00:00:01:02")},
      {"n2", {M("02:00:00:00:00:03")}, M("02:00:00:00:01:03")},  // mpi_mac missing from macs: added.
      {"n3", {}, std::nullopt},                                  // No MAC: nothing to place it by.
  };
  std::vector<std::string> warnings;
  const std::vector<HostFact> merged = MergeHostFacts(file, agents, &warnings);
  ASSERT_EQ(merged.size(), 4u);

  // The agent's MPI NIC fills the file's entry; no second n0.
  EXPECT_EQ(merged[0].name, "n0");
  EXPECT_EQ(Texts(merged[0].macs), (std::vector<std::string>{"02:00:00:00:00:01", "02:00:00:00:01:01"}));
  ASSERT_TRUE(merged[0].mpi_mac.has_value());
  EXPECT_EQ(FormatMac(*merged[0].mpi_mac), "02:00:00:00:01:01");

  // The file's mpi_mac wins a conflict, with a warning naming both.
  EXPECT_EQ(merged[1].name, "n1");
  EXPECT_EQ(Texts(merged[1].macs), (std::vector<std::string>{"02:00:00:00:00:02", "02:00:00:00:01:02"}));
  ASSERT_TRUE(merged[1].mpi_mac.has_value());
  EXPECT_EQ(FormatMac(*merged[1].mpi_mac), "02:00:00:00:00:02");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("host 'n1'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("02:00:00:00:00:02"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("02:00:00:00:01:02"), std::string::npos) << warnings[0];

  EXPECT_EQ(merged[2].name, "n4");
  EXPECT_TRUE(merged[2].macs.empty());

  // Agents' other hosts follow, in order.
  EXPECT_EQ(merged[3].name, "n2");
  EXPECT_EQ(Texts(merged[3].macs), (std::vector<std::string>{"02:00:00:00:00:03", "02:00:00:00:01:03"}));
  ASSERT_TRUE(merged[3].mpi_mac.has_value());
  EXPECT_EQ(FormatMac(*merged[3].mpi_mac), "02:00:00:00:01:03");

  // No hosts file: the agents' facts as they are.
  EXPECT_EQ(MergeHostFacts({}, agents, nullptr).size(), 3u);
}

}  // namespace
}  // namespace topotune::discovery
