// The command line: flags parsed in process, and the real topotune-agent
// binary run as a child (help on every subcommand, exit statuses, a
// --once failure that names the server within seconds).
#include "agent/cli.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <sstream>

#include "agent/process.h"

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;

int Parse(std::vector<const char*> args, CommandLine* cl, std::string* out_text = nullptr,
          std::string* err_text = nullptr) {
  args.insert(args.begin(), "topotune-agent");
  std::ostringstream out, err;
  const int rc = ParseCommandLine(static_cast<int>(args.size()), args.data(), cl, out, err);
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return rc;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CliTest, ServeFlagsAndDefaults) {
  ScopedEnv server("TOPOTUNE_SERVER", nullptr);
  ScopedEnv token("TOPOTUNE_TOKEN_FILE", nullptr);
  CommandLine cl;
  ASSERT_EQ(Parse({"serve"}, &cl), -1);
  EXPECT_EQ(cl.command, CommandLine::Command::kServe);
  EXPECT_EQ(cl.server, "127.0.0.1:50051");
  EXPECT_EQ(cl.token_file, "");
  EXPECT_FALSE(cl.once);
  EXPECT_TRUE(cl.facts.lldp);

  CommandLine full;
  ASSERT_EQ(Parse({"serve", "--server", "head:7000", "--token-file", "/t", "--tls-ca", "/ca.pem", "--hostname", "n1",
                   "--interface", "ens1", "--once", "--no-lldp", "--lldpd-socket", "/s", "--rpc-timeout", "2.5"},
                  &full),
            -1);
  EXPECT_EQ(full.server, "head:7000");
  EXPECT_EQ(full.token_file, "/t");
  EXPECT_EQ(full.tls_ca, "/ca.pem");
  EXPECT_EQ(full.facts.hostname, "n1");
  EXPECT_EQ(full.facts.interface, "ens1");
  EXPECT_EQ(full.facts.lldpd_socket, "/s");
  EXPECT_FALSE(full.facts.lldp);
  EXPECT_TRUE(full.once);
  EXPECT_DOUBLE_EQ(full.rpc_timeout_s, 2.5);
}

TEST(CliTest, EnvironmentDefaults) {
  ScopedEnv server("TOPOTUNE_SERVER", "envhost:1234");
  ScopedEnv token("TOPOTUNE_TOKEN_FILE", "/etc/topotune/token");
  CommandLine cl;
  ASSERT_EQ(Parse({"bench", "--task", "t-7"}, &cl), -1);
  EXPECT_EQ(cl.command, CommandLine::Command::kBench);
  EXPECT_EQ(cl.server, "envhost:1234");
  EXPECT_EQ(cl.token_file, "/etc/topotune/token");
  EXPECT_EQ(cl.task_id, "t-7");
  CommandLine flag;
  ASSERT_EQ(Parse({"bench", "--task", "t-7", "--server", "flaghost:1"}, &flag), -1);
  EXPECT_EQ(flag.server, "flaghost:1");
}

TEST(CliTest, UsageErrors) {
  CommandLine cl;
  std::string err;
  EXPECT_EQ(Parse({}, &cl, nullptr, &err), kExitUsage);
  EXPECT_EQ(Parse({"bench"}, &cl, nullptr, &err), kExitUsage);
  EXPECT_NE(err.find("--task"), std::string::npos) << err;
  EXPECT_EQ(Parse({"serve", "--bogus"}, &cl, nullptr, &err), kExitUsage);
  EXPECT_EQ(Parse({"frobnicate"}, &cl, nullptr, &err), kExitUsage);
  EXPECT_EQ(Parse({"serve", "--rpc-timeout", "0"}, &cl, nullptr, &err), kExitUsage);
  EXPECT_NE(err.find("topotune-agent --help"), std::string::npos) << err;
}

// --- The real binary ------------------------------------------------------

ProcessResult RunAgent(std::vector<std::string> args, milliseconds timeout = milliseconds(20000)) {
  args.insert(args.begin(), TOPOTUNE_AGENT_BINARY);
  StatusOr<ProcessResult> r = RunProcess(args, timeout);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ProcessResult{};
}

TEST(CliBinaryTest, HelpEverywhere) {
  const ProcessResult top = RunAgent({"--help"});
  EXPECT_EQ(top.exit_status, 0) << top.err;
  for (const char* word : {"serve", "bench", "facts", "EXIT STATUS", "TOPOTUNE_SERVER"})
    EXPECT_NE(top.out.find(word), std::string::npos) << word;

  const ProcessResult serve = RunAgent({"serve", "--help"});
  EXPECT_EQ(serve.exit_status, 0) << serve.err;
  for (const char* word : {"--server", "--token-file", "--tls-ca", "--hostname", "--interface", "--once"})
    EXPECT_NE(serve.out.find(word), std::string::npos) << word;

  const ProcessResult bench = RunAgent({"bench", "--help"});
  EXPECT_EQ(bench.exit_status, 0) << bench.err;
  for (const char* word : {"--server", "--task", "--token-file", "--tls-ca"})
    EXPECT_NE(bench.out.find(word), std::string::npos) << word;

  const ProcessResult facts = RunAgent({"facts", "--help"});
  EXPECT_EQ(facts.exit_status, 0) << facts.err;

  const ProcessResult version = RunAgent({"--version"});
  EXPECT_EQ(version.exit_status, 0);
  EXPECT_NE(version.out.find("topotune-agent"), std::string::npos);
}

TEST(CliBinaryTest, UsageErrorsExit2) {
  EXPECT_EQ(RunAgent({}).exit_status, 2);
  EXPECT_EQ(RunAgent({"serve", "--no-such-flag"}).exit_status, 2);
  const ProcessResult bench = RunAgent({"bench"});
  EXPECT_EQ(bench.exit_status, 2);
  EXPECT_NE(bench.err.find("--task"), std::string::npos) << bench.err;
}

TEST(CliBinaryTest, OnceWithoutServerFailsNamingIt) {
  const ProcessResult r =
      RunAgent({"serve", "--once", "--server", "127.0.0.1:1", "--no-lldp", "--rpc-timeout", "3"}, milliseconds(15000));
  EXPECT_EQ(r.exit_status, 1) << r.err;  // It exits by itself (RunAgent kills it otherwise): no retries.
  EXPECT_NE(r.err.find("127.0.0.1:1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot register"), std::string::npos) << r.err;
  // At the refused connection, not after the call's 3 s deadline.
  EXPECT_NE(r.err.find("UNAVAILABLE"), std::string::npos) << r.err;
}

TEST(CliBinaryTest, UnreadableTokenFileExits1) {
  const ProcessResult r = RunAgent(
      {"serve", "--once", "--server", "127.0.0.1:1", "--no-lldp", "--token-file", "/nonexistent/topotune/token"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("/nonexistent/topotune/token"), std::string::npos) << r.err;
}

TEST(CliBinaryTest, FactsPrintsJson) {
  const ProcessResult r = RunAgent({"facts", "--no-lldp", "--hostname", "cli-test-host"});
  if (r.exit_status != 0) GTEST_SKIP() << "no usable network interface here: " << r.err;
  EXPECT_NE(r.out.find("\"hostname\": \"cli-test-host\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"macs\""), std::string::npos) << r.out;
}

}  // namespace
}  // namespace topotune::agent
