#include "agent/serve.h"

#include <fmt/format.h>
#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "daemon/topotuned/validate.h"

namespace topotune::agent {
namespace {

constexpr std::chrono::milliseconds kMaxInterval{24 * 3600 * 1000};

// A Duration as milliseconds; nullopt when unset or not positive.
std::optional<std::chrono::milliseconds> ToMillis(bool has, const google::protobuf::Duration& d) {
  if (!has) return std::nullopt;
  const int64_t ms = d.seconds() * 1000 + d.nanos() / 1000000;
  if (ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

std::string Seconds(std::chrono::milliseconds d) {
  return fmt::format("{:.3g} s", static_cast<double>(d.count()) / 1e3);
}

}  // namespace

Agent::Agent(ServeOptions options, FactsSource facts, ChannelFactory channels)
    : options_(std::move(options)),
      facts_(std::move(facts)),
      channels_(std::move(channels)),
      backoff_(options_.backoff),
      interval_(options_.default_interval) {}

void Agent::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  // A call in flight to an unresponsive server would otherwise hold Run for
  // up to rpc_timeout.
  if (inflight_) inflight_->TryCancel();
  cv_.notify_all();
}

grpc::Status Agent::Call(grpc::ClientContext* context, const std::function<grpc::Status()>& call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return grpc::Status(grpc::StatusCode::CANCELLED, "the agent is stopping");
    // Cleared below, before the call returns: never dangles.
    // cppcheck-suppress danglingLifetime
    inflight_ = context;
  }
  grpc::Status status = call();
  std::lock_guard<std::mutex> lock(mu_);
  inflight_ = nullptr;
  return status;
}

bool Agent::stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool Agent::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_; });
}

std::string Agent::agent_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return agent_id_;
}

int Agent::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

void Agent::Reconnect() { stub_ = v1::Agents::NewStub(channels_()); }

Agent::Outcome Agent::HandleFailure(const char* what, const grpc::Status& status, Status* error) {
  const std::string& server = options_.connection.server;
  if (stopping()) return Outcome::kStopped;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
      *error = Status::FailedPrecondition(fmt::format(
          "topotuned at {} refused the agent's credentials ({}): {}", server, DescribeStatus(status),
          options_.connection.token.empty()
              ? "no token was sent; pass --token-file FILE (or set TOPOTUNE_TOKEN_FILE) with the server's token"
              : "the token is not the server's; check --token-file (or TOPOTUNE_TOKEN_FILE)"));
      return Outcome::kFatal;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
      // Retrying the same request cannot help.
      *error = Status::FailedPrecondition(
          fmt::format("cannot {} with topotuned at {}: {}", what, server, DescribeStatus(status)));
      return Outcome::kFatal;
    default:
      break;
  }
  if (options_.once) {
    *error = Status::FailedPrecondition(
        fmt::format("cannot {} with topotuned at {}: {}", what, server, DescribeStatus(status)));
    return Outcome::kFatal;
  }
  const int attempt = backoff_.attempts() + 1;
  const std::chrono::milliseconds delay = backoff_.Next();
  spdlog::warn("cannot {} with topotuned at {}: {}; attempt {} failed, reconnecting in {}", what, server,
               DescribeStatus(status), attempt, Seconds(delay));
  if (!WaitFor(delay)) return Outcome::kStopped;
  Reconnect();
  return Outcome::kRetry;
}

Agent::Outcome Agent::DoRegister(const v1::HostFacts& facts, Status* error) {
  v1::RegisterRequest request;
  *request.mutable_host() = facts;
  request.set_agent_version(options_.agent_version);
  v1::RegisterResponse response;
  grpc::ClientContext context;
  PrepareContext(options_.connection, options_.rpc_timeout, &context);
  const grpc::Status status = Call(&context, [&] { return stub_->Register(&context, request, &response); });
  if (!status.ok()) return HandleFailure("register", status, error);
  if (response.agent_id().empty()) {
    *error = Status::Internal(
        fmt::format("topotuned at {} accepted the registration but returned no agent id", options_.connection.server));
    return Outcome::kFatal;
  }
  if (backoff_.attempts() > 0) spdlog::info("reached topotuned at {} again", options_.connection.server);
  backoff_.Reset();
  if (auto ms = ToMillis(response.has_heartbeat_interval(), response.heartbeat_interval()))
    interval_ = std::clamp(*ms, options_.min_interval, kMaxInterval);
  {
    std::lock_guard<std::mutex> lock(mu_);
    agent_id_ = response.agent_id();
    ++registrations_;
  }
  spdlog::info("registered {} with topotuned at {} as agent {}; heartbeat every {}", facts.hostname(),
               options_.connection.server, response.agent_id(), Seconds(interval_));
  return Outcome::kOk;
}

Agent::Outcome Agent::DoHeartbeat(v1::AgentState state, Status* error) {
  v1::HeartbeatRequest request;
  request.set_agent_id(agent_id());
  request.set_state(state);
  v1::HeartbeatResponse response;
  grpc::ClientContext context;
  PrepareContext(options_.connection, options_.rpc_timeout, &context);
  const grpc::Status status = Call(&context, [&] { return stub_->Heartbeat(&context, request, &response); });
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    spdlog::warn("topotuned at {} does not know agent {} ({}); registering again", options_.connection.server,
                 request.agent_id(), DescribeStatus(status));
    return Outcome::kReregister;
  }
  if (!status.ok()) return HandleFailure("heartbeat", status, error);
  if (backoff_.attempts() > 0) spdlog::info("reached topotuned at {} again", options_.connection.server);
  backoff_.Reset();
  if (auto ms = ToMillis(response.has_heartbeat_interval(), response.heartbeat_interval())) {
    const auto next = std::clamp(*ms, options_.min_interval, kMaxInterval);
    if (next != interval_) spdlog::info("topotuned asks for a heartbeat every {}", Seconds(next));
    interval_ = next;
  }
  spdlog::debug("heartbeat sent (agent {})", request.agent_id());
  return Outcome::kOk;
}

void Agent::Drain() {
  const std::string id = agent_id();
  if (id.empty() || !stub_) return;
  v1::HeartbeatRequest request;
  request.set_agent_id(id);
  request.set_state(v1::AGENT_STATE_DRAINING);
  v1::HeartbeatResponse response;
  grpc::ClientContext context;
  PrepareContext(options_.connection, options_.drain_timeout, &context);
  const grpc::Status status = stub_->Heartbeat(&context, request, &response);
  if (status.ok())
    spdlog::info("told topotuned at {} that agent {} is draining", options_.connection.server, id);
  else
    spdlog::warn("could not tell topotuned at {} that agent {} is draining: {}", options_.connection.server, id,
                 DescribeStatus(status));
}

Status Agent::Run() {
  auto validated = [](v1::HostFacts facts, const std::string& version) -> StatusOr<v1::HostFacts> {
    v1::RegisterRequest request;
    *request.mutable_host() = facts;
    request.set_agent_version(version);
    if (Status st = daemon::Validate(request); !st.ok()) {
      return Status::InvalidArgument("the host's facts break the API's limits, and topotuned would refuse them: " +
                                     st.message());
    }
    return facts;
  };
  StatusOr<v1::HostFacts> collected = facts_();
  if (!collected.ok()) return collected.status();
  StatusOr<v1::HostFacts> facts = validated(std::move(collected).value(), options_.agent_version);
  if (!facts.ok()) return facts.status();

  Reconnect();
  bool need_register = true;
  auto next_refresh = std::chrono::steady_clock::now() + options_.refresh;
  Status error;
  while (true) {
    if (stopping()) break;
    if (need_register) {
      const Outcome o = DoRegister(*facts, &error);
      if (o == Outcome::kFatal) return error;
      if (o == Outcome::kStopped) break;
      if (o != Outcome::kOk) continue;
      need_register = false;
    }
    const Outcome o = DoHeartbeat(v1::AGENT_STATE_IDLE, &error);
    if (o == Outcome::kFatal) return error;
    if (o == Outcome::kStopped) break;
    if (o == Outcome::kReregister) {
      need_register = true;
      continue;
    }
    if (o != Outcome::kOk) continue;
    if (options_.once) return Status::Ok();

    if (!WaitFor(interval_)) break;
    if (options_.refresh.count() > 0 && std::chrono::steady_clock::now() >= next_refresh) {
      next_refresh = std::chrono::steady_clock::now() + options_.refresh;
      StatusOr<v1::HostFacts> fresh = facts_();
      if (fresh.ok()) fresh = validated(std::move(fresh).value(), options_.agent_version);
      if (!fresh.ok()) {
        spdlog::warn("collecting the host's facts again failed ({}); keeping the registered ones",
                     fresh.status().message());
      } else if (!google::protobuf::util::MessageDifferencer::Equals(*fresh, *facts)) {
        spdlog::info("the host's facts changed; registering them again");
        facts = std::move(fresh);
        need_register = true;
      }
    }
  }
  Drain();
  return Status::Ok();
}

}  // namespace topotune::agent
