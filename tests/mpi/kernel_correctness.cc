// kernel_correctness: runs one registered kernel through RunAlltoall,
// RunAlltoallv or RunAllgather on every rank of MPI_COMM_WORLD and checks
// every received byte against an independent model of the collective.
//
//   mpirun -np N kernel_correctness COLLECTIVE NAME TOPOLOGY_FILE
//
// Cases (each with its own data, so that stale buffers cannot pass):
//   * datatypes MPI_BYTE, MPI_INT, MPI_DOUBLE and "vec", a vector of three
//     5-byte blocks with stride 7, resized to extent 23 (15 data bytes, gaps
//     inside and after each element); counts from 0 up, including 1 byte and
//     sizes that are not multiples of 8;
//   * send and receive types that differ but match in signature (vec vs
//     15 x MPI_BYTE);
//   * MPI_IN_PLACE;
//   * alltoallv: per-pair counts with zeros, asymmetric (symmetric in place),
//     and displacements in reverse peer order with a gap after each block.
// The whole receive buffer is compared with the expected image: data at the
// receive type's data bytes, the poison value in its gaps, between blocks
// and in a guard zone past the end. The send buffer must be unchanged.
//
// Contexts: kernels that need one (KernelInfo::needs_context) run with a
// context built from TOPOLOGY_FILE (two switches, h0..h3 and h4..h7), ranks
// placed alternately on the two switches so that consecutive ranks talk
// across the inter-switch link ("spread": rank i on h((i%2)*4 + i/2)); from
// 5 ranks also with two ranks on some hosts ("packed": rank i on
// h((i%2)*4 + (i/2)%2)); from 4 ranks with two to four ranks on each of
// two hosts, interleaved ("dense": rank i on h((i%2)*4 + i/8), so 2+2 on 4
// ranks, 3+2 on 5, 4+4 on 8); and once with an empty context, where they must
// fall back and still deliver. Other kernels run with an empty context and
// with only a private communicator. Level 3 alltoallv kernels get the plan
// of each call's pattern, and once a stale plan, which must not corrupt data.
//
// A kernel that falls back on every call of a context where it should run
// (its own context, 2 ranks or more) fails: it would otherwise pass by
// never running. Exit status: 0 when every case matches, 1 on a mismatch,
// 2 on a usage or setup error. The first mismatches are printed with the
// rank, the case and the byte (block, element, offset, expected, got).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels/driver/context.h"
#include "bench_kernels/kernel.h"
#include "tuner/topology_io.h"

namespace {

using topotune::kernels::AllgatherArgs;
using topotune::kernels::AlltoallArgs;
using topotune::kernels::AlltoallvArgs;
using topotune::kernels::Collective;
using topotune::kernels::KernelInfo;

constexpr unsigned char kPoison = 0xEE;
constexpr size_t kGuard = 64;
constexpr int kMaxReports = 8;

// A datatype and where its data bytes lie within one element.
struct TestType {
  std::string name;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int64_t extent = 0;
  std::vector<int> data_offsets;  // In type-map order; size() is the type size.
  int64_t size() const { return static_cast<int64_t>(data_offsets.size()); }
  // Memory offset of logical data byte k of a buffer of these elements.
  int64_t Offset(int64_t k) const { return (k / size()) * extent + data_offsets[static_cast<size_t>(k % size())]; }
};

TestType Contiguous(const std::string& name, MPI_Datatype t, int size) {
  TestType out{name, t, size, {}};
  for (int i = 0; i < size; ++i) out.data_offsets.push_back(i);
  return out;
}

// Three blocks of 5 bytes, stride 7, resized to extent 23.
TestType Vec() {
  MPI_Datatype v = MPI_DATATYPE_NULL, r = MPI_DATATYPE_NULL;
  MPI_Type_vector(3, 5, 7, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, 23, &r);
  MPI_Type_commit(&r);
  MPI_Type_free(&v);
  TestType out{"vec", r, 23, {}};
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 5; ++i) out.data_offsets.push_back(b * 7 + i);
  return out;
}

// The value of logical byte k of the block that `src` sends to `dst` in case
// `case_id` (dst = -1 for allgather): murmur3's finaliser of the four.
unsigned char Byte(int src, int dst, int64_t k, int case_id) {
  uint32_t h = static_cast<uint32_t>(src) * 0x9E3779B1u ^ static_cast<uint32_t>(dst + 7) * 0x85EBCA77u ^
               static_cast<uint32_t>(case_id) * 0xC2B2AE3Du ^ static_cast<uint32_t>(k) * 0x27D4EB2Fu ^
               static_cast<uint32_t>(k >> 32);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return static_cast<unsigned char>(h);
}

// Where a block of a buffer lies, for describing a mismatch.
struct Region {
  int64_t begin = 0;  // Byte offset of the block's first element.
  int64_t count = 0;  // Elements.
  int peer = 0;
  const TestType* type = nullptr;
};

// A buffer together with the image it must have after the call.
struct Buffer {
  std::vector<unsigned char> bytes, expected;
  std::vector<Region> regions;
  const char* peer_role = "from";  // "block from rank 3" (receive) or "block to rank 3" (send).
  void Alloc(int64_t n) {
    bytes.assign(static_cast<size_t>(n) + kGuard, kPoison);
    expected.assign(bytes.size(), kPoison);
  }
  // Writes logical bytes [0, count*size) of (src -> dst) at `at` in `img`.
  static void Put(std::vector<unsigned char>* img, int64_t at, const TestType& t, int64_t count, int src, int dst,
                  int case_id) {
    for (int64_t k = 0; k < count * t.size(); ++k)
      (*img)[static_cast<size_t>(at + t.Offset(k))] = Byte(src, dst, k, case_id);
  }
  std::string Describe(int64_t off) const {
    for (const Region& r : regions) {
      const int64_t len = r.count * r.type->extent;
      if (off >= r.begin && off < r.begin + len) {
        const int64_t e = (off - r.begin) / r.type->extent, within = (off - r.begin) % r.type->extent;
        const bool data =
            std::find(r.type->data_offsets.begin(), r.type->data_offsets.end(), within) != r.type->data_offsets.end();
        return std::to_string(off) + " (block " + peer_role + " rank " + std::to_string(r.peer) + ", element " +
               std::to_string(e) + ", byte " + std::to_string(within) + (data ? "" : ", a gap of the datatype") + ")";
      }
    }
    if (off >= static_cast<int64_t>(bytes.size() - kGuard)) return std::to_string(off) + " (guard zone past the end)";
    return std::to_string(off) + " (outside every block)";
  }
  // The first difference from the expected image, or an empty string.
  std::string Compare() const {
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] != expected[i]) {
        char buf[64];
        std::snprintf(buf, sizeof buf, ": expected 0x%02x, got 0x%02x", expected[i], bytes[i]);
        return "byte " + Describe(static_cast<int64_t>(i)) + buf;
      }
    }
    return {};
  }
};

struct Case {
  std::string what;
  const TestType* send = nullptr;
  const TestType* recv = nullptr;
  // Units per block (alltoallv: the count parameter of PairCount). A unit is
  // max(send type size, recv type size) bytes: one element of the larger type.
  int64_t count = 0;
  bool in_place = false;
  bool stale_plan = false;  // alltoallv Level 3: build the plan for another pattern.
};

class Tester {
 public:
  Tester(const KernelInfo& kernel, int rank, int n) : k_(kernel), rank_(rank), n_(n) {}

  // Runs one case under `ctx`; false on a mismatch (on any rank).
  bool Run(const Case& c, const std::string& context_name, topotune::bench::ContextHolder* holder,
           topotune::kernels::FallbackLog* log) {
    ++case_id_;
    std::string error;
    int rc = MPI_SUCCESS;
    switch (k_.collective) {
      case Collective::kAlltoall:
        rc = Alltoall(c, holder, log, &error);
        break;
      case Collective::kAlltoallv:
        rc = Alltoallv(c, holder, log, &error);
        break;
      case Collective::kAllgather:
        rc = Allgather(c, holder, log, &error);
        break;
    }
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, text, &len);
      error = "MPI error: " + std::string(text, static_cast<size_t>(len));
    }
    int ok = error.empty() ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok && reports_++ < kMaxReports) {
      std::fprintf(stderr, "MISMATCH rank %d: %s %s np=%d context=%s case '%s': %s\n", rank_,
                   std::string(topotune::kernels::CollectiveName(k_.collective)).c_str(), std::string(k_.name).c_str(),
                   n_, context_name.c_str(), c.what.c_str(), error.c_str());
    }
    return all_ok == 1;
  }

 private:
  int Alltoall(const Case& c, topotune::bench::ContextHolder* holder, topotune::kernels::FallbackLog* log,
               std::string* error) {
    const TestType& rt = *c.recv;
    const TestType& st = *c.send;
    const int64_t rcount = RecvElems(c, c.count), scount = SendElems(c, c.count);
    const int64_t rblock = rcount * rt.extent, sblock = scount * st.extent;
    Buffer recv, send;
    send.peer_role = "to";
    ExpectBlockFromEach(&recv, rt, rcount, rblock, rank_);
    if (c.in_place) {
      for (int d = 0; d < n_; ++d) Buffer::Put(&recv.bytes, d * rblock, rt, rcount, rank_, d, case_id_);
    } else {
      send.Alloc(sblock * n_);
      for (int d = 0; d < n_; ++d) {
        Buffer::Put(&send.bytes, d * sblock, st, scount, rank_, d, case_id_);
        send.regions.push_back({d * sblock, scount, d, &st});
      }
      send.expected = send.bytes;
    }
    AlltoallArgs a{c.in_place ? MPI_IN_PLACE : send.bytes.data(),
                   static_cast<int>(scount),
                   st.type,
                   recv.bytes.data(),
                   static_cast<int>(rcount),
                   rt.type,
                   MPI_COMM_WORLD};
    int rc = topotune::kernels::RunAlltoall(k_, a, holder->context(), log);
    if (rc == MPI_SUCCESS) *error = Check(recv, send, c.in_place);
    return rc;
  }

  // A receive buffer of one block of `rblock` bytes per rank, block s
  // expected to hold rank s's data for `to` (-1: s's own block).
  void ExpectBlockFromEach(Buffer* recv, const TestType& rt, int64_t rcount, int64_t rblock, int to) const {
    recv->Alloc(rblock * n_);
    for (int s = 0; s < n_; ++s) {
      Buffer::Put(&recv->expected, s * rblock, rt, rcount, s, to, case_id_);
      recv->regions.push_back({s * rblock, rcount, s, &rt});
    }
  }

  static int64_t Unit(const Case& c) { return std::max(c.send->size(), c.recv->size()); }
  static int64_t RecvElems(const Case& c, int64_t units) { return units * Unit(c) / c.recv->size(); }
  static int64_t SendElems(const Case& c, int64_t units) { return units * Unit(c) / c.send->size(); }

  // Units from src to dst for count parameter m: zeros included.
  int64_t PairCount(int src, int dst, int64_t m, bool symmetric) const {
    if (m == 0) return 0;
    if (symmetric && src > dst) std::swap(src, dst);
    return (static_cast<int64_t>(src) * 7 + static_cast<int64_t>(dst) * 3 + m) % (m + 1);
  }

  int Alltoallv(const Case& c, topotune::bench::ContextHolder* holder, topotune::kernels::FallbackLog* log,
                std::string* error) {
    const TestType& rt = *c.recv;
    const TestType& st = *c.send;
    std::vector<int> scounts(n_), sdispls(n_), rcounts(n_), rdispls(n_);
    // Reverse peer order with a one-element gap after each block.
    int64_t spos = 0, rpos = 0;
    for (int p = n_ - 1; p >= 0; --p) {
      const int64_t rc_elems = RecvElems(c, PairCount(p, rank_, c.count, c.in_place));
      const int64_t sc_elems = SendElems(c, PairCount(rank_, p, c.count, c.in_place));
      rcounts[p] = static_cast<int>(rc_elems);
      rdispls[p] = static_cast<int>(rpos);
      rpos += rc_elems + 1;
      scounts[p] = static_cast<int>(sc_elems);
      sdispls[p] = static_cast<int>(spos);
      spos += sc_elems + 1;
    }
    Buffer recv, send;
    send.peer_role = "to";
    recv.Alloc(rpos * rt.extent);
    for (int s = 0; s < n_; ++s) {
      Buffer::Put(&recv.expected, rdispls[s] * rt.extent, rt, rcounts[s], s, rank_, case_id_);
      recv.regions.push_back({rdispls[s] * rt.extent, rcounts[s], s, &rt});
    }
    if (c.in_place) {
      for (int d = 0; d < n_; ++d) Buffer::Put(&recv.bytes, rdispls[d] * rt.extent, rt, rcounts[d], rank_, d, case_id_);
    } else {
      send.Alloc(spos * st.extent);
      for (int d = 0; d < n_; ++d) {
        Buffer::Put(&send.bytes, sdispls[d] * st.extent, st, scounts[d], rank_, d, case_id_);
        send.regions.push_back({sdispls[d] * st.extent, scounts[d], d, &st});
      }
      send.expected = send.bytes;
    }
    AlltoallvArgs a{c.in_place ? MPI_IN_PLACE : send.bytes.data(),
                    scounts.data(),
                    sdispls.data(),
                    st.type,
                    recv.bytes.data(),
                    rcounts.data(),
                    rdispls.data(),
                    rt.type,
                    MPI_COMM_WORLD};
    if (k_.needs_context && holder->context().private_comm != MPI_COMM_NULL) {
      int rc = MPI_SUCCESS;
      if (c.stale_plan) {
        // A plan for every pair sending one element more than this call.
        std::vector<int> more(scounts);
        for (int& x : more) ++x;
        AlltoallvArgs other = a;
        other.sendbuf = send.bytes.data();
        other.sendcounts = more.data();
        other.sendtype = st.type;
        rc = holder->SetAlltoallvPlanFor(other, k_.name);
      } else {
        rc = holder->SetAlltoallvPlanFor(a, k_.name);
      }
      if (rc != MPI_SUCCESS) {
        *error = "BuildAlltoallvPlan failed";
        return MPI_SUCCESS;
      }
    }
    int rc = topotune::kernels::RunAlltoallv(k_, a, holder->context(), log);
    holder->ClearAlltoallvPlan();
    if (rc == MPI_SUCCESS) *error = Check(recv, send, c.in_place);
    return rc;
  }

  int Allgather(const Case& c, topotune::bench::ContextHolder* holder, topotune::kernels::FallbackLog* log,
                std::string* error) {
    const TestType& rt = *c.recv;
    const TestType& st = *c.send;
    const int64_t rcount = RecvElems(c, c.count), scount = SendElems(c, c.count);
    const int64_t rblock = rcount * rt.extent;
    Buffer recv, send;
    send.peer_role = "of";
    ExpectBlockFromEach(&recv, rt, rcount, rblock, -1);
    if (c.in_place) {
      Buffer::Put(&recv.bytes, rank_ * rblock, rt, rcount, rank_, -1, case_id_);
    } else {
      send.Alloc(scount * st.extent);
      Buffer::Put(&send.bytes, 0, st, scount, rank_, -1, case_id_);
      send.regions.push_back({0, scount, rank_, &st});
      send.expected = send.bytes;
    }
    AllgatherArgs a{c.in_place ? MPI_IN_PLACE : send.bytes.data(),
                    static_cast<int>(scount),
                    st.type,
                    recv.bytes.data(),
                    static_cast<int>(rcount),
                    rt.type,
                    MPI_COMM_WORLD};
    int rc = topotune::kernels::RunAllgather(k_, a, holder->context(), log);
    if (rc == MPI_SUCCESS) *error = Check(recv, send, c.in_place);
    return rc;
  }

  static std::string Check(const Buffer& recv, const Buffer& send, bool in_place) {
    std::string e = recv.Compare();
    if (!e.empty()) return "receive buffer " + e;
    if (!in_place) {
      e = send.Compare();
      if (!e.empty()) return "send buffer modified: " + e;
    }
    return {};
  }

  const KernelInfo& k_;
  int rank_;
  int n_;
  int case_id_ = 0;
  int reports_ = 0;
};

std::vector<Case> MakeCases(const std::vector<TestType>& types, Collective collective, bool level3) {
  std::vector<Case> cases;
  // Counts per type: 0, 1 element, and sizes that are not multiples of 8 bytes.
  const std::map<std::string, std::vector<int64_t>> counts = {
      {"MPI_BYTE", {0, 1, 7, 13, 1000, 4099, 40009}},
      {"MPI_INT", {0, 1, 3, 250, 1025}},
      {"MPI_DOUBLE", {0, 1, 5, 129}},
      {"vec", {0, 1, 3, 70}},
  };
  for (const TestType& t : types) {
    for (int64_t m : counts.at(t.name)) {
      for (bool in_place : {false, true}) {
        std::string what = t.name + " count " + std::to_string(m) + (in_place ? " MPI_IN_PLACE" : "");
        cases.push_back({what, &t, &t, m, in_place, false});
      }
    }
  }
  // Different types with the same signature: vec is 15 MPI_BYTEs.
  const TestType* byte = &types[0];
  const TestType* vec = &types[3];
  for (int64_t m : {1, 4, 33}) {
    const std::string vc = std::to_string(m), bc = std::to_string(m * 15);
    cases.push_back({"send vec count " + vc + ", receive MPI_BYTE count " + bc, vec, byte, m, false, false});
    cases.push_back({"send MPI_BYTE count " + bc + ", receive vec count " + vc, byte, vec, m, false, false});
  }
  if (collective == Collective::kAlltoallv && level3) {
    cases.push_back({"MPI_INT count 250 with a stale Level 3 plan", &types[1], &types[1], 250, false, true});
  }
  return cases;
}

int Usage(const char* msg) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::fprintf(stderr, "kernel_correctness: %s\nusage: kernel_correctness COLLECTIVE NAME TOPOLOGY_FILE\n", msg);
  return 2;
}

int Main(int argc, char** argv) {
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc != 4) return Usage("wrong number of arguments");
  Collective collective;
  if (!topotune::kernels::ParseCollective(argv[1], &collective)) return Usage("unknown collective");
  const KernelInfo* kernel = topotune::kernels::FindKernel(collective, argv[2]);
  if (kernel == nullptr) {
    std::string msg = "unknown kernel '" + std::string(argv[2]) + "'; " + topotune::kernels::ValidKernels(collective);
    return Usage(msg.c_str());
  }
  auto topo = topotune::LoadTopologyFile(argv[3]);
  if (!topo.ok()) return Usage(topo.status().message().c_str());

  std::vector<TestType> types = {Contiguous("MPI_BYTE", MPI_BYTE, 1), Contiguous("MPI_INT", MPI_INT, sizeof(int)),
                                 Contiguous("MPI_DOUBLE", MPI_DOUBLE, sizeof(double)), Vec()};

  // The contexts to run under: name, holder, whether the kernel must run
  // (not fall back) on at least one call there.
  struct Variant {
    std::string name;
    std::unique_ptr<topotune::bench::ContextHolder> holder;
    bool must_run = false;
  };
  std::vector<Variant> variants;
  auto placed = [&](const std::string& name, int (*host_of)(int)) -> int {
    std::vector<std::string> hosts;
    for (int i = 0; i < n; ++i) hosts.push_back("h" + std::to_string(host_of(i)));
    auto job = topotune::bench::PlaceRanks(*topo, {{}, hosts}, n);
    if (!job.ok()) return Usage(job.status().message().c_str());
    auto holder = std::make_unique<topotune::bench::ContextHolder>();
    holder->DupComm(MPI_COMM_WORLD);
    auto st = holder->AddTopology(job->tree, collective, rank);
    if (!st.ok()) return Usage(st.message().c_str());
    variants.push_back({name, std::move(holder), n >= 2});
    return 0;
  };
  if (kernel->needs_context) {
    if (int rc = placed("spread", [](int i) { return (i % 2) * 4 + (i / 2) % 4; })) return rc;
    if (n >= 5) {
      if (int rc = placed("packed", [](int i) { return (i % 2) * 4 + (i / 2) % 2; })) return rc;
    }
    if (n >= 4) {
      if (int rc = placed("dense", [](int i) { return (i % 2) * 4 + i / 8; })) return rc;
    }
    variants.push_back({"empty (must fall back)", std::make_unique<topotune::bench::ContextHolder>(), false});
  } else {
    variants.push_back({"empty", std::make_unique<topotune::bench::ContextHolder>(), n >= 2});
    auto dup = std::make_unique<topotune::bench::ContextHolder>();
    dup->DupComm(MPI_COMM_WORLD);
    variants.push_back({"private_comm", std::move(dup), n >= 2});
  }

  const std::vector<Case> cases = MakeCases(types, collective, kernel->needs_context);
  Tester tester(*kernel, rank, n);
  int failed_cases = 0, total_cases = 0;
  std::map<std::string, int64_t> fallback_reasons;
  bool never_ran = false;
  for (Variant& v : variants) {
    topotune::kernels::FallbackLog log;
    log.sink = [](const std::string&) {};  // Counted below, printed once.
    long long calls = 0;
    for (const Case& c : cases) {
      // A stale plan only makes sense where plans are built.
      if (c.stale_plan && v.holder->context().private_comm == MPI_COMM_NULL) continue;
      ++total_cases;
      ++calls;
      if (!tester.Run(c, v.name, v.holder.get(), &log)) ++failed_cases;
    }
    int64_t fallbacks = 0;
    for (const auto& [reason, count] : log.counts()) {
      fallbacks += count;
      fallback_reasons[v.name + ": " + reason] += count;
    }
    // A kernel that never ran here would pass every case vacuously.
    long long ran = calls - fallbacks, max_ran = 0;
    MPI_Allreduce(&ran, &max_ran, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (v.must_run && max_ran == 0) {
      never_ran = true;
      if (rank == 0)
        std::fprintf(stderr, "FAILURE: %s %s np=%d context=%s: the kernel fell back on every call\n", argv[1], argv[2],
                     n, v.name.c_str());
    }
  }
  if (rank == 0) {
    for (const auto& [reason, count] : fallback_reasons)
      std::printf("rank 0 fell back %lld times: %s\n", static_cast<long long>(count), reason.c_str());
    std::printf("%s %s np=%d: %d of %d cases passed over %zu contexts\n", argv[1], argv[2], n,
                total_cases - failed_cases, total_cases, variants.size());
  }
  for (TestType& t : types)
    if (t.name == "vec") MPI_Type_free(&t.type);
  variants.clear();  // Frees the private communicators before MPI_Finalize.
  return failed_cases > 0 || never_ran ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = Main(argc, argv);
  MPI_Finalize();
  return rc;
}
