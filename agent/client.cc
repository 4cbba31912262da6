#include "agent/client.h"

#include <fmt/format.h>

#include <cctype>

#include "proto/status_names.h"
#include "tuner/read_file.h"

namespace topotune::agent {

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path, "the token file");
  if (!text.ok()) return text.status();
  std::string token = *text;
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!token.empty() && space(token.back())) token.pop_back();
  size_t start = 0;
  while (start < token.size() && space(token[start])) ++start;
  token.erase(0, start);
  if (token.empty()) return Status::InvalidArgument(fmt::format("token file '{}' is empty", path));
  for (char c : token) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e) {
      return Status::InvalidArgument(
          fmt::format("token file '{}': the token holds a byte 0x{:02x}; a token is printable ASCII without spaces",
                      path, static_cast<unsigned>(u)));
    }
  }
  return token;
}

std::shared_ptr<grpc::Channel> MakeChannel(const Connection& connection) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!connection.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = connection.tls_ca_pem;
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  // Reconnection after a dropped connection is the agent's own backoff
  // (backoff.h); keep gRPC's from stretching beyond it.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 30000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
  // A BenchTask may exceed gRPC's default 4 MiB: a 1 MiB topology plus up to
  // kMaxRanks host names of up to 253 bytes.
  args.SetMaxReceiveMessageSize(kMaxResponseBytes);
  return grpc::CreateCustomChannel(connection.server, credentials, args);
}

void PrepareContext(const Connection& connection, std::chrono::milliseconds timeout, grpc::ClientContext* context) {
  if (!connection.token.empty()) context->AddMetadata("authorization", "Bearer " + connection.token);
  if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
}

std::string DescribeStatus(const grpc::Status& status) {
  std::string out = v1::StatusCodeName(status.error_code());
  if (!status.error_message().empty()) out += ": " + status.error_message();
  return out;
}

bool IsTransient(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace topotune::agent
