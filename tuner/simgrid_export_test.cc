#include "tuner/simgrid_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tuner/rank_tree.h"
#include "tuner/test_trees.h"
#include "tuner/topology_io.h"

namespace topotune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The attributes of every element `tag` (self-closing or not) of `xml`, in order.
std::vector<std::map<std::string, std::string>> Elements(const std::string& xml, const std::string& tag) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex element("<" + tag + "((?:\\s+[a-z_]+=\"[^\"]*\")*)\\s*/?>");
  const std::regex attribute("([a-z_]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), element); it != std::sregex_iterator(); ++it) {
    std::map<std::string, std::string> attrs;
    const std::string body = (*it)[1];
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attribute); a != std::sregex_iterator(); ++a)
      attrs[(*a)[1]] = (*a)[2];
    out.push_back(std::move(attrs));
  }
  return out;
}

// Every route: (src, dst) -> the link_ctn elements inside it.
std::map<std::pair<std::string, std::string>, std::vector<std::map<std::string, std::string>>> Routes(
    const std::string& xml) {
  std::map<std::pair<std::string, std::string>, std::vector<std::map<std::string, std::string>>> out;
  const std::regex route("<route src=\"([^\"]*)\" dst=\"([^\"]*)\" symmetrical=\"NO\">(.*?)</route>");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), route); it != std::sregex_iterator(); ++it) {
    auto key = std::make_pair((*it)[1].str(), (*it)[2].str());
    EXPECT_EQ(out.count(key), 0u) << "two routes " << key.first << " -> " << key.second;
    out[key] = Elements((*it)[3].str(), "link_ctn");
  }
  return out;
}

Topology Fig1() {
  StatusOr<Topology> t = LoadTopologyFile(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/faraj-yuan-fig1.yaml");
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) std::abort();
  return std::move(t).value();
}

TEST(SimgridExportTest, FarajYuanFigure1Structure) {
  const std::string xml = SimgridPlatformXml(Fig1(), {});

  EXPECT_THAT(xml,
              StartsWith("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"));
  EXPECT_THAT(xml, HasSubstr("<platform version=\"4.1\">\n  <zone id=\"topotune\" routing=\"Floyd\">\n"));
  EXPECT_THAT(xml, HasSubstr("  </zone>\n</platform>\n"));

  // One router per switch, one host per host (slots as cores), in file order.
  std::vector<std::string> routers;
  for (const auto& r : Elements(xml, "router")) routers.push_back(r.at("id"));
  EXPECT_EQ(routers, (std::vector<std::string>{"s0", "s1", "s2", "s3"}));
  const auto hosts = Elements(xml, "host");
  ASSERT_EQ(hosts.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(hosts[i].at("id"), "n" + std::to_string(i));
    EXPECT_EQ(hosts[i].at("speed"), "1Gf");
    EXPECT_EQ(hosts[i].at("core"), "1");
  }

  // One full-duplex link per topology link, 100 Mbit/s, default latency.
  const std::vector<std::pair<std::string, std::string>> kLinks = {{"n0", "s0"}, {"n1", "s0"}, {"n2", "s0"},
                                                                   {"s0", "s1"}, {"s1", "s2"}, {"s1", "s3"},
                                                                   {"n3", "s3"}, {"n4", "s3"}, {"n5", "s1"}};
  const auto links = Elements(xml, "link");
  ASSERT_EQ(links.size(), kLinks.size());
  for (size_t i = 0; i < kLinks.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(links[i].at("id"), kLinks[i].first + "-" + kLinks[i].second);
    EXPECT_EQ(links[i].at("bandwidth"), "100Mbps");
    EXPECT_EQ(links[i].at("latency"), "10us");
    EXPECT_EQ(links[i].at("sharing_policy"), "SPLITDUPLEX");
  }

  // Exactly two one-hop routes per link, one per direction: the first
  // endpoint to the second uses the UP half, the way back the DOWN half.
  const auto routes = Routes(xml);
  EXPECT_EQ(routes.size(), 2 * kLinks.size());
  EXPECT_EQ(Elements(xml, "route").size(), 2 * kLinks.size());
  for (const auto& [a, b] : kLinks) {
    SCOPED_TRACE(a + "-" + b);
    ASSERT_EQ(routes.count({a, b}), 1u);
    ASSERT_EQ(routes.count({b, a}), 1u);
    const auto& up = routes.at({a, b});
    const auto& down = routes.at({b, a});
    ASSERT_EQ(up.size(), 1u);
    ASSERT_EQ(down.size(), 1u);
    EXPECT_EQ(up[0].at("id"), a + "-" + b);
    EXPECT_EQ(up[0].at("direction"), "UP");
    EXPECT_EQ(down[0].at("id"), a + "-" + b);
    EXPECT_EQ(down[0].at("direction"), "DOWN");
  }
}

TEST(SimgridExportTest, OptionsLatenciesAndSlots) {
  StatusOr<Topology> t = ParseTopology(R"(switches: [{name: sw}]
hosts:
  - {name: a, slots: 4}
  - {name: b}
links:
  - [a, sw, 10Gbps, 1.5ms]
  - [sw, b, 2.5Gbps]
)",
                                       "t.yaml");
  ASSERT_TRUE(t.ok()) << t.status().message();
  SimgridExportOptions options;
  options.zone_id = "cluster";
  options.host_speed_flops = 500e6;
  options.default_latency_s = 0;
  ASSERT_TRUE(ValidateSimgridExportOptions(options).ok());
  const std::string xml = SimgridPlatformXml(*t, options);
  EXPECT_THAT(xml, HasSubstr("<zone id=\"cluster\" routing=\"Floyd\">"));
  EXPECT_THAT(xml, HasSubstr("<host id=\"a\" speed=\"500Mf\" core=\"4\"/>"));
  EXPECT_THAT(xml, HasSubstr("<host id=\"b\" speed=\"500Mf\" core=\"1\"/>"));
  // A latency from the file wins; the default applies to links without one.
  EXPECT_THAT(xml,
              HasSubstr("<link id=\"a-sw\" bandwidth=\"10Gbps\" latency=\"1.5ms\" sharing_policy=\"SPLITDUPLEX\"/>"));
  EXPECT_THAT(xml,
              HasSubstr("<link id=\"sw-b\" bandwidth=\"2.5Gbps\" latency=\"0s\" sharing_policy=\"SPLITDUPLEX\"/>"));
  // Directions follow the file's endpoint order, whichever end is the switch.
  EXPECT_THAT(xml,
              HasSubstr("<route src=\"sw\" dst=\"b\" symmetrical=\"NO\"><link_ctn id=\"sw-b\" direction=\"UP\"/>"));
  EXPECT_THAT(xml,
              HasSubstr("<route src=\"b\" dst=\"sw\" symmetrical=\"NO\"><link_ctn id=\"sw-b\" direction=\"DOWN\"/>"));
  EXPECT_THAT(xml, HasSubstr("Exported by topotune from t.yaml: 1 switches (routers), 2 hosts, 2 links."));
}

TEST(SimgridExportTest, Ns3FormHasOneSymmetricalRoutePerLink) {
  SimgridExportOptions options;
  options.ns3 = true;
  const std::string xml = SimgridPlatformXml(Fig1(), options);
  const std::string fluid = SimgridPlatformXml(Fig1(), {});
  // The same routers and hosts as the fluid form.
  EXPECT_EQ(Elements(xml, "router"), Elements(fluid, "router"));
  EXPECT_EQ(Elements(xml, "host"), Elements(fluid, "host"));
  // Links without a sharing policy (ns-3 ignores it) ...
  const auto links = Elements(xml, "link");
  const auto fluid_links = Elements(fluid, "link");
  ASSERT_EQ(links.size(), fluid_links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    SCOPED_TRACE(i);
    auto expected = fluid_links[i];
    expected.erase("sharing_policy");
    EXPECT_EQ(links[i], expected);
  }
  // ... and one symmetrical (default) route per link, from its first
  // endpoint to its second, without a direction: SimGrid's ns-3 binding
  // makes one point-to-point link per route it is told about.
  EXPECT_THAT(xml, Not(HasSubstr("symmetrical=")));
  EXPECT_THAT(xml, Not(HasSubstr("direction=")));
  const std::regex route("<route src=\"([^\"]*)\" dst=\"([^\"]*)\"><link_ctn id=\"([^\"]*)\"/></route>");
  std::vector<std::string> routed;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), route); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[3].str(), (*it)[1].str() + "-" + (*it)[2].str());
    routed.push_back((*it)[3].str());
  }
  std::vector<std::string> ids;
  for (const auto& l : links) ids.push_back(l.at("id"));
  EXPECT_EQ(routed, ids);
  EXPECT_EQ(Elements(xml, "route").size(), links.size());
  EXPECT_THAT(xml, HasSubstr("ns-3 point-to-point links"));
}

TEST(SimgridExportTest, NamesAreEscapedAndLinkIdsUnique) {
  // "x-y" + "z" and "x" + "y-z" both join to "x-y-z".
  Topology t = testing::BuildTopology({"y-z", "x-y", "s&<\"'>"}, {{"x"}, {"z"}},
                                      {{"x", "y-z"}, {"x-y", "z"}, {"y-z", "s&<\"'>"}, {"x-y", "s&<\"'>"}});
  const std::string xml = SimgridPlatformXml(t, {});
  EXPECT_THAT(xml, HasSubstr("<router id=\"s&amp;&lt;&quot;&apos;&gt;\"/>"));
  std::set<std::string> ids;
  for (const auto& l : Elements(xml, "link")) ids.insert(l.at("id"));
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_TRUE(ids.count("x-y-z"));
  EXPECT_TRUE(ids.count("x-y-z#1"));
}

TEST(SimgridExportTest, CommentNeverContainsDoubleDash) {
  // The source name goes into the header comment, where "--" is not allowed.
  StatusOr<Topology> t =
      ParseTopology("switches: [{name: s}]\nhosts: [{name: h}]\nlinks: [[h, s, 1Gbps]]\n", "/tmp/a--b---c-");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::string xml = SimgridPlatformXml(*t, {});
  const size_t open = xml.find("<!--");
  const size_t close = xml.find("-->", open);
  ASSERT_NE(close, std::string::npos);
  const std::string comment = xml.substr(open + 4, close - open - 4);
  EXPECT_EQ(comment.find("--"), std::string::npos) << comment;
  EXPECT_THAT(comment, HasSubstr("/tmp/a- -b- - -c- :"));
}

TEST(SimgridExportTest, ValueStrings) {
  EXPECT_EQ(SimgridBandwidth(1e9), "1Gbps");
  EXPECT_EQ(SimgridBandwidth(100e6), "100Mbps");
  EXPECT_EQ(SimgridBandwidth(2.5e9), "2.5Gbps");
  EXPECT_EQ(SimgridBandwidth(10e9), "10Gbps");
  EXPECT_EQ(SimgridBandwidth(1500), "1.5kbps");
  EXPECT_EQ(SimgridBandwidth(999), "999bps");
  EXPECT_EQ(SimgridBandwidth(123456789.123), "123456.789123kbps");  // Mbps would round it.
  EXPECT_EQ(SimgridLatency(10e-6), "10us");
  EXPECT_EQ(SimgridLatency(1.5e-3), "1.5ms");
  EXPECT_EQ(SimgridLatency(2), "2s");
  EXPECT_EQ(SimgridLatency(100e-9), "100ns");
  EXPECT_EQ(SimgridLatency(0), "0s");
  EXPECT_EQ(SimgridSpeed(1e9), "1Gf");
  EXPECT_EQ(SimgridSpeed(500e6), "500Mf");
  EXPECT_EQ(SimgridSpeed(1), "1f");
}

TEST(SimgridExportTest, ParseSpeed) {
  EXPECT_EQ(ParseSimgridSpeed("1Gf"), 1e9);
  EXPECT_EQ(ParseSimgridSpeed("500Mf"), 500e6);
  EXPECT_EQ(ParseSimgridSpeed("2.5e9f"), 2.5e9);
  EXPECT_EQ(ParseSimgridSpeed("100flops"), 100.0);
  EXPECT_EQ(ParseSimgridSpeed("3kf"), 3000.0);
  for (const char* bad : {"", "1G", "1gf", "Gf", "0f", "-1Gf", "1 Gf", "inff", "1Gbps"})
    EXPECT_EQ(ParseSimgridSpeed(bad), std::nullopt) << bad;
}

TEST(SimgridExportTest, ValidateOptions) {
  SimgridExportOptions o;
  EXPECT_TRUE(ValidateSimgridExportOptions(o).ok());
  o.zone_id = "";
  EXPECT_THAT(ValidateSimgridExportOptions(o).message(), HasSubstr("zone id"));
  o = {};
  o.host_speed_flops = 0;
  EXPECT_THAT(ValidateSimgridExportOptions(o).message(), HasSubstr("host speed"));
  o = {};
  o.default_latency_s = -1e-6;
  EXPECT_THAT(ValidateSimgridExportOptions(o).message(), HasSubstr("default latency"));
}

TEST(SimgridExportTest, HostfileFollowsPlacement) {
  Topology t = testing::BuildTopology({"s"}, {{"a", 2}, {"b", 1}}, {{"a", "s"}, {"b", "s"}});
  StatusOr<std::string> all = SimgridHostfile(t, DefaultPlacement(t));
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(*all, "a\na\nb\n");
  StatusOr<Placement> some = PlacementFromHostList(t, {"b", "a:1"});
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*SimgridHostfile(t, *some), "b\na\n");

  Topology bad = testing::BuildTopology({"s"}, {{"node 1"}}, {{"node 1", "s"}});
  StatusOr<std::string> rejected = SimgridHostfile(bad, DefaultPlacement(bad));
  ASSERT_FALSE(rejected.ok());
  EXPECT_THAT(rejected.status().message(), HasSubstr("host 'node 1' cannot be written to an smpirun hostfile"));
}

}  // namespace
}  // namespace topotune
