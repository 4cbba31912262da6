// Message combining through a virtual topology (Kalé-Kumar 2003, §2): the
// engine behind the mesh, grid3d and hypercube kernels.
//
// A combining algorithm sends each block (src -> dst) through intermediate
// ranks in a few phases; in each phase a rank sends one combined message to
// each rank that holds, after the phase, some of the blocks it holds now.
// An algorithm is described by its route (CombiningRoute):
//   * Holder(t, src, dst): the rank holding block (src -> dst) after t
//     phases; Holder(0) is src and Holder(num_phases()) is dst;
//   * Arrivals(t, rank): a superset of the blocks that reach `rank` in phase
//     t (those with Holder(t) == rank != Holder(t-1)), cheap to enumerate,
//     so a rank never walks all N^2 blocks.
// RunCombining derives both sides of every message from these two
// functions, so they always agree: the sender groups the blocks it holds by
// their next holder, the receiver filters its arrivals by their previous
// holder, and both order a message's blocks by (src, dst). Empty messages
// are not sent (both sides know they are empty).
//
// CheckRoute verifies a route for every rank without MPI (combining_test.cc
// runs it over many process counts).
//
// Thread-safety: routes are immutable; RunCombining is one call's work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_kernels/alltoall/alltoall_buffers.h"
#include "bench_kernels/kernel.h"

namespace topotune::kernels::alltoall_detail {

struct BlockId {
  int32_t src = 0;
  int32_t dst = 0;
  friend bool operator==(const BlockId&, const BlockId&) = default;
};

class CombiningRoute {
 public:
  virtual ~CombiningRoute() = default;
  virtual int num_ranks() const = 0;
  virtual int num_phases() const = 0;
  // 0 <= phase <= num_phases(); src, dst in 0..num_ranks()-1.
  virtual int Holder(int phase, int src, int dst) const = 0;
  // Appends to *out (without duplicates) a superset of the blocks that move
  // to `rank` in phase `phase` (1 <= phase <= num_phases()).
  virtual void Arrivals(int phase, int rank, std::vector<BlockId>* out) const = 0;
};

// 2-D mesh (§2.2): N ranks on ceil(sqrt(N)) columns, row-major, with the
// holes (if N is not a square) at the end of the top row. Phase 1 moves a
// block along the sender's row to the destination's column; phase 2 along
// that column to the destination. A hole's role is shared by the other rows
// of its column: a top-row rank in column j sends what a hole (top, k) would
// get to (j % (rows-1), k).
class MeshRoute final : public CombiningRoute {
 public:
  // `columns` = 0: ceil(sqrt(num_ranks)). Otherwise columns >= 1 with
  // columns * columns >= num_ranks (grid3d uses it for one plane).
  explicit MeshRoute(int num_ranks, int columns = 0);
  int num_ranks() const override { return n_; }
  int num_phases() const override { return n_ > 1 ? 2 : 0; }
  int Holder(int phase, int src, int dst) const override;
  void Arrivals(int phase, int rank, std::vector<BlockId>* out) const override;
  int columns() const { return cols_; }
  int rows() const { return rows_; }

 private:
  int n_, cols_, rows_;
};

// 3-D grid (§2.3): side D = ceil(cbrt(N)), rank = x + D*y + D*D*z, planes
// z = 0..planes-1, holes at the end of the last plane. Phases move a block
// along X, then Y, then Z. A hole is played by the rank below it in the
// penultimate plane. With a single plane the grid is the mesh of that plane
// (holes as in the mesh).
class GridRoute final : public CombiningRoute {
 public:
  explicit GridRoute(int num_ranks);
  int num_ranks() const override { return n_; }
  int num_phases() const override;
  int Holder(int phase, int src, int dst) const override;
  void Arrivals(int phase, int rank, std::vector<BlockId>* out) const override;
  int side() const { return d_; }
  int planes() const { return planes_; }

 private:
  // The rank playing grid position (x, y, z): itself, or for a hole the one
  // below it in the penultimate plane.
  int Host(int x, int y, int z) const;
  int n_, d_, planes_;
  MeshRoute flat_;  // Used when planes_ == 1.
};

// Hypercube / dimensional exchange (§2.4): Q = the largest power of two
// <= N; in the phase for bit b, rank r exchanges with r XOR 2^b every block
// whose destination (or, for a destination outside the cube, its partner
// dst - Q) differs from r in bit b. An imperfect cube (N > Q) adds a first
// phase, where each extra rank e >= Q hands all its blocks to e - Q, and a
// last phase, where e - Q hands e the blocks for e.
class HypercubeRoute final : public CombiningRoute {
 public:
  explicit HypercubeRoute(int num_ranks);
  int num_ranks() const override { return n_; }
  int num_phases() const override { return dims_ + 2 * extra_; }
  int Holder(int phase, int src, int dst) const override;
  void Arrivals(int phase, int rank, std::vector<BlockId>* out) const override;

 private:
  int n_, q_, dims_, extra_;  // extra_: 1 when N is not a power of two.
};

// Runs the alltoall in `b` (initialised, non-empty) along `route`, which
// must be for b->size() ranks.
KernelStatus RunCombining(const CombiningRoute& route, AlltoallBuffers* b);

// Message counts of one route, for the tests and for cost models.
struct RouteStats {
  int64_t max_messages_per_rank = 0;  // Over all phases, sent by one rank.
  int64_t max_blocks_per_rank = 0;    // Largest number of blocks one rank sends in one call.
};
// Simulates `route` for every rank and checks it: the holders start at src
// and end at dst, and every rank's filtered Arrivals are exactly the blocks
// that move to it. Returns an empty string when the route is sound, else
// what is wrong. O(N^2 * phases): for tests.
std::string CheckRoute(const CombiningRoute& route, RouteStats* stats = nullptr);

}  // namespace topotune::kernels::alltoall_detail
