#include "bench_kernels/shim/daemon_link.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "proto/limits.h"
#include "proto/status_names.h"

namespace topotune::shim {

namespace {

void SetDeadline(grpc::ClientContext* context, int timeout_ms) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

bool AnyDotted(const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (n.find('.') != std::string::npos) return true;
  return false;
}

}  // namespace

DaemonLink::DaemonLink(const ShimConfig& config) : config_(config) {}

std::shared_ptr<grpc::Channel> DaemonLink::Channel() {
  std::lock_guard lock(mu_);
  if (channel_) return channel_;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!config_.tls_ca.empty()) {
    std::ifstream in(config_.tls_ca);
    std::ostringstream pem;
    pem << in.rdbuf();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(v1::limits::kMaxPlanResponseBytes);
  channel_ = grpc::CreateCustomChannel(config_.server, credentials, args);
  return channel_;
}

LinkError DaemonLink::Describe(const char* method, const grpc::Status& status) const {
  LinkError e;
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      e.timed_out = true;
      e.message = fmt::format("the daemon at {} did not answer {} within {} ms (TOPOTUNE_TIMEOUT_MS)", config_.server,
                              method, config_.timeout_ms);
      break;
    case grpc::StatusCode::UNAVAILABLE:
      e.message =
          fmt::format("the daemon at {} is unavailable ({}): {}", config_.server, method, status.error_message());
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      e.message = fmt::format("the daemon at {} refused the placement ({}): {}", config_.server, method,
                              status.error_message());
      break;
    default:
      e.message = fmt::format("the daemon at {} failed {} ({}): {}", config_.server, method,
                              v1::StatusCodeName(status.error_code()), status.error_message());
  }
  return e;
}

bool DaemonLink::GetPlan(const std::string& job_id, const std::vector<std::string>& rank_hosts,
                         const std::array<std::string, 3>& force, v1::GetPlanResponse* out, LinkError* error) {
  v1::GetPlanRequest request;
  request.set_job_id(job_id.substr(0, v1::limits::kMaxIdBytes));
  for (const std::string& h : rank_hosts) request.add_rank_hosts(h);
  for (size_t i = 0; i < kPlanCollectives.size(); ++i) {
    request.add_collectives(kPlanCollectives[i]);
    if (!force[i].empty()) {
      v1::ForcedAlgorithm* f = request.add_force();
      f->set_collective(kPlanCollectives[i]);
      f->set_algorithm(force[i]);
    }
  }
  auto stub = v1::Plans::NewStub(Channel());
  const auto start = std::chrono::steady_clock::now();
  grpc::ClientContext context;
  SetDeadline(&context, config_.timeout_ms);
  grpc::Status status = stub->GetPlan(&context, request, out);
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT && AnyDotted(rank_hosts)) {
    // The topology may name hosts by their short names.
    for (std::string& h : *request.mutable_rank_hosts()) h = h.substr(0, h.find('.'));
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    grpc::ClientContext again;
    SetDeadline(&again, std::max<int>(1, config_.timeout_ms - static_cast<int>(spent.count())));
    grpc::Status retry = stub->GetPlan(&again, request, out);
    if (retry.ok() || retry.error_code() != grpc::StatusCode::INVALID_ARGUMENT) status = retry;
  }
  if (status.ok()) return true;
  *error = Describe("GetPlan", status);
  return false;
}

bool DaemonLink::ReportJob(const v1::ReportJobRequest& request, LinkError* error) {
  auto stub = v1::Admin::NewStub(Channel());
  grpc::ClientContext context;
  SetDeadline(&context, config_.timeout_ms);
  v1::ReportJobResponse response;
  grpc::Status status = stub->ReportJob(&context, request, &response);
  if (status.ok()) return true;
  *error = Describe("ReportJob", status);
  return false;
}

}  // namespace topotune::shim
