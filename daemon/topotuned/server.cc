#include "daemon/topotuned/server.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/support/method_handler.h>
#include <grpcpp/support/server_interceptor.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "daemon/topotuned/tuning.h"
#include "daemon/topotuned/validate.h"
#include "proto/limits.h"
#include "proto/status_names.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"

namespace topotune::daemon {

namespace {

enum class Access { kOpen, kWrite };

bool IsLoopbackPeer(const std::string& peer) {
  return peer.starts_with("ipv4:127.") || peer.starts_with("ipv6:[::1]") || peer.starts_with("unix:") ||
         peer.starts_with("ipv6:[::ffff:127.");
}

// Compares without an early exit, so that the time taken says nothing about
// where a wrong token first differs (only its length leaks).
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

template <typename Context>
grpc::Status Authorize(const Core& core, Context* ctx, Access access) {
  if (access == Access::kOpen) return grpc::Status::OK;
  if (core.token().empty()) {
    if (IsLoopbackPeer(ctx->peer())) return grpc::Status::OK;
    return {grpc::StatusCode::UNAUTHENTICATED,
            fmt::format("topotuned has no token_file, so it takes writes from loopback only (this call came from {})",
                        ctx->peer())};
  }
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end())
    return {grpc::StatusCode::UNAUTHENTICATED, "missing metadata 'authorization: Bearer <token>' (see --token-file)"};
  std::string_view value(it->second.data(), it->second.size());
  // The scheme is case-insensitive (RFC 7235 section 2.1), then one space.
  constexpr std::string_view kScheme = "bearer ";
  const bool bearer = value.size() >= kScheme.size() &&
                      std::equal(kScheme.begin(), kScheme.end(), value.begin(),
                                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
  if (!bearer || !ConstantTimeEqual(value.substr(kScheme.size()), core.token()))
    return {grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token"};
  return grpc::Status::OK;
}

// Logs a refused call at warn, at most once per second (a client retrying
// a wrong token must not flood the log); the rest are counted, and said in
// the next line.
void LogAuthFailure(std::string_view method, const std::string& peer, const std::string& why) {
  static std::mutex mu;
  static auto last = std::chrono::steady_clock::time_point{};
  static int64_t unlogged = 0;
  std::lock_guard lock(mu);
  auto now = std::chrono::steady_clock::now();
  if (now - last < std::chrono::seconds(1)) {
    ++unlogged;
    return;
  }
  spdlog::warn("{} from {}: UNAUTHENTICATED: {}{}", method, peer, why,
               unlogged ? fmt::format(" ({} more refused since the last such line)", unlogged) : "");
  last = now;
  unlogged = 0;
}

// Why the client of `ctx` stopped waiting, or OK.
template <typename Context>
grpc::Status Gone(const Context* ctx) {
  if (ctx->deadline() < std::chrono::system_clock::now())
    return {grpc::StatusCode::DEADLINE_EXCEEDED, "the call's deadline passed before its plan was ready"};
  if (ctx->IsCancelled()) return {grpc::StatusCode::CANCELLED, "the client cancelled the call"};
  return grpc::Status::OK;
}

}  // namespace

using detail::CallGate;

grpc::Status Draining() { return {grpc::StatusCode::UNAVAILABLE, "topotuned is shutting down"}; }

// One call being handled, counted in its Server's gate.
class InFlight {
 public:
  explicit InFlight(CallGate* gate) : gate_(gate) { ++gate_->inflight; }
  ~InFlight() { --gate_->inflight; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  CallGate* gate_;
};

// Runs a handler; an exception escaping it (a bug, or memory exhausted)
// becomes a status that names it, logged once and counted.
template <typename Handler>
grpc::Status Guarded(Core* core, std::string_view method, Handler&& handler) {
  try {
    return handler();
  } catch (const std::bad_alloc&) {
    core->metrics().HandlerException(method);
    spdlog::error("{}: out of memory while handling the call", method);
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, fmt::format("{}: topotuned ran out of memory handling it", method)};
  } catch (const std::exception& e) {
    core->metrics().HandlerException(method);
    spdlog::error("{}: exception while handling the call: {}", method, e.what());
    return {grpc::StatusCode::INTERNAL,
            fmt::format("{}: topotuned failed handling it ({}); see its log", method, e.what())};
  } catch (...) {
    core->metrics().HandlerException(method);
    spdlog::error("{}: unknown exception while handling the call", method);
    return {grpc::StatusCode::INTERNAL, fmt::format("{}: topotuned failed handling it; see its log", method)};
  }
}

// Ends one call: counts and logs it (UNAUTHENTICATED rate-limited, INTERNAL
// as an error).
void Finished(Core* core, std::string_view method, const std::string& peer, const grpc::Status& st,
              std::chrono::steady_clock::time_point start,
              spdlog::level::level_enum failure_level = spdlog::level::debug) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  core->metrics().ObserveRpc(method, v1::StatusCodeName(st.error_code()), seconds);
  if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    core->metrics().AuthFailed(method);
    LogAuthFailure(method, peer, st.error_message());
  } else if (!st.ok()) {
    spdlog::log(st.error_code() == grpc::StatusCode::INTERNAL ? spdlog::level::err : failure_level,
                "{} from {}: {}: {}", method, peer, v1::StatusCodeName(st.error_code()), st.error_message());
  }
}

// Runs one call: authorise, validate, handle, count.
template <typename Req, typename Handler>
grpc::Status Serve(Core* core, CallGate* gate, const char* method, grpc::ServerContext* ctx, const Req& req,
                   Access access, Handler&& handler) {
  InFlight counted(gate);
  auto start = std::chrono::steady_clock::now();
  grpc::Status st = gate->draining ? Draining() : Authorize(*core, ctx, access);
  if (st.ok()) {
    st = Guarded(core, method, [&] {
      Status valid = Validate(req);
      return valid.ok() ? handler() : grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, valid.message());
    });
  }
  Finished(core, method, ctx->peer(), st, start);
  return st;
}

// Index of ReportSamples among the Agents service's methods (gRPC numbers
// them as the .proto declares them).
int ReportSamplesIndex() {
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("topotune.v1.Agents");
  return service->FindMethodByName("ReportSamples")->index();
}

class AgentsService final : public v1::Agents::Service {
 public:
  // ReportSamples reads raw bytes: gRPC's sync reader of the message type
  // cannot tell a message that does not parse from the end of the stream.
  // Its handler is replaced by one whose reader yields each message's bytes
  // (a sync handler still: the callback API's completion queue cost GetPlan
  // a tenth of its throughput).
  // `core` and `gate` outlive the service.
  AgentsService(Core* core, CallGate* gate) : core_(core), gate_(gate) {
    MarkMethodStreamed(
        ReportSamplesIndex(),
        new grpc::internal::ClientStreamingHandler<AgentsService, grpc::ByteBuffer, v1::ReportSamplesResponse>(
            [](AgentsService* service, grpc::ServerContext* ctx, grpc::ServerReader<grpc::ByteBuffer>* reader,
               v1::ReportSamplesResponse* resp) { return service->ReportSamplesBytes(ctx, reader, resp); },
            this));
  }
  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req, v1::RegisterResponse* resp) override {
    return Serve(core_, gate_, "Register", ctx, *req, Access::kWrite, [&] { return core_->Register(*req, resp); });
  }
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                         v1::HeartbeatResponse* resp) override {
    return Serve(core_, gate_, "Heartbeat", ctx, *req, Access::kWrite, [&] { return core_->Heartbeat(*req, resp); });
  }
  grpc::Status FetchBenchTask(grpc::ServerContext* ctx, const v1::FetchBenchTaskRequest* req,
                              v1::FetchBenchTaskResponse* resp) override {
    return Serve(core_, gate_, "FetchBenchTask", ctx, *req, Access::kWrite,
                 [&] { return core_->tuner().FetchBenchTask(*req, resp); });
  }
  // Every message parsed, validated and stored in turn; the first that
  // fails ends the stream with its status and how many were stored before.
  grpc::Status ReportSamplesBytes(grpc::ServerContext* ctx, grpc::ServerReader<grpc::ByteBuffer>* reader,
                                  v1::ReportSamplesResponse* resp) {
    InFlight counted(gate_);
    const auto start = std::chrono::steady_clock::now();
    grpc::Status st = gate_->draining ? Draining() : Authorize(*core_, ctx, Access::kWrite);
    Tuner::Stream stream(&core_->tuner());
    grpc::ByteBuffer buf;
    std::vector<grpc::Slice> slices;
    std::string bytes;
    while (st.ok() && reader->Read(&buf)) {
      st = Guarded(core_, "ReportSamples", [&] {
        slices.clear();
        bytes.clear();
        if (!buf.Dump(&slices).ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "unreadable message buffer");
        for (const grpc::Slice& slice : slices)
          bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
        return stream.AddBytes(bytes);
      });
    }
    *resp = stream.result();
    if (!st.ok() && st.error_code() != grpc::StatusCode::UNAUTHENTICATED)
      st = grpc::Status(st.error_code(), fmt::format("{} (after {} samples stored and {} duplicates)",
                                                     st.error_message(), resp->accepted(), resp->duplicates()));
    Finished(core_, "ReportSamples", ctx->peer(), st, start, spdlog::level::warn);
    return st;
  }

 private:
  Core* core_;
  CallGate* gate_;
};

class PlansService final : public v1::Plans::Service {
 public:
  PlansService(Core* core, CallGate* gate) : core_(core), gate_(gate) {}
  grpc::Status GetPlan(grpc::ServerContext* ctx, const v1::GetPlanRequest* req, v1::GetPlanResponse* resp) override {
    return Serve(core_, gate_, "GetPlan", ctx, *req, Access::kOpen, [&] {
      grpc::Status st = core_->GetPlan(*req, resp, CallContext{[ctx] { return Gone(ctx); }});
      // Programs compress to about 40%, at ~20 ms of CPU per MiB on every
      // call: only when configured, and never for small answers.
      if (st.ok() && core_->config().plan_gzip && !req->tables_only() && resp->ByteSizeLong() > 64 * 1024)
        ctx->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      return st;
    });
  }

 private:
  Core* core_;
  CallGate* gate_;
};

class AdminService final : public v1::Admin::Service {
 public:
  AdminService(Core* core, CallGate* gate) : core_(core), gate_(gate) {}
  grpc::Status GetTopology(grpc::ServerContext* ctx, const v1::GetTopologyRequest* req,
                           v1::GetTopologyResponse* resp) override {
    return Serve(core_, gate_, "GetTopology", ctx, *req, Access::kOpen, [&] { return core_->GetTopology(*req, resp); });
  }
  grpc::Status Discover(grpc::ServerContext* ctx, const v1::DiscoverRequest* req, v1::DiscoverResponse* resp) override {
    return Serve(core_, gate_, "Discover", ctx, *req, Access::kWrite, [&] { return core_->Discover(*req, resp); });
  }
  grpc::Status StartTuning(grpc::ServerContext* ctx, const v1::StartTuningRequest* req,
                           v1::StartTuningResponse* resp) override {
    return Serve(core_, gate_, "StartTuning", ctx, *req, Access::kWrite,
                 [&] { return core_->tuner().StartTuning(*req, resp); });
  }
  grpc::Status TuningStatus(grpc::ServerContext* ctx, const v1::TuningStatusRequest* req,
                            v1::TuningStatusResponse* resp) override {
    return Serve(core_, gate_, "TuningStatus", ctx, *req, Access::kOpen,
                 [&] { return core_->tuner().TuningStatus(*req, resp); });
  }
  grpc::Status ListDecisions(grpc::ServerContext* ctx, const v1::ListDecisionsRequest* req,
                             v1::ListDecisionsResponse* resp) override {
    return Serve(core_, gate_, "ListDecisions", ctx, *req, Access::kOpen,
                 [&] { return core_->ListDecisions(*req, resp); });
  }
  grpc::Status ExportRules(grpc::ServerContext* ctx, const v1::ExportRulesRequest* req,
                           v1::ExportRulesResponse* resp) override {
    return Serve(core_, gate_, "ExportRules", ctx, *req, Access::kOpen, [&] { return core_->ExportRules(*req, resp); });
  }
  grpc::Status ReportJob(grpc::ServerContext* ctx, const v1::ReportJobRequest* req,
                         v1::ReportJobResponse* resp) override {
    return Serve(core_, gate_, "ReportJob", ctx, *req, Access::kOpen, [&] { return core_->ReportJob(*req, resp); });
  }
  grpc::Status ListDemand(grpc::ServerContext* ctx, const v1::ListDemandRequest* req,
                          v1::ListDemandResponse* resp) override {
    return Serve(core_, gate_, "ListDemand", ctx, *req, Access::kOpen, [&] { return core_->ListDemand(*req, resp); });
  }
  grpc::Status ListAgents(grpc::ServerContext* ctx, const v1::ListAgentsRequest* req,
                          v1::ListAgentsResponse* resp) override {
    return Serve(core_, gate_, "ListAgents", ctx, *req, Access::kOpen, [&] { return core_->ListAgents(*req, resp); });
  }

 private:
  Core* core_;
  CallGate* gate_;
};

// Request bytes that do not parse as the method's message: gRPC's sync
// server answers INTERNAL with no message before any handler runs. This
// interceptor turns that into INVALID_ARGUMENT naming the method, logs it at
// debug and counts it (topotune_rpc_malformed_requests_total).
class MalformedRequests final : public grpc::experimental::Interceptor {
 public:
  MalformedRequests(Core* core, grpc::experimental::ServerRpcInfo* info) : core_(core), info_(info) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        info_->type() == grpc::experimental::ServerRpcInfo::Type::UNARY && methods->GetRecvMessage() == nullptr)
      malformed_ = true;
    if (malformed_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      std::string_view full(info_->method());
      std::string_view method = full.substr(full.rfind('/') + 1);
      core_->metrics().MalformedRequest(method);
      core_->metrics().ObserveRpc(method, "INVALID_ARGUMENT", 0);
      spdlog::debug("{}: request bytes that are not its message", full);
      methods->ModifySendStatus(
          {grpc::StatusCode::INVALID_ARGUMENT,
           fmt::format("the request is not a valid message of {} (its bytes do not parse)", full)});
    }
    methods->Proceed();
  }

 private:
  Core* core_;
  grpc::experimental::ServerRpcInfo* info_;
  bool malformed_ = false;
};

class MalformedRequestsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MalformedRequestsFactory(Core* core) : core_(core) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new MalformedRequests(core_, info);
  }

 private:
  Core* core_;
};

// Linking grpc++_reflection adds its plugin to every server (a static
// initializer); `reflection: false` takes it out again.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const auto& p) { return p->name() == "proto_server_reflection"; });
  }
};

struct Server::Services {
  Services(Core* core, CallGate* gate) : agents(core, gate), plans(core, gate), admin(core, gate) {}
  AgentsService agents;
  PlansService plans;
  AdminService admin;
};

namespace {

StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return Status::IoError(fmt::format("{}: cannot read the {}", path, what));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Start(Core* core) {
  const Config& c = core->config();
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!c.tls_cert.empty()) {
    auto cert = ReadFile(c.tls_cert, "TLS certificate (tls_cert)");
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(c.tls_key, "TLS key (tls_key)");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
  }
  std::unique_ptr<Server> server(new Server());
  server->services_ = std::make_unique<Services>(core, &server->calls_);
  // Health (grpc.health.v1.Health) for "" and every service: NOT_SERVING
  // until the listener is up (the database is open before Start is called)
  // and again from the moment shutdown begins.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!c.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  builder.AddListeningPort(c.listen, creds, &server->port_);
  {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(std::make_unique<MalformedRequestsFactory>(core));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  builder.RegisterService(&server->services_->agents);
  builder.RegisterService(&server->services_->plans);
  builder.RegisterService(&server->services_->admin);
  builder.SetMaxReceiveMessageSize(static_cast<int>(c.max_message_bytes));
  builder.SetMaxSendMessageSize(v1::limits::kMaxPlanResponseBytes);
  grpc::ResourceQuota quota("topotuned");
  // One thread per running call plus gRPC's pollers.
  quota.SetMaxThreads(c.max_concurrent_rpcs + 2);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->port_ == 0)
    return Status::IoError(fmt::format("cannot listen on {} (in use, or not an address of this host?)", c.listen));
  core->tuner().SetBoundPort(server->port_);
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  for (const char* name :
       {"", v1::Agents::service_full_name(), v1::Plans::service_full_name(), v1::Admin::service_full_name()})
    health->SetServingStatus(name, true);
  // The address with the port bound (the one chosen for port 0).
  spdlog::info("serving gRPC on {}:{}{}{}", ListenHost(c.listen), server->port_, c.tls_cert.empty() ? "" : " with TLS",
               core->token().empty() ? "; writes from loopback only (no token_file)" : "");
  return server;
}

Server::~Server() { Shutdown(0); }

void Server::Shutdown(double seconds) {
  if (!server_) return;
  // Give running calls up to `seconds`, then cancel what is left. (gRPC's
  // Shutdown(deadline) would also wait out the deadline for clients that
  // merely keep an idle connection open.)
  calls_.draining = true;
  if (auto* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (calls_.inflight > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
}

}  // namespace topotune::daemon
