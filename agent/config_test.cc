// The agent's configuration file: the shipped example, every key, strict
// errors, and how the command line and the environment override it.
#include "agent/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "agent/cli.h"

namespace topotune::agent {
namespace {

TEST(AgentConfigTest, TheShippedExampleIsValidAndHoldsTheDefaults) {
  StatusOr<AgentConfig> c = LoadAgentConfig(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/agent.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  // Every key but the active ones is commented out, so the defaults hold.
  EXPECT_FALSE(c->server.has_value());
  EXPECT_FALSE(c->token_file.has_value());
  EXPECT_FALSE(c->tls_ca.has_value());
  EXPECT_FALSE(c->hostname.has_value());
  const CommandLine defaults;
  EXPECT_EQ(c->lldp, defaults.facts.lldp);
  EXPECT_EQ(c->rpc_timeout_s, defaults.rpc_timeout_s);
  EXPECT_EQ(c->log_level, defaults.log_level);
}

TEST(AgentConfigTest, TheShippedExampleDocumentsEveryKey) {
  std::ifstream in(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/agent.yaml");
  std::stringstream text;
  text << in.rdbuf();
  // Uncommenting every "# key: value" line gives a file that sets every key.
  const std::regex commented_key("^# ([a-z_]+: .*)$");
  std::string all, line;
  std::smatch m;
  while (std::getline(text, line)) all += (std::regex_match(line, m, commented_key) ? m[1].str() : line) + "\n";
  StatusOr<AgentConfig> c = ParseAgentConfig(all, "agent.yaml (uncommented)");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server, "head:50051");
  EXPECT_EQ(c->token_file, "/etc/topotune/token");
  EXPECT_EQ(c->tls_ca, "/etc/topotune/ca.crt");
  EXPECT_EQ(c->hostname, "node01");
  EXPECT_EQ(c->interface, "ens1f0");
  EXPECT_EQ(c->lldpd_socket, "/run/lldpd.socket");
}

TEST(AgentConfigTest, ReadsEveryKey) {
  StatusOr<AgentConfig> c = ParseAgentConfig(
      "server: head:7000\ntoken_file: /t\ntls_ca: /ca.pem\nhostname: n1\ninterface: ens1\n"
      "lldpd_socket: /s\nlldp: false\nrpc_timeout: 250ms\nlog_level: debug\n",
      "a.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->source, "a.yaml");
  EXPECT_EQ(c->server, "head:7000");
  EXPECT_EQ(c->token_file, "/t");
  EXPECT_EQ(c->tls_ca, "/ca.pem");
  EXPECT_EQ(c->hostname, "n1");
  EXPECT_EQ(c->interface, "ens1");
  EXPECT_EQ(c->lldpd_socket, "/s");
  EXPECT_EQ(c->lldp, false);
  EXPECT_DOUBLE_EQ(*c->rpc_timeout_s, 0.25);
  EXPECT_EQ(c->log_level, "debug");
  StatusOr<AgentConfig> bare = ParseAgentConfig("rpc_timeout: 2\n", "b.yaml");
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_DOUBLE_EQ(*bare->rpc_timeout_s, 2);
  StatusOr<AgentConfig> empty = ParseAgentConfig("# nothing\n", "c.yaml");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_FALSE(empty->server.has_value());
}

TEST(AgentConfigTest, ErrorsNameTheFileLineAndKey) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& k : {
           Case{"server: h:1\nsevrer: h:2\n", "a.yaml:2: sevrer: unknown key; known keys: server, token_file"},
           Case{"lldp: maybe\n", "a.yaml:1: lldp: expected true or false"},
           Case{"rpc_timeout: 0\n", "a.yaml:1: rpc_timeout: 0 s is out of range [0.05, 3600] s"},
           Case{"rpc_timeout: soon\n", "a.yaml:1: rpc_timeout: 'soon' is not a duration"},
           Case{"log_level: loud\n", "a.yaml:1: log_level: expected one of trace, debug, info, warn, error"},
           Case{"server: [a, b]\n", "a.yaml:1: server: expected a string"},
           Case{"- server\n", "a.yaml:1: expected a mapping"},
           Case{"lldp: true\nserver: [h:1\n", "a.yaml:"},
       }) {
    StatusOr<AgentConfig> c = ParseAgentConfig(k.text, "a.yaml");
    ASSERT_FALSE(c.ok()) << k.text;
    EXPECT_NE(c.status().message().find(k.expected), std::string::npos) << c.status().message();
  }
  StatusOr<AgentConfig> missing = LoadAgentConfig("/nonexistent/topotune/agent.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/topotune/agent.yaml"), std::string::npos);
}

// --- The file under the command line ---------------------------------------

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("topotune-agent-config-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "agent.yaml").string();
    std::ofstream(path_) << "server: filehost:7000\ntoken_file: /file/token\nhostname: filenode\nlldp: false\n"
                            "rpc_timeout: 7s\nlog_level: warn\ninterface: ens9\n";
    unsetenv("TOPOTUNE_SERVER");
    unsetenv("TOPOTUNE_TOKEN_FILE");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int Parse(std::vector<const char*> args, CommandLine* cl, std::string* err_text = nullptr) {
    args.insert(args.begin(), "topotune-agent");
    std::ostringstream out, err;
    const int rc = ParseCommandLine(static_cast<int>(args.size()), args.data(), cl, out, err);
    if (err_text) *err_text = err.str();
    return rc;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(ConfigFileTest, TheFileFillsWhatTheFlagsLeaveUnset) {
  CommandLine cl;
  ASSERT_EQ(Parse({"serve", "--config", path_.c_str()}, &cl), -1);
  EXPECT_EQ(cl.config_path, path_);
  EXPECT_EQ(cl.server, "filehost:7000");
  EXPECT_EQ(cl.token_file, "/file/token");
  EXPECT_EQ(cl.facts.hostname, "filenode");
  EXPECT_EQ(cl.facts.interface, "ens9");
  EXPECT_FALSE(cl.facts.lldp);
  EXPECT_DOUBLE_EQ(cl.rpc_timeout_s, 7);
  EXPECT_EQ(cl.log_level, "warn");

  CommandLine flags;
  ASSERT_EQ(Parse({"serve", "--config", path_.c_str(), "--server", "flaghost:1", "--hostname", "flagnode",
                   "--rpc-timeout", "1.5", "--log-level", "debug"},
                  &flags),
            -1);
  EXPECT_EQ(flags.server, "flaghost:1");
  EXPECT_EQ(flags.facts.hostname, "flagnode");
  EXPECT_DOUBLE_EQ(flags.rpc_timeout_s, 1.5);
  EXPECT_EQ(flags.log_level, "debug");
  EXPECT_EQ(flags.token_file, "/file/token");  // Not given: from the file.

  CommandLine facts;
  ASSERT_EQ(Parse({"facts", "--config", path_.c_str()}, &facts), -1);
  EXPECT_EQ(facts.facts.hostname, "filenode");
  EXPECT_FALSE(facts.facts.lldp);
}

TEST_F(ConfigFileTest, TheEnvironmentBeatsTheFile) {
  setenv("TOPOTUNE_SERVER", "envhost:1", 1);
  setenv("TOPOTUNE_TOKEN_FILE", "/env/token", 1);
  CommandLine cl;
  ASSERT_EQ(Parse({"serve", "--config", path_.c_str()}, &cl), -1);
  unsetenv("TOPOTUNE_SERVER");
  unsetenv("TOPOTUNE_TOKEN_FILE");
  EXPECT_EQ(cl.server, "envhost:1");
  EXPECT_EQ(cl.token_file, "/env/token");
}

TEST_F(ConfigFileTest, ABadFileFailsNamingItAndTheKey) {
  std::ofstream(path_) << "server: h:1\ntoken: secret\n";
  CommandLine cl;
  std::string err;
  EXPECT_EQ(Parse({"serve", "--config", path_.c_str()}, &cl, &err), kExitFailure);
  EXPECT_NE(err.find(path_ + ":2: token: unknown key"), std::string::npos) << err;

  const std::string missing = (dir_ / "missing.yaml").string();
  EXPECT_EQ(Parse({"serve", "--config", missing.c_str()}, &cl, &err), kExitFailure);
  EXPECT_NE(err.find(missing), std::string::npos) << err;
}

}  // namespace
}  // namespace topotune::agent
