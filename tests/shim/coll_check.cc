// coll_check: a plain MPI program (MPI only, no topotune library) that the
// shim tests run with and without libtopotune-mpi.so in LD_PRELOAD. It makes
// a fixed, deterministic sequence of MPI_Alltoall, MPI_Alltoallv and
// MPI_Allgather calls, checks every received element against the formula
// that filled it, and writes every receive buffer's raw bytes to a file per
// rank, so that a run under the shim can be compared byte for byte with a
// native run (`cmp`).
//
//   mpirun -np N coll_check [--out DIR] [--rounds N] [--pause-file PATH]
//                           [--comms derived] [--nonblocking]
//
// One round is, in this order, for each communicator, each datatype and
// each count, the calls listed below. Communicators (made anew each round,
// freed at its end): MPI_COMM_WORLD; an MPI_Comm_dup of it; MPI_Comm_split
// by rank % 2 (key: rank); the same split with the key order reversed; an
// MPI_Comm_create of the group of the first ceil(N/2) ranks (the others sit
// those calls out); MPI_Comm_split by rank (one rank each). With --comms
// derived, the communicators are instead MPI_COMM_WORLD, the split by
// rank % 2 ("parity") and what the other constructors make of them: of
// parity, an MPI_Comm_dup_with_info, an MPI_Comm_idup, a one-dimensional
// MPI_Cart_create without reordering, an MPI_Comm_split_type
// (MPI_COMM_TYPE_SHARED: all of parity when the job runs on one machine), an
// MPI_Comm_create_group of its whole group and an
// MPI_Dist_graph_create_adjacent (a ring, unweighted, without reordering),
// all with parity's ranks in parity's order; and MPI_Cart_sub keeping the
// second dimension of a two-dimensional MPI_Cart_create of MPI_COMM_WORLD
// (MPI_Dims_create). The dup_with_info is released by MPI_Comm_disconnect,
// the others by MPI_Comm_free. Datatypes:
// MPI_BYTE, MPI_INT, MPI_DOUBLE, "contig" (MPI_Type_contiguous of 3 ints)
// and "vec" (MPI_Type_vector of 3 ints with stride 2: a gap after the first
// two ints of every element, which nobody may write). Counts: 0, 1, 3, 300
// and 64 KiB worth of elements (65536 / type size). Calls per (comm, type,
// count): MPI_Alltoall, MPI_Alltoall with MPI_IN_PLACE, MPI_Allgather,
// MPI_Allgather with MPI_IN_PLACE; per (comm, type) once, send and receive
// types that differ in layout but match in signature (contig or vec sent,
// MPI_INT received) for MPI_Alltoall, MPI_Allgather and MPI_Alltoallv; per
// (comm, type) MPI_Alltoallv with five count patterns ("zeros", "small"
// 0 to 3, "medium" 0 to 240, "sparse" 200 between a third of the pairs and
// nothing between the others, "large" up to 64 KiB worth; zero counts
// between some pairs and to oneself), each also with MPI_IN_PLACE (counts symmetric,
// as MPI requires), blocks at uneven displacements: send blocks in peer
// order with gaps of 0 to 2 elements, receive blocks in reverse peer order
// with one element of gap after each.
//
// Data: element unit u (a byte, int or double; contig and vec elements hold
// three ints) of the block that rank s sends to rank d in call number c has
// a value that hashes (c, s, d) and u (allgather: d = -1, the same for every
// receiver); doubles are whole numbers below 2^40, exact in binary. Receive
// buffers start as 0xEE bytes and end in a guard of 64 bytes; the whole
// buffer, gaps and guard included, is compared with the image it must have,
// and send buffers must come back unchanged. The first mismatch of each rank
// is printed with its coordinates (call, collective, communicator, type,
// count, byte, block, element); every rank finishes the round (so that
// MPI_Finalize and the shim's reports still run) and the job exits 1.
//
// Output (--out DIR): DIR/rank<R>.bin, the receive buffers of rank R (world
// rank) in call order, whole; DIR/summary.json (world rank 0), the calls
// rank 0 made per collective: in total, on MPI_COMM_WORLD itself and on
// communicators of one rank, and the payload bytes these calls moved between
// distinct ranks, all ranks together (topotune-bench's bytes_per_call):
//   {"nprocs": 4, "rounds": 1,
//    "calls": {"alltoall": {"total": 312, "world": 52, "single": 52, "bytes": 20341440}, ...}}
//
// --nonblocking: every call is the nonblocking one (MPI_Ialltoall,
// MPI_Ialltoallv, MPI_Iallgather), completed in turn by MPI_Wait after some
// computation on other memory (overlap) or by polling MPI_Test; the data and
// outputs are those of the blocking calls. summary.json then says
// "nonblocking": true.
//
// --pause-file PATH: after the first round, world rank 0 creates PATH.ready
// and waits (polling every 10 ms, at most 60 s) until PATH exists; then all
// ranks meet in a barrier and go on. The daemon-dies test kills the daemon
// in that pause.
//
// Exit status: 0 when every call delivered the right data, 1 on a mismatch
// or an MPI error, 2 on a usage or setup error.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr unsigned char kRecvPoison = 0xEE;
constexpr unsigned char kSendPoison = 0xA5;
constexpr int64_t kGuard = 64;
constexpr int64_t kLargeBytes = 65536;

const char kUsage[] =
    "Usage: coll_check [--out DIR] [--rounds N] [--pause-file PATH] [--comms standard|derived] [--nonblocking]\n"
    "                  [--world-sizes B,...] [--help]\n"
    "\n"
    "Runs a fixed sequence of MPI_Alltoall, MPI_Alltoallv and MPI_Allgather calls on several\n"
    "communicators, datatypes and counts (MPI_IN_PLACE too), checks every received element and,\n"
    "with --out, writes each rank's receive buffers to DIR/rank<R>.bin and rank 0's call counts to\n"
    "DIR/summary.json. Plain MPI: run it with LD_PRELOAD=libtopotune-mpi.so to test the shim.\n"
    "\n"
    "  --out DIR          write DIR/rank<R>.bin and DIR/summary.json (DIR must exist)\n"
    "  --rounds N         run the whole sequence N times (default 1)\n"
    "  --pause-file PATH  after round 1, rank 0 creates PATH.ready and waits until PATH exists\n"
    "                     (at most 60 s), then every rank meets in a barrier\n"
    "  --comms derived    run on MPI_COMM_WORLD, a split and the communicators that MPI_Comm_dup_with_info,\n"
    "                     MPI_Comm_idup, MPI_Cart_create, MPI_Comm_split_type, MPI_Comm_create_group,\n"
    "                     MPI_Dist_graph_create_adjacent and MPI_Cart_sub make (default: standard)\n"
    "  --nonblocking      use MPI_Ialltoall, MPI_Ialltoallv and MPI_Iallgather, completed by MPI_Wait\n"
    "                     after some computation or by polling MPI_Test\n"
    "  --world-sizes B,...  after the rounds, one MPI_Alltoall and one MPI_Allgather of B bytes\n"
    "                     per block (MPI_BYTE) on MPI_COMM_WORLD for each B, checked like the rest\n"
    "                     (sizes where a tuned plan picks its large-message algorithms)\n"
    "\n"
    "Exit status: 0 all data correct, 1 a mismatch or MPI error, 2 a usage or setup error.\n";

enum Coll { kAlltoall = 0, kAlltoallv = 1, kAllgather = 2 };
const char* const kCollNames[] = {"alltoall", "alltoallv", "allgather"};
const char* const kMpiNames[] = {"MPI_Alltoall", "MPI_Alltoallv", "MPI_Allgather"};

// A datatype as units (byte, int or double) at byte offsets within an element.
struct TestType {
  std::string name;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool owned = false;  // Made here: freed at the end.
  int64_t extent = 0;
  int unit_size = 1;  // 1: byte, 4: int, 8: double.
  std::vector<int64_t> unit_offsets;
  int64_t units() const { return static_cast<int64_t>(unit_offsets.size()); }
  int64_t size() const { return units() * unit_size; }
};

struct Comm {
  std::string name;
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_NULL: this rank is not a member.
  bool world = false;
  bool owned = false;
};

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The seed of the block src sends to dst (-1: every rank) in `call`; unit u
// of the block is Mix(seed ^ u).
uint64_t BlockSeed(int64_t call, int src, int dst) {
  return Mix(Mix(Mix(static_cast<uint64_t>(call)) ^ static_cast<uint64_t>(src)) ^
             static_cast<uint64_t>(static_cast<int64_t>(dst) + 1));
}

// Writes the value of unit u at `p`, as the unit's type.
void PutUnit(unsigned char* p, int unit_size, uint64_t h) {
  if (unit_size == 1) {
    *p = static_cast<unsigned char>(h);
  } else if (unit_size == 4) {
    int32_t v = static_cast<int32_t>(h & 0x7FFFFFFF);
    std::memcpy(p, &v, 4);
  } else {
    double v = static_cast<double>(h >> 24);  // Below 2^40: exact.
    std::memcpy(p, &v, 8);
  }
}

// A block of a buffer: `count` elements of `type` at element displacement
// `displ`, holding what `src` sends to `dst`.
struct Block {
  int64_t displ = 0;
  int64_t count = 0;
  int src = 0;
  int dst = 0;
};

// Writes the block's values into `img`.
void Put(std::vector<unsigned char>* img, const TestType& t, const Block& b, int64_t call) {
  const uint64_t seed = BlockSeed(call, b.src, b.dst);
  for (int64_t e = 0; e < b.count; ++e)
    for (int64_t k = 0; k < t.units(); ++k) {
      int64_t at = (b.displ + e) * t.extent + t.unit_offsets[static_cast<size_t>(k)];
      PutUnit(img->data() + at, t.unit_size, Mix(seed ^ static_cast<uint64_t>(e * t.units() + k)));
    }
}

int64_t BytesFor(const TestType& t, const std::vector<Block>& blocks) {
  int64_t end = 0;
  for (const Block& b : blocks)
    if (b.count > 0) end = std::max(end, (b.displ + b.count) * t.extent);
  return end + kGuard;
}

// What a call is, for messages.
struct CallInfo {
  int64_t call = 0;
  Coll coll = kAlltoall;
  const Comm* comm = nullptr;
  const TestType* stype = nullptr;
  const TestType* rtype = nullptr;
  std::string counts;
  bool in_place = false;
};

std::string Describe(const CallInfo& c) {
  std::string s = "call " + std::to_string(c.call) + " (" + kMpiNames[c.coll] + " on " + c.comm->name + ", ";
  if (c.in_place)
    s += "MPI_IN_PLACE, type " + c.rtype->name;
  else if (c.stype == c.rtype)
    s += "type " + c.rtype->name;
  else
    s += "send type " + c.stype->name + ", receive type " + c.rtype->name;
  return s + ", " + c.counts + ")";
}

class Checker {
 public:
  Checker(int world_rank, FILE* out) : rank_(world_rank), out_(out) {}

  // Compares a buffer after a call with its image; reports the first
  // difference of this rank. `what` names the buffer.
  void Check(const CallInfo& c, const char* what, const std::vector<unsigned char>& got,
             const std::vector<unsigned char>& want, const TestType& t, const std::vector<Block>& blocks,
             bool receive) {
    if (got == want) return;
    ++mismatches_;
    if (mismatches_ > 1) return;
    size_t i = 0;
    while (got[i] == want[i]) ++i;
    const int64_t off = static_cast<int64_t>(i);
    std::string where = "outside every block";
    for (const Block& b : blocks) {
      int64_t begin = b.displ * t.extent, end = (b.displ + b.count) * t.extent;
      if (off < begin || off >= end) continue;
      int64_t e = (off - begin) / t.extent, within = (off - begin) % t.extent;
      int64_t unit = -1;
      for (size_t k = 0; k < t.unit_offsets.size(); ++k)
        if (within >= t.unit_offsets[k] && within < t.unit_offsets[k] + t.unit_size) unit = static_cast<int64_t>(k);
      where = std::string("block ") +
              (receive ? "from rank " + std::to_string(b.src) : "to rank " + std::to_string(b.dst)) + ", element " +
              std::to_string(e) + ", byte " + std::to_string(within) + " of the element" +
              (unit < 0 ? " (a gap of the datatype)" : ", unit " + std::to_string(e * t.units() + unit));
      break;
    }
    if (off >= static_cast<int64_t>(got.size()) - kGuard) where = "the guard zone past the end";
    std::fprintf(stderr,
                 "coll_check: MISMATCH on world rank %d: %s: %s byte %" PRId64 " (%s): expected 0x%02x, got 0x%02x\n",
                 rank_, Describe(c).c_str(), what, off, where.c_str(), want[i], got[i]);
  }

  void MpiError(const CallInfo& c, int rc) {
    ++mismatches_;
    if (mismatches_ > 1) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    std::fprintf(stderr, "coll_check: MPI ERROR on world rank %d: %s: %.*s\n", rank_, Describe(c).c_str(), len, text);
  }

  void Write(const std::vector<unsigned char>& buf) {
    if (out_ && std::fwrite(buf.data(), 1, buf.size(), out_) != buf.size()) write_error_ = true;
  }

  int64_t mismatches() const { return mismatches_; }
  bool write_error() const { return write_error_; }

 private:
  int rank_;
  FILE* out_;
  int64_t mismatches_ = 0;
  bool write_error_ = false;
};

class Runner {
 public:
  Runner(int world_rank, Checker* checker, bool nonblocking)
      : world_rank_(world_rank), check_(checker), nonblocking_(nonblocking) {}

  int64_t calls(Coll c) const { return calls_[c]; }
  int64_t world_calls(Coll c) const { return world_calls_[c]; }
  int64_t single_calls(Coll c) const { return single_calls_[c]; }
  int64_t bytes(Coll c) const { return bytes_[c]; }

  // MPI_Alltoall of `scount` stype / `rcount` rtype elements per block.
  void Alltoall(const Comm& comm, const TestType& st, int scount, const TestType& rt, int rcount, bool in_place) {
    const int64_t call = ++call_;
    if (comm.comm == MPI_COMM_NULL) return;
    int n = 0, me = 0;
    MPI_Comm_size(comm.comm, &n);
    MPI_Comm_rank(comm.comm, &me);
    CallInfo info{call, kAlltoall, &comm, &st, &rt, "count " + std::to_string(rcount), in_place};
    if (!in_place && scount != rcount) info.counts = "counts " + std::to_string(scount) + "/" + std::to_string(rcount);
    std::vector<Block> sblocks, rblocks, rsent;
    for (int j = 0; j < n; ++j) {
      sblocks.push_back({int64_t{j} * scount, scount, me, j});
      rblocks.push_back({int64_t{j} * rcount, rcount, j, me});
      rsent.push_back({int64_t{j} * rcount, rcount, me, j});
    }
    Buffers buf = MakeBuffers(st, sblocks, rt, rblocks, rsent, in_place, call);
    Count(kAlltoall, comm, int64_t{n} * (n - 1) * rcount * rt.size());
    const void* send = in_place ? MPI_IN_PLACE : buf.send.data();
    int rc = Invoke([&] { return MPI_Alltoall(send, scount, st.type, buf.recv.data(), rcount, rt.type, comm.comm); },
                    [&](MPI_Request* r) {
                      return MPI_Ialltoall(send, scount, st.type, buf.recv.data(), rcount, rt.type, comm.comm, r);
                    });
    Finish(info, rc, buf, rt, rblocks, st, sblocks);
  }

  void Allgather(const Comm& comm, const TestType& st, int scount, const TestType& rt, int rcount, bool in_place) {
    const int64_t call = ++call_;
    if (comm.comm == MPI_COMM_NULL) return;
    int n = 0, me = 0;
    MPI_Comm_size(comm.comm, &n);
    MPI_Comm_rank(comm.comm, &me);
    CallInfo info{call, kAllgather, &comm, &st, &rt, "count " + std::to_string(rcount), in_place};
    if (!in_place && scount != rcount) info.counts = "counts " + std::to_string(scount) + "/" + std::to_string(rcount);
    std::vector<Block> sblocks = {{0, scount, me, -1}}, rblocks;
    for (int j = 0; j < n; ++j) rblocks.push_back({int64_t{j} * rcount, rcount, j, -1});
    Buffers buf = MakeBuffers(st, sblocks, rt, rblocks, {rblocks[static_cast<size_t>(me)]}, in_place, call);
    Count(kAllgather, comm, int64_t{n} * (n - 1) * rcount * rt.size());
    const void* send = in_place ? MPI_IN_PLACE : buf.send.data();
    int rc = Invoke([&] { return MPI_Allgather(send, scount, st.type, buf.recv.data(), rcount, rt.type, comm.comm); },
                    [&](MPI_Request* r) {
                      return MPI_Iallgather(send, scount, st.type, buf.recv.data(), rcount, rt.type, comm.comm, r);
                    });
    Finish(info, rc, buf, rt, rblocks, st, sblocks);
  }

  // MPI_Alltoallv with count(i -> j) = `count(i, j)` elements of st (rt:
  // times st.units() / rt.units()); see the file comment for displacements.
  template <typename CountFn>
  void Alltoallv(const Comm& comm, const std::string& pattern, const TestType& st, const TestType& rt, bool in_place,
                 CountFn count) {
    const int64_t call = ++call_;
    if (comm.comm == MPI_COMM_NULL) return;
    int n = 0, me = 0;
    MPI_Comm_size(comm.comm, &n);
    MPI_Comm_rank(comm.comm, &me);
    const int64_t ratio = st.units() / rt.units();
    CallInfo info{call, kAlltoallv, &comm, &st, &rt, "pattern " + pattern, in_place};
    std::vector<int> scounts(static_cast<size_t>(n)), sdispls(static_cast<size_t>(n)), rcounts(static_cast<size_t>(n)),
        rdispls(static_cast<size_t>(n));
    int64_t at = 0;
    for (int j = 0; j < n; ++j) {  // Send blocks in peer order, gaps of j % 3 elements.
      scounts[static_cast<size_t>(j)] = count(me, j);
      sdispls[static_cast<size_t>(j)] = static_cast<int>(at);
      at += scounts[static_cast<size_t>(j)] + j % 3;
    }
    at = 0;
    for (int j = n - 1; j >= 0; --j) {  // Receive blocks in reverse peer order, one element of gap after each.
      rcounts[static_cast<size_t>(j)] = static_cast<int>(count(j, me) * ratio);
      rdispls[static_cast<size_t>(j)] = static_cast<int>(at);
      at += rcounts[static_cast<size_t>(j)] + 1;
    }
    std::vector<Block> sblocks, rblocks, rsent;
    for (int j = 0; j < n; ++j) {
      const size_t uj = static_cast<size_t>(j);
      sblocks.push_back({sdispls[uj], scounts[uj], me, j});
      rblocks.push_back({rdispls[uj], rcounts[uj], j, me});
      rsent.push_back({rdispls[uj], rcounts[uj], me, j});  // In place: counts are symmetric.
    }
    Buffers buf = MakeBuffers(st, sblocks, rt, rblocks, rsent, in_place, call);
    int64_t moved = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j) moved += count(i, j) * st.size();
    Count(kAlltoallv, comm, moved);
    const void* send = in_place ? MPI_IN_PLACE : buf.send.data();
    int rc = Invoke(
        [&] {
          return MPI_Alltoallv(send, scounts.data(), sdispls.data(), st.type, buf.recv.data(), rcounts.data(),
                               rdispls.data(), rt.type, comm.comm);
        },
        [&](MPI_Request* r) {
          return MPI_Ialltoallv(send, scounts.data(), sdispls.data(), st.type, buf.recv.data(), rcounts.data(),
                                rdispls.data(), rt.type, comm.comm, r);
        });
    Finish(info, rc, buf, rt, rblocks, st, sblocks);
  }

 private:
  // The blocking call, or the nonblocking one completed in turn by MPI_Wait
  // after computing on other memory, or by polling MPI_Test.
  template <typename Blocking, typename Start>
  int Invoke(Blocking blocking, Start start) {
    if (!nonblocking_) return blocking();
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = start(&request);
    if (rc != MPI_SUCCESS) return rc;
    if (++started_ % 2 == 1) {
      for (size_t i = 0; i < scratch_.size(); ++i) scratch_[i] = scratch_[i] * 31 + static_cast<uint64_t>(i);
      return MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    for (int done = 0; !done;) {
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
    }
    return rc;
  }

  // On world rank 0: one call more, moving `bytes` between distinct ranks
  // (all ranks together, as topotune-bench counts them).
  void Count(Coll c, const Comm& comm, int64_t bytes) {
    if (world_rank_ != 0) return;
    ++calls_[c];
    bytes_[c] += bytes;
    if (comm.world) ++world_calls_[c];
    int size = 0;
    MPI_Comm_size(comm.comm, &size);
    if (size == 1) ++single_calls_[c];
  }

  // The buffers of one call: the receive buffer poisoned (holding, in
  // place, the blocks this rank sends), the send buffer, its copy, and what
  // the receive buffer must hold afterwards.
  struct Buffers {
    std::vector<unsigned char> recv, send, send_image, want;
  };
  static Buffers MakeBuffers(const TestType& st, const std::vector<Block>& sblocks, const TestType& rt,
                             const std::vector<Block>& rblocks, const std::vector<Block>& in_place_blocks,
                             bool in_place, int64_t call) {
    Buffers b;
    b.recv.assign(static_cast<size_t>(BytesFor(rt, rblocks)), kRecvPoison);
    if (in_place) {
      for (const Block& block : in_place_blocks) Put(&b.recv, rt, block, call);
    } else {
      b.send.assign(static_cast<size_t>(BytesFor(st, sblocks)), kSendPoison);
      for (const Block& block : sblocks) Put(&b.send, st, block, call);
      b.send_image = b.send;
    }
    b.want = b.recv;
    for (const Block& block : rblocks) Put(&b.want, rt, block, call);
    return b;
  }

  void Finish(const CallInfo& info, int rc, const Buffers& buf, const TestType& rt, const std::vector<Block>& rblocks,
              const TestType& st, const std::vector<Block>& sblocks) {
    check_->Write(buf.recv);
    if (rc != MPI_SUCCESS) {
      check_->MpiError(info, rc);
      return;
    }
    check_->Check(info, "receive buffer", buf.recv, buf.want, rt, rblocks, true);
    if (!info.in_place)
      check_->Check(info, "send buffer (changed by the call)", buf.send, buf.send_image, st, sblocks, false);
  }

  int world_rank_;
  Checker* check_;
  bool nonblocking_;
  int64_t started_ = 0;
  std::vector<uint64_t> scratch_ = std::vector<uint64_t>(4096, 1);  // The computation overlapped with a call.
  int64_t call_ = 0;
  int64_t calls_[3] = {0, 0, 0};
  int64_t world_calls_[3] = {0, 0, 0};
  int64_t single_calls_[3] = {0, 0, 0};
  int64_t bytes_[3] = {0, 0, 0};
};

TestType Basic(const std::string& name, MPI_Datatype t, int size) { return {name, t, false, size, size, {0}}; }

std::vector<TestType> MakeTypes() {
  std::vector<TestType> types = {Basic("MPI_BYTE", MPI_BYTE, 1), Basic("MPI_INT", MPI_INT, 4),
                                 Basic("MPI_DOUBLE", MPI_DOUBLE, 8)};
  TestType contig{"contig", MPI_DATATYPE_NULL, true, 12, 4, {0, 4, 8}};
  MPI_Type_contiguous(3, MPI_INT, &contig.type);
  MPI_Type_commit(&contig.type);
  types.push_back(contig);
  TestType vec{"vec", MPI_DATATYPE_NULL, true, 20, 4, {0, 8, 16}};  // Ints at 0, 8, 16; extent 5 ints.
  MPI_Type_vector(3, 1, 2, MPI_INT, &vec.type);
  MPI_Type_commit(&vec.type);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(vec.type, &lb, &extent);
  if (extent != vec.extent) {
    std::fprintf(stderr, "coll_check: MPI_Type_vector(3, 1, 2, MPI_INT) has extent %ld, expected 20\n",
                 static_cast<long>(extent));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  types.push_back(vec);
  return types;
}

std::vector<Comm> MakeComms(int rank, int n) {
  std::vector<Comm> comms;
  comms.push_back({"MPI_COMM_WORLD", MPI_COMM_WORLD, true, false});
  Comm dup{"a dup of MPI_COMM_WORLD", MPI_COMM_NULL, false, true};
  MPI_Comm_dup(MPI_COMM_WORLD, &dup.comm);
  comms.push_back(dup);
  Comm parity{"split by rank % 2", MPI_COMM_NULL, false, true};
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity.comm);
  comms.push_back(parity);
  Comm reversed{"split by rank % 2 in reverse key order", MPI_COMM_NULL, false, true};
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, n - rank, &reversed.comm);
  comms.push_back(reversed);
  Comm half{"MPI_Comm_create of the first ceil(N/2) ranks", MPI_COMM_NULL, false, true};
  MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int range[1][3] = {{0, (n + 1) / 2 - 1, 1}};
  MPI_Group_range_incl(world_group, 1, range, &group);
  MPI_Comm_create(MPI_COMM_WORLD, group, &half.comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  comms.push_back(half);
  Comm single{"split by rank (one rank)", MPI_COMM_NULL, false, true};
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &single.comm);
  comms.push_back(single);
  return comms;
}

// --comms derived (see the file comment).
std::vector<Comm> MakeDerivedComms(int rank, int n) {
  std::vector<Comm> comms;
  comms.push_back({"MPI_COMM_WORLD", MPI_COMM_WORLD, true, false});
  Comm parity{"split by rank % 2", MPI_COMM_NULL, false, true};
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity.comm);
  comms.push_back(parity);
  int size = 0;
  MPI_Comm_size(parity.comm, &size);
  Comm with_info{"MPI_Comm_dup_with_info of parity (disconnected)", MPI_COMM_NULL, false, true};
  MPI_Comm_dup_with_info(parity.comm, MPI_INFO_NULL, &with_info.comm);
  comms.push_back(with_info);
  Comm idup{"MPI_Comm_idup of parity", MPI_COMM_NULL, false, true};
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Comm_idup(parity.comm, &idup.comm, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  comms.push_back(idup);
  Comm cart{"MPI_Cart_create of parity (1 dimension)", MPI_COMM_NULL, false, true};
  const int dims1[1] = {size}, periods1[1] = {0};
  MPI_Cart_create(parity.comm, 1, dims1, periods1, 0, &cart.comm);
  comms.push_back(cart);
  Comm shared{"MPI_Comm_split_type of parity (shared memory)", MPI_COMM_NULL, false, true};
  MPI_Comm_split_type(parity.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared.comm);
  comms.push_back(shared);
  Comm grouped{"MPI_Comm_create_group of parity's group", MPI_COMM_NULL, false, true};
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm_group(parity.comm, &group);
  MPI_Comm_create_group(parity.comm, group, 7, &grouped.comm);
  MPI_Group_free(&group);
  comms.push_back(grouped);
  Comm graph{"MPI_Dist_graph_create_adjacent of parity (a ring)", MPI_COMM_NULL, false, true};
  int me = 0;
  MPI_Comm_rank(parity.comm, &me);
  const int ring[2] = {(me + size - 1) % size, (me + 1) % size};
  MPI_Dist_graph_create_adjacent(parity.comm, 2, ring, MPI_UNWEIGHTED, 2, ring, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                 &graph.comm);
  comms.push_back(graph);
  int dims2[2] = {0, 0};
  const int periods2[2] = {0, 0}, remain[2] = {0, 1};
  MPI_Dims_create(n, 2, dims2);
  MPI_Comm grid = MPI_COMM_NULL;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims2, periods2, 0, &grid);
  Comm row{"MPI_Cart_sub of a 2-dimensional MPI_Cart_create of MPI_COMM_WORLD", MPI_COMM_NULL, false, true};
  MPI_Cart_sub(grid, remain, &row.comm);
  MPI_Comm_free(&grid);
  comms.push_back(row);
  return comms;
}

void Round(Runner* run, int rank, int n, bool derived) {
  std::vector<TestType> types = MakeTypes();
  std::vector<Comm> comms = derived ? MakeDerivedComms(rank, n) : MakeComms(rank, n);
  const TestType& int_type = types[1];
  for (const Comm& comm : comms) {
    for (const TestType& t : types) {
      const int large = static_cast<int>(kLargeBytes / t.size());
      for (int count : {0, 1, 3, 300, large}) {
        for (bool in_place : {false, true}) run->Alltoall(comm, t, count, t, count, in_place);
        for (bool in_place : {false, true}) run->Allgather(comm, t, count, t, count, in_place);
      }
      if (t.units() > 1) {  // Same signature, other layout: 3 ints per element sent, ints received.
        run->Alltoall(comm, t, 5, int_type, 15, false);
        run->Allgather(comm, t, 5, int_type, 15, false);
        run->Alltoallv(comm, "small, ints received", t, int_type, false,
                       [](int i, int j) { return (i + 2 * j + 1) % 4; });
      }
      const int big = std::max(1, large / 3);
      for (bool in_place : {false, true}) {
        // In place, MPI requires count(i, j) == count(j, i).
        auto sym = [in_place](int i, int j) { return in_place ? std::min(i, j) * 3 + std::max(i, j) : i * 5 + j; };
        run->Alltoallv(comm, "zeros", t, t, in_place, [](int, int) { return 0; });
        run->Alltoallv(comm, "small", t, t, in_place, [&](int i, int j) { return (sym(i, j) + 2) % 4; });
        run->Alltoallv(comm, "medium", t, t, in_place, [&](int i, int j) { return (sym(i, j) * 7 % 5) * 60; });
        // Sparse: only pairs whose ranks sum to 1 modulo 4 send (a third
        // of the pairs on 4 ranks), symmetric as in place requires.
        run->Alltoallv(comm, "sparse", t, t, in_place, [](int i, int j) { return (i + j) % 4 == 1 ? 200 : 0; });
        run->Alltoallv(comm, "large", t, t, in_place,
                       [&](int i, int j) { return i == j ? 0 : (sym(i, j) % 3 + 1) * big; });
      }
    }
  }
  for (Comm& c : comms) {
    if (!c.owned || c.comm == MPI_COMM_NULL) continue;
    if (c.name.find("disconnected") != std::string::npos)
      MPI_Comm_disconnect(&c.comm);
    else
      MPI_Comm_free(&c.comm);
  }
  for (TestType& t : types)
    if (t.owned) MPI_Type_free(&t.type);
}

bool WaitForFile(const std::string& path) {
  {
    std::string ready = path + ".ready";
    FILE* f = std::fopen(ready.c_str(), "w");
    if (!f) {
      std::perror(ready.c_str());
      return false;
    }
    std::fclose(f);
  }
  for (int i = 0; i < 6000; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "coll_check: %s did not appear within 60 s\n", path.c_str());
  return false;
}

}  // namespace

// "65536,262144" -> {65536, 262144}; empty on a malformed list.
std::vector<int> ParseSizes(const std::string& text) {
  std::vector<int> sizes;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (1L << 26)) return {};
    sizes.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return sizes;
}

int main(int argc, char** argv) {
  std::string out_dir, pause_file;
  std::vector<int> world_sizes;
  long rounds = 1;
  bool derived = false, nonblocking = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "coll_check: %s needs a value\n%s", flag, kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--out") {
      out_dir = value("--out");
    } else if (a == "--rounds") {
      std::string v = value("--rounds");
      char* end = nullptr;
      rounds = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || rounds < 1 || rounds > 1000) {
        std::fprintf(stderr, "coll_check: --rounds: '%s' is not a number from 1 to 1000\n", v.c_str());
        return 2;
      }
    } else if (a == "--comms") {
      std::string v = value("--comms");
      if (v != "standard" && v != "derived") {
        std::fprintf(stderr, "coll_check: --comms: '%s' is neither 'standard' nor 'derived'\n", v.c_str());
        return 2;
      }
      derived = v == "derived";
    } else if (a == "--nonblocking") {
      nonblocking = true;
    } else if (a == "--pause-file") {
      pause_file = value("--pause-file");
    } else if (a == "--world-sizes") {
      std::string v = value("--world-sizes");
      world_sizes = ParseSizes(v);
      if (world_sizes.empty()) {
        std::fprintf(stderr, "coll_check: --world-sizes: '%s' is not a list of byte counts from 1 to 64 MiB\n",
                     v.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "coll_check: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }

  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // Communicators made from it inherit it.

  FILE* out = nullptr;
  if (!out_dir.empty()) {
    std::string path = out_dir + "/rank" + std::to_string(rank) + ".bin";
    out = std::fopen(path.c_str(), "wb");
    if (!out) {
      std::perror(path.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  Checker checker(rank, out);
  Runner runner(rank, &checker, nonblocking);
  for (long r = 0; r < rounds; ++r) {
    Round(&runner, rank, n, derived);
    if (r == 0 && !pause_file.empty()) {
      if (rank == 0 && !WaitForFile(pause_file)) MPI_Abort(MPI_COMM_WORLD, 2);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  if (!world_sizes.empty()) {
    std::vector<TestType> types = MakeTypes();  // types[0] is MPI_BYTE.
    const Comm world{"MPI_COMM_WORLD", MPI_COMM_WORLD, true, false};
    for (int bytes : world_sizes) {
      runner.Alltoall(world, types[0], bytes, types[0], bytes, false);
      runner.Allgather(world, types[0], bytes, types[0], bytes, false);
    }
    for (TestType& t : types)
      if (t.owned) MPI_Type_free(&t.type);
  }
  if (out && (std::fclose(out) != 0 || checker.write_error())) {
    std::fprintf(stderr, "coll_check: cannot write %s/rank%d.bin\n", out_dir.c_str(), rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  long long bad = checker.mismatches(), all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::string json = "{\"nprocs\": " + std::to_string(n) + ", \"rounds\": " + std::to_string(rounds) +
                       ", \"comms\": \"" + (derived ? "derived" : "standard") +
                       "\", \"nonblocking\": " + (nonblocking ? "true" : "false") + ", \"calls\": {";
    for (int c = 0; c < 3; ++c) {
      json += std::string(c ? ", " : "") + "\"" + kCollNames[c] +
              "\": {\"total\": " + std::to_string(runner.calls(static_cast<Coll>(c))) +
              ", \"world\": " + std::to_string(runner.world_calls(static_cast<Coll>(c))) +
              ", \"single\": " + std::to_string(runner.single_calls(static_cast<Coll>(c))) +
              ", \"bytes\": " + std::to_string(runner.bytes(static_cast<Coll>(c))) + "}";
    }
    json += "}}\n";
    if (!out_dir.empty()) {
      std::string path = out_dir + "/summary.json";
      FILE* f = std::fopen(path.c_str(), "w");
      if (!f || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0) {
        std::perror(path.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
    if (all_bad == 0)
      std::printf("coll_check: %d ranks, %ld round(s), all data correct: %s", n, rounds, json.c_str());
    else
      std::printf("coll_check: %lld calls delivered wrong data (first of each rank on stderr)\n", all_bad);
  }
  MPI_Finalize();
  return all_bad == 0 ? 0 : 1;
}
