// Token files, status descriptions and which failures are worth a retry.
#include "agent/client.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/reporter.h"

namespace topotune::agent {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ClientTest, TokenFiles) {
  const std::string plain = WriteTemp("agent-token-plain", "s3cret\n");
  StatusOr<std::string> token = ReadTokenFile(plain);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "s3cret");

  const std::string padded = WriteTemp("agent-token-padded", "  \tabc.DEF-123_~+/=\r\n\n");
  token = ReadTokenFile(padded);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, "abc.DEF-123_~+/=");

  const std::string empty = WriteTemp("agent-token-empty", " \n");
  token = ReadTokenFile(empty);
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("is empty"), std::string::npos);
  EXPECT_NE(token.status().message().find(empty), std::string::npos);

  const std::string spaced = WriteTemp("agent-token-spaced", "two words\n");
  token = ReadTokenFile(spaced);
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("0x20"), std::string::npos) << token.status().message();

  token = ReadTokenFile("/nonexistent/agent/token");
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("/nonexistent/agent/token"), std::string::npos);
  for (const std::string& p : {plain, padded, empty, spaced}) std::filesystem::remove(p);
}

TEST(ClientTest, DescribeAndClassify) {
  EXPECT_EQ(DescribeStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")), "UNAVAILABLE: down");
  EXPECT_EQ(DescribeStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "")), "NOT_FOUND");
  EXPECT_EQ(DescribeStatus(grpc::Status::OK), "OK");
  EXPECT_TRUE(IsTransient(grpc::StatusCode::UNAVAILABLE));
  EXPECT_TRUE(IsTransient(grpc::StatusCode::DEADLINE_EXCEEDED));
  EXPECT_FALSE(IsTransient(grpc::StatusCode::UNAUTHENTICATED));
  EXPECT_FALSE(IsTransient(grpc::StatusCode::NOT_FOUND));
  // Sample streams: the server's refusals are final, the rest is retried.
  EXPECT_TRUE(IsPermanentStreamError(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_TRUE(IsPermanentStreamError(grpc::StatusCode::UNAUTHENTICATED));
  EXPECT_TRUE(IsPermanentStreamError(grpc::StatusCode::FAILED_PRECONDITION));
  EXPECT_FALSE(IsPermanentStreamError(grpc::StatusCode::UNAVAILABLE));
  EXPECT_FALSE(IsPermanentStreamError(grpc::StatusCode::INTERNAL));
}

TEST(ClientTest, ContextCarriesTokenAndDeadline) {
  Connection c;
  c.server = "127.0.0.1:1";
  grpc::ClientContext none;
  PrepareContext(c, std::chrono::milliseconds(0), &none);
  EXPECT_EQ(none.deadline(), std::chrono::system_clock::time_point::max());
  c.token = "t";
  grpc::ClientContext with;
  const auto before = std::chrono::system_clock::now();
  PrepareContext(c, std::chrono::milliseconds(5000), &with);
  EXPECT_GE(with.deadline(), before + std::chrono::milliseconds(4900));
  EXPECT_LE(with.deadline(), std::chrono::system_clock::now() + std::chrono::milliseconds(5100));
}

}  // namespace
}  // namespace topotune::agent
