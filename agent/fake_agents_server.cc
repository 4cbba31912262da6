#include "agent/fake_agents_server.h"

#include <google/protobuf/util/time_util.h>

#include <thread>

namespace topotune::agent::testing {
namespace {

std::string BearerToken(const grpc::ServerContext& context) {
  auto it = context.client_metadata().find("authorization");
  if (it == context.client_metadata().end()) return "";
  std::string value(it->second.data(), it->second.size());
  constexpr std::string_view kPrefix = "Bearer ";
  if (!value.starts_with(kPrefix)) return "";
  return value.substr(kPrefix.size());
}

}  // namespace

grpc::Status FakeAgents::CheckToken(const grpc::ServerContext& context) {
  const std::string token = BearerToken(context);
  tokens_.push_back(token);
  if (!token_.empty() && token != token_) return {grpc::StatusCode::UNAUTHENTICATED, "missing or wrong bearer token"};
  return grpc::Status::OK;
}

void FakeAgents::MaybeHang(grpc::ServerContext* context) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
  }
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < limit && !context->IsCancelled()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!hang_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

grpc::Status FakeAgents::Register(grpc::ServerContext* context, const v1::RegisterRequest* request,
                                  v1::RegisterResponse* response) {
  MaybeHang(context);
  std::lock_guard<std::mutex> lock(mu_);
  if (grpc::Status st = CheckToken(*context); !st.ok()) return st;
  registrations_.push_back(*request);
  std::string id;
  for (const auto& [aid, host] : agents_)
    if (host == request->host().hostname()) id = aid;
  if (id.empty()) {
    id = "agent-" + std::to_string(next_agent_++);
    agents_[id] = request->host().hostname();
  }
  response->set_agent_id(id);
  *response->mutable_heartbeat_interval() = google::protobuf::util::TimeUtil::MillisecondsToDuration(interval_.count());
  return grpc::Status::OK;
}

grpc::Status FakeAgents::Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                                   v1::HeartbeatResponse* response) {
  MaybeHang(context);
  std::lock_guard<std::mutex> lock(mu_);
  if (grpc::Status st = CheckToken(*context); !st.ok()) return st;
  heartbeats_.push_back(*request);
  if (!agents_.count(request->agent_id()))
    return {grpc::StatusCode::NOT_FOUND, "unknown agent id '" + request->agent_id() + "'"};
  *response->mutable_heartbeat_interval() = google::protobuf::util::TimeUtil::MillisecondsToDuration(interval_.count());
  return grpc::Status::OK;
}

grpc::Status FakeAgents::FetchBenchTask(grpc::ServerContext* context, const v1::FetchBenchTaskRequest* request,
                                        v1::FetchBenchTaskResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (grpc::Status st = CheckToken(*context); !st.ok()) return st;
  fetches_.push_back(*request);
  auto it = tasks_.find(request->task_id());
  if (it == tasks_.end()) return {grpc::StatusCode::NOT_FOUND, "unknown task id '" + request->task_id() + "'"};
  if (it->second.task_id() == "finished")
    return {grpc::StatusCode::FAILED_PRECONDITION, "task 'finished' has finished"};
  *response->mutable_task() = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeAgents::ReportSamples(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::ReportSamplesRequest>* reader,
                                       v1::ReportSamplesResponse* response) {
  int break_after = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++streams_;
    if (grpc::Status st = CheckToken(*context); !st.ok()) return st;
    if (breaks_left_ > 0) {
      --breaks_left_;
      break_after = break_after_;
    }
  }
  v1::ReportSamplesRequest request;
  int64_t accepted = 0, duplicates = 0;
  int read = 0;
  while (reader->Read(&request)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (request.sequence() == refuse_sequence_)
      return {grpc::StatusCode::INVALID_ARGUMENT, "sample.times_s: refused by the test"};
    if (samples_.count(request.sequence())) {
      ++duplicates;
    } else {
      samples_[request.sequence()] = request;
      ++accepted;
    }
    if (++read == break_after) return {grpc::StatusCode::UNAVAILABLE, "stream broken by the test"};
  }
  response->set_accepted(accepted);
  response->set_duplicates(duplicates);
  return grpc::Status::OK;
}

void FakeAgents::set_token(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

void FakeAgents::set_heartbeat_interval(std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(mu_);
  interval_ = interval;
}

void FakeAgents::set_hang(bool hang) {
  std::lock_guard<std::mutex> lock(mu_);
  hang_ = hang;
}

int FakeAgents::calls() {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void FakeAgents::Forget() {
  std::lock_guard<std::mutex> lock(mu_);
  agents_.clear();
}

void FakeAgents::BreakStreams(int n, int after) {
  std::lock_guard<std::mutex> lock(mu_);
  breaks_left_ = n;
  break_after_ = after;
}

void FakeAgents::RefuseSequence(int64_t sequence) {
  std::lock_guard<std::mutex> lock(mu_);
  refuse_sequence_ = sequence;
}

void FakeAgents::AddTask(v1::BenchTask task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_[task.task_id()] = std::move(task);
}

std::vector<v1::RegisterRequest> FakeAgents::registrations() {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

std::vector<v1::HeartbeatRequest> FakeAgents::heartbeats() {
  std::lock_guard<std::mutex> lock(mu_);
  return heartbeats_;
}

std::vector<v1::FetchBenchTaskRequest> FakeAgents::fetches() {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

std::map<int64_t, v1::ReportSamplesRequest> FakeAgents::samples() {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

int FakeAgents::streams() {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_;
}

std::vector<std::string> FakeAgents::tokens() {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_;
}

bool FakeAgents::WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  // Polling keeps done() free to use the locking accessors.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

FakeServer::FakeServer(FakeAgents* service, int port, std::shared_ptr<grpc::ServerCredentials> credentials)
    : service_(service) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port),
                           credentials ? credentials : grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_);
  server_ = builder.BuildAndStart();
}

FakeServer::~FakeServer() { Shutdown(); }

void FakeServer::Shutdown() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
}

int UnusedPort() {
  FakeAgents service;
  FakeServer server(&service);
  const int port = server.port();
  server.Shutdown();
  return port;
}

}  // namespace topotune::agent::testing
