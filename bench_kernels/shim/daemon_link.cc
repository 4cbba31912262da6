#include "bench_kernels/shim/daemon_link.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <grpcpp/support/status_code_enum.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "proto/limits.h"
#include "proto/status_names.h"

namespace topotune::shim {

namespace {

bool AnyDotted(const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (n.find('.') != std::string::npos) return true;
  return false;
}

// The client module next to this library (the build tree, or the install
// prefix's lib/); dlopen's own search when this library's path is unknown.
std::string ModulePath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ModulePath), &info) != 0 && info.dli_fname != nullptr) {
    std::string self = info.dli_fname;
    if (auto slash = self.rfind('/'); slash != std::string::npos) return self.substr(0, slash + 1) + kClientModuleName;
  }
  return kClientModuleName;
}

}  // namespace

DaemonLink::DaemonLink(const ShimConfig& config) : config_(config) {}

// The module stays loaded: gRPC's threads may outlive the channel.
DaemonLink::~DaemonLink() = default;

RawChannel* DaemonLink::Channel(std::string* why) {
  std::lock_guard lock(mu_);
  if (channel_ || !channel_error_.empty()) {
    *why = channel_error_;
    return channel_.get();
  }
  const std::string path = ModulePath();
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto open = module ? reinterpret_cast<OpenChannelFn>(dlsym(module, kOpenChannelSymbol)) : nullptr;
  if (open == nullptr) {
    const char* error = dlerror();
    channel_error_ = fmt::format("cannot load the gRPC client module {}: {}", path, error ? error : "unknown error");
    *why = channel_error_;
    return nullptr;
  }
  std::string pem;
  if (!config_.tls_ca.empty()) {
    std::ifstream in(config_.tls_ca);
    std::ostringstream text;
    text << in.rdbuf();
    pem = text.str();
    if (!in || pem.empty()) {
      channel_error_ = fmt::format("cannot read TOPOTUNE_TLS_CA '{}'", config_.tls_ca);
      *why = channel_error_;
      return nullptr;
    }
  }
  channel_.reset(open(config_.server.c_str(), pem.c_str()));
  return channel_.get();
}

void DaemonLink::Prepare() {
  std::string why;
  if (RawChannel* channel = Channel(&why)) channel->Connect();
}

LinkError DaemonLink::Describe(const char* method, int code, const std::string& message) const {
  LinkError e;
  switch (static_cast<grpc::StatusCode>(code)) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      e.timed_out = true;
      e.message = fmt::format("the daemon at {} did not answer {} within {} ms (TOPOTUNE_TIMEOUT_MS)", config_.server,
                              method, config_.timeout_ms);
      break;
    case grpc::StatusCode::UNAVAILABLE:
      e.message = fmt::format("the daemon at {} is unavailable ({}): {}", config_.server, method, message);
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      e.message = fmt::format("the daemon at {} refused the placement ({}): {}", config_.server, method, message);
      break;
    default:
      e.message = fmt::format("the daemon at {} failed {} ({}): {}", config_.server, method,
                              v1::StatusCodeName(static_cast<grpc::StatusCode>(code)), message);
  }
  return e;
}

bool DaemonLink::Call(const char* method, const google::protobuf::Message& request, int timeout_ms,
                      google::protobuf::Message* response, LinkError* error) {
  std::string why;
  RawChannel* channel = Channel(&why);
  if (channel == nullptr) {
    error->message = why;
    return false;
  }
  RawResult result = channel->Call(method, request.SerializeAsString(), timeout_ms);
  const char* name = std::strrchr(method, '/') + 1;
  if (result.code != 0) {
    *error = Describe(name, result.code, result.message);
    return false;
  }
  if (!response->ParseFromString(result.response)) {
    error->message = fmt::format("the daemon at {} answered {} with {} bytes that are not a {}", config_.server, name,
                                 result.response.size(), response->GetTypeName());
    return false;
  }
  return true;
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
  constexpr char kMethod[] = "/topotune.v1.Plans/GetPlan";
  const auto start = std::chrono::steady_clock::now();
  if (Call(kMethod, request, config_.timeout_ms, out, error)) return true;
  if (error->message.find("refused the placement") == std::string::npos || !AnyDotted(rank_hosts)) return false;
  // The topology may name hosts by their short names.
  for (std::string& h : *request.mutable_rank_hosts()) h = h.substr(0, h.find('.'));
  auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  LinkError again;
  if (Call(kMethod, request, std::max<int>(1, config_.timeout_ms - static_cast<int>(spent.count())), out, &again))
    return true;
  if (again.message.find("refused the placement") == std::string::npos) *error = again;
  return false;
}

bool DaemonLink::ReportJob(const v1::ReportJobRequest& request, LinkError* error) {
  v1::ReportJobResponse response;
  return Call("/topotune.v1.Admin/ReportJob", request, config_.timeout_ms, &response, error);
}

}  // namespace topotune::shim
