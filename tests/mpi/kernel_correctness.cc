// kernel_correctness: the verifier of the collective kernels. It runs one
// registered kernel through RunAlltoall, RunAlltoallv or RunAllgather on
// every rank and checks every received byte against an independent model of
// the collective; tests/mpi runs it for every kernel of the registry on 1 to
// 8 ranks (mpi_<collective>_<kernel>_np<N>).
//
//   mpirun -np N kernel_correctness COLLECTIVE NAME TOPOLOGY_FILE
//
// Cases (each with its own data, so that stale buffers cannot pass):
//   * datatypes MPI_BYTE, MPI_INT, MPI_DOUBLE and "vec", a vector of three
//     5-byte blocks with stride 7, resized to extent 23 (15 data bytes, gaps
//     inside and after each element); counts from 0 up, including 1 byte and
//     sizes that are not multiples of 8;
//   * send and receive types that differ but match in signature (vec vs
//     15 x MPI_BYTE), the same on every rank or differing between ranks (even
//     ranks send vec and receive MPI_BYTE, odd ranks the reverse: a kernel
//     must not assume that every rank uses the same datatypes);
//   * MPI_IN_PLACE;
//   * alltoallv: per-pair counts with zeros, asymmetric (symmetric in place),
//     uniform (every pair the same count, the diagonal included) and skewed
//     (rank 0 sends to every rank and every rank to rank N-1, the rest one
//     unit or none), with displacements in reverse peer order and a gap after
//     each block.
// The whole receive buffer is compared with the expected image: data at the
// receive type's data bytes, the poison value in its gaps, between blocks
// and in a guard zone past the end. The send buffer must be unchanged. On
// every call every rank must take the same decision, to run the kernel or to
// fall back.
//
// Contexts: kernels that need one (KernelInfo::needs_context) run with a
// context built from TOPOLOGY_FILE (two switches, h0..h3 and h4..h7), ranks
// placed alternately on the two switches so that consecutive ranks talk
// across the inter-switch link ("spread": rank i on h((i%2)*4 + i/2)); from
// 5 ranks also with two ranks on some hosts ("packed": rank i on
// h((i%2)*4 + (i/2)%2)); from 4 ranks with two to four ranks on each of
// two hosts, interleaved ("dense": rank i on h((i%2)*4 + i/8), so 2+2 on 4
// ranks, 3+2 on 5, 4+4 on 8); on a sample of the cases from 2 ranks with
// all of them on one host ("one host"), and from 4 with every fourth rank on
// h4 and the rest on h0 ("lopsided hosts": 3+1 to 6+2), so that 1 to 8 ranks
// per host are covered. Alltoall and allgather kernels also run (a
// sample of the cases) on layouts built in code: three switches in a chain,
// a hub switch without hosts under three leaves, lopsided switches, a lone
// rank on the middle switch of a chain, and two-slot hosts whose ranks are
// not consecutive. They must fall back on every call that moves data (from 2
// ranks) with no context, with a context built for N+1 ranks, and, by what
// they read: tree_scheduled with another rank's program or one for N-1
// ranks; the ring kernels with a short ring order or one with a repeat, and
// link_scheduled without the switch of every rank. Level 3 alltoallv kernels
// get the plan of each call's pattern, and a stale plan (for every pair one
// element more, or for one pair only, which only two ranks can see), on
// which they must fall back. Other kernels run with an empty context and
// with only a private communicator. Every kernel also runs a sample on the
// halves of a split communicator (with a context built for the half).
//
// Once per run: on an intercommunicator every kernel but native declines and
// the Run function still completes the collective; calls of the kernel
// interleaved with those of every kernel of the collective that needs no
// context, back to back with no check in between, all deliver (no message of
// one call is matched by another); alltoall kernels return MPI_ERR_TRUNCATE
// for mismatched signatures and MPI_ERR_COUNT for negative counts, and the
// alltoall helpers every alltoall kernel builds on take their rarely used
// paths (datatypes packed in chunks, messages split into pieces) correctly.
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
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/driver/context.h"
#include "bench_kernels/kernel.h"
#include "tuner/allgather_orders.h"
#include "tuner/kernel_catalog.h"
#include "tuner/rank_program.h"
#include "tuner/test_trees.h"
#include "tuner/topology_io.h"
#include "tuner/tree_scheduled.h"

namespace {

using topotune::bench::ContextHolder;
using topotune::kernels::AllgatherArgs;
using topotune::kernels::AlltoallArgs;
using topotune::kernels::AlltoallvArgs;
using topotune::kernels::Collective;
using topotune::kernels::FallbackLog;
using topotune::kernels::KernelContext;
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

// The alltoallv count pattern of a case.
enum class Pattern {
  kVaried,   // Per pair, with zeros, asymmetric.
  kUniform,  // Every pair the same count, the diagonal included.
  kSkewed,   // Rank 0 sends to all and all send to rank N-1; the rest one unit or none.
};

// alltoallv Level 3: which plan the context carries.
enum class Stale {
  kNone,       // The plan of the call's pattern.
  kEveryPair,  // The plan of a pattern with one element more for every pair.
  kOnePair,    // One element more from rank N-1 to rank 0 only: only those two can see it.
};

struct Case {
  std::string what;
  const TestType* send = nullptr;
  const TestType* recv = nullptr;
  // Units per block (alltoallv: the count parameter of PairCount). A unit is
  // max(send type size, recv type size) bytes: one element of the larger type.
  int64_t count = 0;
  bool in_place = false;
  bool swap_on_odd_ranks = false;  // Odd ranks send `recv` and receive `send`.
  Pattern pattern = Pattern::kVaried;
  Stale stale = Stale::kNone;
  bool sample = false;  // Also run on the layouts and split communicators.
};

// The buffers and arguments of one call.
struct Call {
  const Case* c = nullptr;
  int case_id = 0;
  Buffer recv, send;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  AlltoallArgs alltoall{};
  AlltoallvArgs alltoallv{};
  AllgatherArgs allgather{};
};

// What a context promises about the kernel's decisions.
enum class Expect {
  kRuns,      // Runs on at least one call (with 2 ranks or more).
  kFallsBack  // Falls back on every call that moves data (with 2 ranks or more).
};

// A context to run the cases under: what the holder owns, changed by
// `adjust` (for broken contexts).
struct Variant {
  std::string name;
  std::unique_ptr<ContextHolder> holder;
  Expect expect = Expect::kRuns;
  bool sample_only = false;
  std::function<void(KernelContext*)> adjust;
};

// Runs and checks calls of one kernel on one communicator.
class Tester {
 public:
  Tester(const KernelInfo& kernel, MPI_Comm comm, std::string comm_name)
      : k_(kernel), comm_(comm), comm_name_(std::move(comm_name)) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &n_);
  }
  int size() const { return n_; }
  int rank() const { return rank_; }
  MPI_Comm comm() const { return comm_; }

  // The types this rank sends and receives in case `c`.
  const TestType& SendType(const Case& c) const { return c.swap_on_odd_ranks && rank_ % 2 ? *c.recv : *c.send; }
  const TestType& RecvType(const Case& c) const { return c.swap_on_odd_ranks && rank_ % 2 ? *c.send : *c.recv; }

  // The buffers of case `c` with fresh data, and the call's arguments.
  std::unique_ptr<Call> Prepare(const Case& c) {
    auto call = std::make_unique<Call>();
    call->c = &c;
    call->case_id = ++case_id_;
    switch (k_.collective) {
      case Collective::kAlltoall:
        PrepareAlltoall(call.get());
        break;
      case Collective::kAlltoallv:
        PrepareAlltoallv(call.get());
        break;
      case Collective::kAllgather:
        PrepareAllgather(call.get());
        break;
    }
    return call;
  }

  // Runs `kernel` (this tester's or, in back-to-back calls, another of the
  // collective) on the prepared call. Returns an MPI error code.
  static int Execute(const KernelInfo& kernel, Call* call, const KernelContext& ctx, FallbackLog* log) {
    switch (kernel.collective) {
      case Collective::kAlltoall:
        return topotune::kernels::RunAlltoall(kernel, call->alltoall, ctx, log);
      case Collective::kAlltoallv:
        return topotune::kernels::RunAlltoallv(kernel, call->alltoallv, ctx, log);
      case Collective::kAllgather:
        return topotune::kernels::RunAllgather(kernel, call->allgather, ctx, log);
    }
    return MPI_ERR_INTERN;
  }

  // The first difference of the call's buffers from their expected images.
  static std::string Check(const Call& call) {
    std::string e = call.recv.Compare();
    if (!e.empty()) return "receive buffer " + e;
    if (!call.c->in_place) {
      e = call.send.Compare();
      if (!e.empty()) return "send buffer modified: " + e;
    }
    return {};
  }

  // Runs one case under variant `v`; false on a mismatch (on any rank).
  // *ran: whether this rank ran the kernel rather than falling back.
  bool Run(const Case& c, const Variant& v, FallbackLog* log, bool* ran) {
    std::unique_ptr<Call> call = Prepare(c);
    std::string error;
    int rc = MPI_SUCCESS;
    ContextHolder* holder = v.holder.get();
    const bool plans =
        k_.collective == Collective::kAlltoallv && k_.needs_context && holder->context().private_comm != MPI_COMM_NULL;
    if (plans) {
      rc = holder->SetAlltoallvPlanFor(c.stale == Stale::kNone ? call->alltoallv : StaleShape(*call), k_.name);
      if (rc != MPI_SUCCESS) error = "BuildAlltoallvPlan failed";
    }
    const int64_t fallbacks_before = log->total();
    if (error.empty()) {
      KernelContext ctx = holder->context();
      if (v.adjust) v.adjust(&ctx);
      rc = Execute(k_, call.get(), ctx, log);
      if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        error = "MPI error: " + std::string(text, static_cast<size_t>(len));
      } else {
        error = Check(*call);
      }
    }
    if (plans) holder->ClearAlltoallvPlan();
    const int fell = log->total() > fallbacks_before ? 1 : 0;
    *ran = fell == 0 && error.empty();
    int any_fell = 0, all_fell = 0;
    MPI_Allreduce(&fell, &any_fell, 1, MPI_INT, MPI_MAX, comm_);
    MPI_Allreduce(&fell, &all_fell, 1, MPI_INT, MPI_MIN, comm_);
    if (error.empty() && any_fell != all_fell)
      error = std::string("the ranks disagree on falling back (this rank ") + (fell ? "fell back)" : "ran the kernel)");
    const bool moves_data = c.count > 0;
    const bool must_fall_back =
        n_ >= 2 && ((v.expect == Expect::kFallsBack && moves_data) || (plans && c.stale != Stale::kNone));
    if (error.empty() && must_fall_back && !fell)
      error = "the kernel ran where it must fall back" + std::string(plans ? " (stale plan)" : "");
    return Agree(error, v.name, c.what);
  }

  // Collective over the communicator: true when `error` is empty on every
  // rank; prints the first reports.
  bool Agree(const std::string& error, const std::string& context_name, const std::string& what) {
    int ok = error.empty() ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm_);
    if (!ok && reports_++ < kMaxReports) {
      std::fprintf(stderr, "MISMATCH rank %d of %s: %s %s np=%d context=%s case '%s': %s\n", rank_, comm_name_.c_str(),
                   std::string(topotune::kernels::CollectiveName(k_.collective)).c_str(), std::string(k_.name).c_str(),
                   n_, context_name.c_str(), what.c_str(), error.c_str());
    }
    return all_ok == 1;
  }

 private:
  void PrepareAlltoall(Call* call) {
    const Case& c = *call->c;
    const TestType& rt = RecvType(c);
    const TestType& st = SendType(c);
    const int64_t rcount = RecvElems(c, c.count), scount = SendElems(c, c.count);
    const int64_t rblock = rcount * rt.extent, sblock = scount * st.extent;
    call->send.peer_role = "to";
    ExpectBlockFromEach(&call->recv, rt, rcount, rblock, rank_, call->case_id);
    if (c.in_place) {
      for (int d = 0; d < n_; ++d) Buffer::Put(&call->recv.bytes, d * rblock, rt, rcount, rank_, d, call->case_id);
    } else {
      call->send.Alloc(sblock * n_);
      for (int d = 0; d < n_; ++d) {
        Buffer::Put(&call->send.bytes, d * sblock, st, scount, rank_, d, call->case_id);
        call->send.regions.push_back({d * sblock, scount, d, &st});
      }
      call->send.expected = call->send.bytes;
    }
    call->alltoall = AlltoallArgs{c.in_place ? MPI_IN_PLACE : call->send.bytes.data(),
                                  static_cast<int>(scount),
                                  st.type,
                                  call->recv.bytes.data(),
                                  static_cast<int>(rcount),
                                  rt.type,
                                  comm_};
  }

  // A receive buffer of one block of `rblock` bytes per rank, block s
  // expected to hold rank s's data for `to` (-1: s's own block).
  void ExpectBlockFromEach(Buffer* recv, const TestType& rt, int64_t rcount, int64_t rblock, int to,
                           int case_id) const {
    recv->Alloc(rblock * n_);
    for (int s = 0; s < n_; ++s) {
      Buffer::Put(&recv->expected, s * rblock, rt, rcount, s, to, case_id);
      recv->regions.push_back({s * rblock, rcount, s, &rt});
    }
  }

  static int64_t Unit(const Case& c) { return std::max(c.send->size(), c.recv->size()); }
  int64_t RecvElems(const Case& c, int64_t units) const { return units * Unit(c) / RecvType(c).size(); }
  int64_t SendElems(const Case& c, int64_t units) const { return units * Unit(c) / SendType(c).size(); }

  // Units from src to dst for count parameter m, by the case's pattern.
  int64_t PairCount(const Case& c, int src, int dst) const {
    const int64_t m = c.count;
    if (m == 0) return 0;
    if (c.in_place && src > dst) std::swap(src, dst);  // MPI_IN_PLACE needs a symmetric pattern.
    switch (c.pattern) {
      case Pattern::kVaried:
        return (static_cast<int64_t>(src) * 7 + static_cast<int64_t>(dst) * 3 + m) % (m + 1);
      case Pattern::kUniform:
        return m;
      case Pattern::kSkewed:
        if (src == 0 || dst == n_ - 1) return m;
        return (src + 2 * dst) % 3 == 0 ? 0 : 1;
    }
    return 0;
  }

  void PrepareAlltoallv(Call* call) {
    const Case& c = *call->c;
    const TestType& rt = RecvType(c);
    const TestType& st = SendType(c);
    call->scounts.assign(n_, 0);
    call->sdispls.assign(n_, 0);
    call->rcounts.assign(n_, 0);
    call->rdispls.assign(n_, 0);
    // Reverse peer order with a one-element gap after each block.
    int64_t spos = 0, rpos = 0;
    for (int p = n_ - 1; p >= 0; --p) {
      const int64_t rc_elems = RecvElems(c, PairCount(c, p, rank_));
      const int64_t sc_elems = SendElems(c, PairCount(c, rank_, p));
      call->rcounts[p] = static_cast<int>(rc_elems);
      call->rdispls[p] = static_cast<int>(rpos);
      rpos += rc_elems + 1;
      call->scounts[p] = static_cast<int>(sc_elems);
      call->sdispls[p] = static_cast<int>(spos);
      spos += sc_elems + 1;
    }
    Buffer& recv = call->recv;
    Buffer& send = call->send;
    send.peer_role = "to";
    recv.Alloc(rpos * rt.extent);
    for (int s = 0; s < n_; ++s) {
      Buffer::Put(&recv.expected, call->rdispls[s] * rt.extent, rt, call->rcounts[s], s, rank_, call->case_id);
      recv.regions.push_back({call->rdispls[s] * rt.extent, call->rcounts[s], s, &rt});
    }
    if (c.in_place) {
      for (int d = 0; d < n_; ++d)
        Buffer::Put(&recv.bytes, call->rdispls[d] * rt.extent, rt, call->rcounts[d], rank_, d, call->case_id);
    } else {
      send.Alloc(spos * st.extent);
      for (int d = 0; d < n_; ++d) {
        Buffer::Put(&send.bytes, call->sdispls[d] * st.extent, st, call->scounts[d], rank_, d, call->case_id);
        send.regions.push_back({call->sdispls[d] * st.extent, call->scounts[d], d, &st});
      }
      send.expected = send.bytes;
    }
    call->alltoallv = AlltoallvArgs{c.in_place ? MPI_IN_PLACE : send.bytes.data(),
                                    call->scounts.data(),
                                    call->sdispls.data(),
                                    st.type,
                                    recv.bytes.data(),
                                    call->rcounts.data(),
                                    call->rdispls.data(),
                                    rt.type,
                                    comm_};
  }

  // The call shape a stale plan is built for (the send side decides the
  // pattern). The counts live until the next StaleShape.
  AlltoallvArgs StaleShape(const Call& call) {
    stale_counts_ = call.scounts;
    if (call.c->stale == Stale::kEveryPair) {
      for (int& x : stale_counts_) ++x;
    } else if (rank_ == n_ - 1) {
      ++stale_counts_[0];
    }
    AlltoallvArgs other = call.alltoallv;
    other.sendbuf = call.send.bytes.data();
    other.sendcounts = stale_counts_.data();
    return other;
  }

  void PrepareAllgather(Call* call) {
    const Case& c = *call->c;
    const TestType& rt = RecvType(c);
    const TestType& st = SendType(c);
    const int64_t rcount = RecvElems(c, c.count), scount = SendElems(c, c.count);
    const int64_t rblock = rcount * rt.extent;
    call->send.peer_role = "of";
    ExpectBlockFromEach(&call->recv, rt, rcount, rblock, -1, call->case_id);
    if (c.in_place) {
      Buffer::Put(&call->recv.bytes, rank_ * rblock, rt, rcount, rank_, -1, call->case_id);
    } else {
      call->send.Alloc(scount * st.extent);
      Buffer::Put(&call->send.bytes, 0, st, scount, rank_, -1, call->case_id);
      call->send.regions.push_back({0, scount, rank_, &st});
      call->send.expected = call->send.bytes;
    }
    call->allgather = AllgatherArgs{c.in_place ? MPI_IN_PLACE : call->send.bytes.data(),
                                    static_cast<int>(scount),
                                    st.type,
                                    call->recv.bytes.data(),
                                    static_cast<int>(rcount),
                                    rt.type,
                                    comm_};
  }

  const KernelInfo& k_;
  MPI_Comm comm_;
  std::string comm_name_;
  int rank_ = 0;
  int n_ = 0;
  int case_id_ = 0;
  int reports_ = 0;
  std::vector<int> stale_counts_;
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
        Case c{what, &t, &t, m, in_place};
        c.sample = (t.name == "MPI_BYTE" && m == 13 && !in_place) || (t.name == "MPI_INT" && m == 250 && in_place) ||
                   (t.name == "vec" && m == 3 && !in_place);
        cases.push_back(c);
      }
    }
  }
  // Different types with the same signature: vec is 15 MPI_BYTEs.
  const TestType* byte = &types[0];
  const TestType* vec = &types[3];
  for (int64_t m : {1, 4, 33}) {
    const std::string vc = std::to_string(m), bc = std::to_string(m * 15);
    cases.push_back({"send vec count " + vc + ", receive MPI_BYTE count " + bc, vec, byte, m, false});
    cases.push_back({"send MPI_BYTE count " + bc + ", receive vec count " + vc, byte, vec, m, false});
  }
  // The same, differing between ranks.
  for (int64_t m : {1, 4, 33}) {
    Case c{"even ranks vec to MPI_BYTE, odd ranks MPI_BYTE to vec, count " + std::to_string(m), vec, byte, m, false};
    c.swap_on_odd_ranks = true;
    c.sample = m == 4;
    cases.push_back(c);
  }
  if (collective == Collective::kAlltoallv) {
    for (int64_t m : {1, 1000, 40009}) {
      for (bool in_place : {false, true}) {
        Case c{"uniform MPI_BYTE count " + std::to_string(m) + (in_place ? " MPI_IN_PLACE" : ""), byte, byte, m,
               in_place};
        c.pattern = Pattern::kUniform;
        cases.push_back(c);
      }
    }
    for (int64_t m : {3, 1025}) {
      for (bool in_place : {false, true}) {
        Case c{"skewed MPI_INT count " + std::to_string(m) + (in_place ? " MPI_IN_PLACE" : ""), &types[1], &types[1], m,
               in_place};
        c.pattern = Pattern::kSkewed;
        c.sample = m == 1025 && !in_place;
        cases.push_back(c);
      }
    }
    Case mixed{"skewed, even ranks vec to MPI_BYTE, odd ranks MPI_BYTE to vec, count 5", vec, byte, 5, false};
    mixed.swap_on_odd_ranks = true;
    mixed.pattern = Pattern::kSkewed;
    cases.push_back(mixed);
    if (level3) {
      Case every{"MPI_INT count 250 with a stale Level 3 plan (every pair)", &types[1], &types[1], 250, false};
      every.stale = Stale::kEveryPair;
      cases.push_back(every);
      Case one{"MPI_INT count 250 with a stale Level 3 plan (one pair)", &types[1], &types[1], 250, false};
      one.stale = Stale::kOnePair;
      cases.push_back(one);
    }
  }
  return cases;
}

// A layout of n ranks on hosts under switches, built in code.
struct Layout {
  std::string name;
  topotune::RankTree tree;
};

topotune::RankTree BuildTree(const std::vector<std::string>& switches,
                             const std::vector<topotune::testing::LinkSpec>& switch_links,
                             const std::vector<std::pair<topotune::testing::HostSpec, std::string>>& hosts,
                             const std::vector<std::string>& rank_hosts) {
  std::vector<topotune::testing::HostSpec> host_specs;
  std::vector<topotune::testing::LinkSpec> links = switch_links;
  for (const auto& [h, sw] : hosts) {
    host_specs.push_back(h);
    links.push_back({h.name, sw, 1e9});
  }
  topotune::Topology topo = topotune::testing::BuildTopology(switches, host_specs, links);
  auto placement = topotune::PlacementFromRankHosts(topo, rank_hosts);
  if (!placement.ok()) throw std::invalid_argument(placement.status().ToString());
  auto tree = topotune::RankTree::Build(topo, *placement);
  if (!tree.ok()) throw std::invalid_argument(tree.status().ToString());
  return std::move(tree).value();
}

// One single-slot host per rank, rank r on switch switch_of(r); a switch
// without ranks gets an idle host (a leaf switch without hosts is no valid
// topology).
Layout OneHostPerRank(std::string name, int n, const std::vector<std::string>& switches,
                      const std::vector<topotune::testing::LinkSpec>& switch_links,
                      const std::function<int(int)>& switch_of) {
  std::vector<std::pair<topotune::testing::HostSpec, std::string>> hosts;
  std::vector<std::string> rank_hosts;
  std::vector<bool> used(switches.size(), false);
  for (int r = 0; r < n; ++r) {
    std::string h = "h" + std::to_string(r);
    hosts.push_back({{h, 1}, switches[switch_of(r)]});
    rank_hosts.push_back(h);
    used[switch_of(r)] = true;
  }
  for (size_t s = 0; s < switches.size(); ++s)
    if (!used[s]) hosts.push_back({{"idle" + std::to_string(s), 1}, switches[s]});
  return {std::move(name), BuildTree(switches, switch_links, hosts, rank_hosts)};
}

// Layouts for n ranks (n >= 1); the same on every rank.
std::vector<Layout> TestLayouts(int n) {
  std::vector<Layout> out;
  out.push_back(
      OneHostPerRank("2 switches, ranks interleaved", n, {"s0", "s1"}, {{"s0", "s1"}}, [](int r) { return r % 2; }));
  out.push_back(OneHostPerRank("3 switches in a chain, ranks round-robin", n, {"s0", "s1", "s2"},
                               {{"s0", "s1"}, {"s1", "s2"}}, [](int r) { return r % 3; }));
  out.push_back(OneHostPerRank("hub without hosts, 3 leaf switches", n, {"hub", "a", "b", "c"},
                               {{"hub", "a"}, {"hub", "b"}, {"hub", "c"}}, [](int r) { return 1 + (r * 2) % 3; }));
  // Unbalanced groups. (A switch with one used host and one uplink is
  // contracted away by RankTree, so a lone rank keeps its own switch only in
  // the middle of a chain.)
  out.push_back(OneHostPerRank("lopsided: ranks 1 and N-1 on the second switch", n, {"s0", "s1"}, {{"s0", "s1"}},
                               [n](int r) { return r == 1 || r == n - 1 ? 1 : 0; }));
  out.push_back(OneHostPerRank("chain with one rank on the middle switch", n, {"s0", "s1", "s2"},
                               {{"s0", "s1"}, {"s1", "s2"}},
                               [n](int r) { return r < n / 2 ? 0 : (r == n / 2 ? 1 : 2); }));
  // Two-slot hosts, host j on switch j % 2, rank r on host r % H: a host's
  // two ranks are H apart.
  const int num_hosts = (n + 1) / 2;
  std::vector<std::pair<topotune::testing::HostSpec, std::string>> hosts;
  for (int j = 0; j < std::max(num_hosts, 2); ++j) hosts.push_back({{"m" + std::to_string(j), 2}, j % 2 ? "s1" : "s0"});
  std::vector<std::string> rank_hosts;
  for (int r = 0; r < n; ++r) rank_hosts.push_back("m" + std::to_string(r % num_hosts));
  out.push_back({"2 switches, two-slot hosts, ranks of a host not consecutive",
                 BuildTree({"s0", "s1"}, {{"s0", "s1"}}, hosts, rank_hosts)});
  return out;
}

// The tree_scheduled program of `rank` for `ranks` ranks on one host.
std::unique_ptr<topotune::RankProgram> ProgramForOneHost(int ranks, int rank) {
  topotune::Topology topo = topotune::testing::BuildTopology({}, {{"h0", ranks}}, {});
  topotune::RankTree tree = topotune::testing::BuildRankTree(topo);
  auto schedule = topotune::TreeScheduled(tree);
  if (!schedule.ok()) return nullptr;
  auto program = topotune::CompileRankProgram(*schedule, rank);
  if (!program.ok()) return nullptr;
  return std::make_unique<topotune::RankProgram>(std::move(program).value());
}

// On an intercommunicator of comm's two halves: every kernel but native
// declines, and the Run function completes the collective with the right
// data. Returns this rank's problem, or "".
std::string CheckIntercomm(const KernelInfo& k, const KernelContext& ctx, MPI_Comm comm) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  const int half = n / 2;
  const int color = me < half ? 0 : 1;
  MPI_Comm local = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  MPI_Comm_split(comm, color, me, &local);
  MPI_Intercomm_create(local, 0, comm, color == 0 ? half : 0, 77, &inter);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  std::vector<int> peers(remote);  // The remote group's ranks in comm.
  for (int j = 0; j < remote; ++j) peers[j] = color == 0 ? half + j : j;
  const int bytes = 5;
  // The block from a to b (b = -1: a's allgather block).
  auto value = [](int a, int b, int i) { return Byte(a, b, i, 4242); };
  std::vector<unsigned char> send(static_cast<size_t>(remote) * bytes), recv(send.size(), 0);
  std::vector<int> counts(remote, bytes), displs(remote);
  for (int j = 0; j < remote; ++j) {
    displs[j] = j * bytes;
    for (int i = 0; i < bytes; ++i)
      send[j * bytes + i] = value(me, k.collective == Collective::kAllgather ? -1 : peers[j], i);
  }
  FallbackLog log;
  log.sink = [](const std::string&) {};
  topotune::kernels::KernelStatus st = topotune::kernels::KernelStatus::Done();
  int rc = MPI_SUCCESS;
  switch (k.collective) {
    case Collective::kAlltoall: {
      AlltoallArgs a{send.data(), bytes, MPI_BYTE, recv.data(), bytes, MPI_BYTE, inter};
      if (k.name != "native") st = k.alltoall(a, ctx);
      if (st.done() || st.fallback()) rc = topotune::kernels::RunAlltoall(k, a, ctx, &log);
      break;
    }
    case Collective::kAlltoallv: {
      AlltoallvArgs a{send.data(),   counts.data(), displs.data(), MPI_BYTE, recv.data(),
                      counts.data(), displs.data(), MPI_BYTE,      inter};
      if (k.name != "native") st = k.alltoallv(a, ctx);
      if (st.done() || st.fallback()) rc = topotune::kernels::RunAlltoallv(k, a, ctx, &log);
      break;
    }
    case Collective::kAllgather: {
      AllgatherArgs a{send.data(), bytes, MPI_BYTE, recv.data(), bytes, MPI_BYTE, inter};
      if (k.name != "native") st = k.allgather(a, ctx);
      if (st.done() || st.fallback()) rc = topotune::kernels::RunAllgather(k, a, ctx, &log);
      break;
    }
  }
  std::string error;
  if (k.name != "native" && !st.fallback()) {
    error = st.done() ? "the kernel ran on an intercommunicator" : "the kernel returned an MPI error";
  } else if (rc != MPI_SUCCESS) {
    error = "the Run function returned MPI error " + std::to_string(rc);
  } else {
    for (int j = 0; j < remote && error.empty(); ++j)
      for (int i = 0; i < bytes && error.empty(); ++i)
        if (recv[j * bytes + i] != value(peers[j], k.collective == Collective::kAllgather ? -1 : me, i))
          error = "wrong byte " + std::to_string(i) + " from remote rank " + std::to_string(j);
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  return error;
}

// Alltoall kernels must return the MPI error of a bad call rather than run
// or fall back (the MPI library would then fail the job).
std::string CheckAlltoallErrors(const KernelInfo& k, const KernelContext& ctx, MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<int> send(4 * n), recv(4 * n);
  // Signatures that do not match: 2 ints sent, 3 received.
  AlltoallArgs mismatch{send.data(), 2, MPI_INT, recv.data(), 3, MPI_INT, comm};
  topotune::kernels::KernelStatus st = k.alltoall(mismatch, ctx);
  if (st.done() || st.fallback() || st.mpi_error() != MPI_ERR_TRUNCATE)
    return "mismatched signatures must return MPI_ERR_TRUNCATE";
  AlltoallArgs negative{send.data(), -1, MPI_INT, recv.data(), -1, MPI_INT, comm};
  st = k.alltoall(negative, ctx);
  if (st.done() || st.fallback() || st.mpi_error() != MPI_ERR_COUNT)
    return "a negative count must return MPI_ERR_COUNT";
  return {};
}

// The alltoall helpers' rarely taken paths, which every alltoall kernel
// builds on: derived datatypes packed and unpacked in chunks (buffers above
// 2^31 elements), and messages split into pieces (above 1 GiB), exercised
// with small limits. Returns this rank's problem, or "".
std::string CheckAlltoallHelpers(Tester* t, const TestType& vec, const TestType& byte) {
  using topotune::kernels::alltoall_detail::AlltoallBuffers;
  const Case cases[] = {{"vec count 7", &vec, &vec, 7, false},
                        {"vec count 7 MPI_IN_PLACE", &vec, &vec, 7, true},
                        {"send MPI_BYTE, receive vec, count 7", &byte, &vec, 7, false}};
  for (const Case& c : cases) {
    std::unique_ptr<Call> call = t->Prepare(c);
    AlltoallBuffers b;
    if (!b.Init(call->alltoall, KernelContext{}, /*view_limit=*/3).done()) return c.what + ": Init declined";
    for (int d = 0; d < t->size(); ++d)
      for (int64_t i = 0; i < b.block_bytes(); ++i)
        if (static_cast<unsigned char>(b.send_block(d)[i]) != Byte(t->rank(), d, i, call->case_id))
          return c.what + ": packed in chunks, send block " + std::to_string(d) + " byte " + std::to_string(i);
    for (int s = 0; s < t->size(); ++s)
      for (int64_t i = 0; i < b.block_bytes(); ++i)
        b.recv_block(s)[i] = static_cast<char>(Byte(s, t->rank(), i, call->case_id));
    if (!b.Finish().done()) return c.what + ": Finish failed";
    if (std::string e = Tester::Check(*call); !e.empty()) return c.what + ": unpacked in chunks: " + e;
  }
  // A 1000-byte message in 7-byte pieces around the ring, twice, with an
  // empty one between: the pieces keep their order.
  const int n = t->size(), me = t->rank();
  const int to = (me + 1) % n, from = (me - 1 + n) % n;
  std::vector<char> out(1000), in(2000, 0);
  for (int i = 0; i < 1000; ++i) out[i] = static_cast<char>(Byte(me, to, i, 77));
  std::vector<MPI_Request> reqs;
  using topotune::kernels::kDataTag;
  using topotune::kernels::alltoall_detail::PostRecv;
  using topotune::kernels::alltoall_detail::PostSend;
  bool ok = PostRecv(in.data(), 1000, from, kDataTag, t->comm(), &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostRecv(in.data() + 1000, 0, from, kDataTag, t->comm(), &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostRecv(in.data() + 1000, 1000, from, kDataTag, t->comm(), &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostSend(out.data(), 1000, to, kDataTag, t->comm(), &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostSend(out.data(), 0, to, kDataTag, t->comm(), &reqs, 7) == MPI_SUCCESS;
  ok = ok && PostSend(out.data(), 1000, to, kDataTag, t->comm(), &reqs, 7) == MPI_SUCCESS;
  ok = ok && topotune::kernels::alltoall_detail::WaitAll(&reqs) == MPI_SUCCESS;
  if (!ok) return "messages in 7-byte pieces: an MPI call failed";
  for (int i = 0; i < 2000; ++i)
    if (in[i] != static_cast<char>(Byte(from, me, i % 1000, 77)))
      return "messages in 7-byte pieces: byte " + std::to_string(i) + " is wrong";
  return {};
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
  const std::string collective_name(topotune::kernels::CollectiveName(collective));
  // The context pieces built from a topology: alltoall and allgather ones
  // (alltoallv Level 3 plans depend on each call's sizes).
  const bool topology_context = kernel->needs_context && collective != Collective::kAlltoallv;
  // What the kernel reads from its context (kernel.h): a tree_scheduled
  // program, a ring order (and the switch of each rank).
  const bool reads_tree_program =
      kernel->needs_context && collective == Collective::kAlltoall && !topotune::kernels::RunsHostProgram(*kernel);
  const bool reads_ring = topotune::NeedsRingOrder(collective_name, kernel->name);

  Tester world(*kernel, MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm half_comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half_comm);
  Tester half(*kernel, half_comm, "a half of MPI_COMM_WORLD (split by rank parity)");

  // The contexts to run under, on MPI_COMM_WORLD.
  std::vector<Variant> variants;
  auto holder_for = [](MPI_Comm comm) {
    auto holder = std::make_unique<ContextHolder>();
    holder->DupComm(comm);
    return holder;
  };
  auto add = [&](std::string name, std::unique_ptr<ContextHolder> holder, Expect expect, bool sample_only,
                 std::function<void(KernelContext*)> adjust = {}) {
    variants.push_back({std::move(name), std::move(holder), expect, sample_only, std::move(adjust)});
  };
  auto placed = [&](const std::string& name, int (*host_of)(int), bool sample_only = false) -> int {
    std::vector<std::string> hosts;
    for (int i = 0; i < n; ++i) hosts.push_back("h" + std::to_string(host_of(i)));
    auto job = topotune::bench::PlaceRanks(*topo, {{}, hosts}, n);
    if (!job.ok()) return Usage(job.status().message().c_str());
    auto holder = holder_for(MPI_COMM_WORLD);
    auto st = holder->AddTopology(job->tree, collective, rank);
    if (!st.ok()) return Usage(st.message().c_str());
    add(name, std::move(holder), Expect::kRuns, sample_only);
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
    // Every rank on one host (nothing crosses the network), and every fourth
    // rank on h4, the rest on h0 (3+1 to 6+2): with the layouts above, 1 to
    // 8 ranks per host.
    if (n >= 2) {
      if (int rc = placed(
              "one host", [](int) { return 0; }, true))
        return rc;
    }
    if (n >= 4) {
      if (int rc = placed(
              "lopsided hosts", [](int i) { return i % 4 == 3 ? 4 : 0; }, true))
        return rc;
    }
    if (topology_context) {
      for (Layout& l : TestLayouts(n)) {
        auto holder = holder_for(MPI_COMM_WORLD);
        if (auto st = holder->AddTopology(l.tree, collective, rank); !st.ok())
          return Usage((l.name + ": " + st.message()).c_str());
        add(l.name, std::move(holder), Expect::kRuns, true);
      }
      // A context for one rank more than the communicator has.
      auto holder = holder_for(MPI_COMM_WORLD);
      if (auto st = holder->AddTopology(TestLayouts(n + 1)[0].tree, collective, rank); !st.ok())
        return Usage(("context for N+1 ranks: " + st.message()).c_str());
      add("built for N+1 ranks (must fall back)", std::move(holder), Expect::kFallsBack, true);
    }
    if (reads_tree_program) {
      if (n >= 2) {
        auto holder = holder_for(MPI_COMM_WORLD);
        if (auto p = ProgramForOneHost(n, (rank + 1) % n)) holder->SetProgram(std::move(*p));
        add("another rank's program (must fall back)", std::move(holder), Expect::kFallsBack, true);
      }
      if (n >= 3) {
        // Peers all inside the communicator, but a schedule of ranks 0..N-2.
        auto holder = holder_for(MPI_COMM_WORLD);
        if (auto p = ProgramForOneHost(n - 1, std::min(rank, n - 2))) {
          p->rank = rank;
          holder->SetProgram(std::move(*p));
        }
        add("program for N-1 ranks (must fall back)", std::move(holder), Expect::kFallsBack, true);
      }
    }
    if (reads_ring) {
      const Layout layout = std::move(TestLayouts(n)[0]);
      const std::vector<int> order = topotune::SwitchOrderedRing(layout.tree);
      const std::vector<int> switches = topotune::SwitchOfRank(layout.tree, order);
      auto ring = [&](std::string name, std::vector<int> o, std::vector<int> s, bool no_switches, Expect expect) {
        auto holder = holder_for(MPI_COMM_WORLD);
        holder->SetRing(std::move(o), std::move(s));
        std::function<void(KernelContext*)> adjust;
        if (no_switches) adjust = [](KernelContext* ctx) { ctx->switch_of_rank = nullptr; };
        add(std::move(name), std::move(holder), expect, true, std::move(adjust));
      };
      ring("short ring order (must fall back)", {order.begin(), order.end() - 1}, switches, false, Expect::kFallsBack);
      if (n >= 2) {
        std::vector<int> repeated = order;
        repeated[0] = repeated.back();
        ring("ring order with a repeat (must fall back)", repeated, switches, false, Expect::kFallsBack);
      }
      // Only link_scheduled reads the switch of every rank.
      const Expect switch_map = kernel->name == "link_scheduled" ? Expect::kFallsBack : Expect::kRuns;
      ring("no switch_of_rank", order, switches, true, switch_map);
      ring("short switch_of_rank", order, {switches.begin(), switches.end() - 1}, false, switch_map);
    }
    add("empty (must fall back)", std::make_unique<ContextHolder>(), Expect::kFallsBack, false);
  } else {
    add("empty", std::make_unique<ContextHolder>(), Expect::kRuns, false);
    add("private_comm", holder_for(MPI_COMM_WORLD), Expect::kRuns, false);
  }
  // The halves of a split communicator, with a context built for the half.
  auto half_holder = holder_for(half_comm);
  if (topology_context) {
    if (auto st = half_holder->AddTopology(TestLayouts(half.size())[0].tree, collective, half.rank()); !st.ok())
      return Usage(("context of the split communicator: " + st.message()).c_str());
  }
  Variant half_variant{"split, own context", std::move(half_holder), Expect::kRuns, true, {}};

  const std::vector<Case> cases = MakeCases(types, collective, kernel->needs_context);
  int failed_cases = 0, total_cases = 0;
  std::map<std::string, int64_t> fallback_reasons;
  bool never_ran = false;
  auto run_variant = [&](Tester* t, Variant& v) {
    FallbackLog log;
    log.sink = [](const std::string&) {};  // Counted below, printed once.
    long long ran = 0;
    for (const Case& c : cases) {
      if (v.sample_only && !c.sample) continue;
      // A stale plan only makes sense where plans are built.
      if (c.stale != Stale::kNone && v.holder->context().private_comm == MPI_COMM_NULL) continue;
      ++total_cases;
      bool this_ran = false;
      if (!t->Run(c, v, &log, &this_ran)) ++failed_cases;
      ran += this_ran ? 1 : 0;
    }
    for (const auto& [reason, count] : log.counts()) fallback_reasons[v.name + ": " + reason] += count;
    // A kernel that never ran here would pass every case vacuously.
    long long max_ran = 0;
    MPI_Allreduce(&ran, &max_ran, 1, MPI_LONG_LONG, MPI_MAX, t->comm());
    if (v.expect == Expect::kRuns && t->size() >= 2 && max_ran == 0) {
      never_ran = true;
      if (t->rank() == 0)
        std::fprintf(stderr, "FAILURE: %s %s np=%d context=%s: the kernel fell back on every call\n", argv[1], argv[2],
                     t->size(), v.name.c_str());
    }
  };
  for (Variant& v : variants) run_variant(&world, v);
  run_variant(&half, half_variant);

  // The context the kernel runs in, for the checks below.
  const Variant& home = variants.front();
  KernelContext home_ctx = home.holder->context();
  int failed_checks = 0;
  auto check = [&](Tester* t, const std::string& what, const std::string& error) {
    ++total_cases;
    if (!t->Agree(error, home.name, what)) ++failed_checks;
  };
  if (n >= 2) check(&world, "intercommunicator", CheckIntercomm(*kernel, home_ctx, MPI_COMM_WORLD));
  if (collective == Collective::kAlltoall) {
    if (kernel->name != "native")
      check(&world, "argument errors", CheckAlltoallErrors(*kernel, home_ctx, MPI_COMM_WORLD));
    check(&world, "alltoall helpers", CheckAlltoallHelpers(&world, types[3], types[0]));
  }
  {
    // Back to back: three rounds of this kernel and every kernel of the
    // collective that needs no context, all checked at the end.
    std::vector<const KernelInfo*> others;
    for (const KernelInfo& k : topotune::kernels::Kernels())
      if (k.collective == collective && !k.needs_context && &k != kernel) others.push_back(&k);
    const Case& shape = *std::find_if(cases.begin(), cases.end(), [](const Case& c) { return c.sample; });
    std::vector<std::unique_ptr<Call>> calls;
    std::vector<std::string> names;
    FallbackLog log;
    log.sink = [](const std::string&) {};
    // One call shape for all, so that a Level 3 plan built once fits every call.
    bool planned = false;
    if (collective == Collective::kAlltoallv && kernel->needs_context && home_ctx.private_comm != MPI_COMM_NULL) {
      std::unique_ptr<Call> first = world.Prepare(shape);
      planned = home.holder->SetAlltoallvPlanFor(first->alltoallv, kernel->name) == MPI_SUCCESS;
    }
    KernelContext ctx = home.holder->context();
    std::string error;
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i <= others.size(); ++i) {
        const KernelInfo& k = i == 0 ? *kernel : *others[i - 1];
        calls.push_back(world.Prepare(shape));
        names.push_back(std::string(k.name));
        int rc = Tester::Execute(k, calls.back().get(), ctx, &log);
        if (rc != MPI_SUCCESS && error.empty()) error = names.back() + ": MPI error " + std::to_string(rc);
      }
    }
    for (size_t i = 0; i < calls.size() && error.empty(); ++i)
      if (std::string e = Tester::Check(*calls[i]); !e.empty())
        error = "call " + std::to_string(i) + " (" + names[i] + "): " + e;
    if (planned) home.holder->ClearAlltoallvPlan();
    check(&world, "back-to-back calls with every kernel that needs no context", error);
  }

  if (rank == 0) {
    for (const auto& [reason, count] : fallback_reasons)
      std::printf("rank 0 fell back %lld times: %s\n", static_cast<long long>(count), reason.c_str());
    std::printf("%s %s np=%d: %d of %d cases passed over %zu contexts\n", argv[1], argv[2], n,
                total_cases - failed_cases - failed_checks, total_cases, variants.size() + 1);
  }
  for (TestType& t : types)
    if (t.name == "vec") MPI_Type_free(&t.type);
  variants.clear();  // Frees the private communicators before MPI_Finalize.
  half_variant.holder.reset();
  MPI_Comm_free(&half_comm);
  return failed_cases > 0 || failed_checks > 0 || never_ran ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = Main(argc, argv);
  MPI_Finalize();
  return rc;
}
