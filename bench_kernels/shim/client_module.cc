// libtopotune-mpi-client.so: gRPC calls with raw bytes (client_module.h).
#include "bench_kernels/shim/client_module.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "proto/limits.h"

namespace topotune::shim {
namespace {

class GrpcChannel : public RawChannel {
 public:
  explicit GrpcChannel(std::shared_ptr<grpc::Channel> channel) : channel_(channel), stub_(std::move(channel)) {}

  void Connect() override { channel_->GetState(/*try_to_connect=*/true); }

  RawResult Call(const std::string& method, const std::string& request, int timeout_ms) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    grpc::Slice slice(request);
    grpc::ByteBuffer in(&slice, 1), out;
    grpc::Status status;
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    stub_.UnaryCall(&context, method, grpc::StubOptions(), &in, &out, [&](grpc::Status s) {
      std::lock_guard lock(mu);
      status = std::move(s);
      done = true;
      done_cv.notify_one();
    });
    std::unique_lock lock(mu);
    done_cv.wait(lock, [&] { return done; });
    RawResult result;
    result.code = status.error_code();
    result.message = status.error_message();
    if (status.ok()) {
      std::vector<grpc::Slice> slices;
      if (out.Dump(&slices).ok())
        for (const grpc::Slice& s : slices) result.response.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    return result;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
};

}  // namespace
}  // namespace topotune::shim

extern "C" __attribute__((visibility("default"))) topotune::shim::RawChannel* topotune_shim_open_channel(
    const char* server, const char* tls_ca_pem) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls_ca_pem != nullptr && *tls_ca_pem != '\0') {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = tls_ca_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(topotune::v1::limits::kMaxPlanResponseBytes);
  return new topotune::shim::GrpcChannel(grpc::CreateCustomChannel(server, credentials, args));
}
