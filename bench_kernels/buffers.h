// Byte views of MPI buffers for the kernels.
//
// Kernels move bytes. A buffer described by (pointer, count, datatype) is
// used in place when the datatype is contiguous (its true extent equals its
// size, as for every predefined type and contiguous derived types); any other
// derived datatype is packed into a scratch buffer with MPI_Pack (send side)
// or received into scratch and unpacked with MPI_Unpack (receive side).
// Element i of a contiguous buffer starts at byte i * size.
//
// Thread-safety: a view belongs to one call on one thread.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace topotune::kernels {

// Size in bytes of one element of `type`, and whether it can be addressed
// as size-byte slots without packing.
struct TypeLayout {
  int size = 0;
  MPI_Aint extent = 0;
  MPI_Aint true_lb = 0;
  bool contiguous = false;
};
int DescribeType(MPI_Datatype type, TypeLayout* out);

// Bytes a kernel or the driver owns or, folded (SMPI builds only,
// topotune-bench-smpi --fold-buffers: KernelContext::fold_scratch), pages of
// SMPI's shared memory that every simulated rank shares, so that hundreds of
// them fit in memory: the bytes are then meaningless, SMPI's timing is not.
// Outside SMPI builds `fold` is ignored.
class FoldableBytes {
 public:
  FoldableBytes() = default;
  FoldableBytes(size_t n, bool fold) { Assign(n, 0, fold); }
  FoldableBytes(const FoldableBytes&) = delete;
  FoldableBytes& operator=(const FoldableBytes&) = delete;
  ~FoldableBytes() { Release(); }
  // n bytes of `value` (folded: of whatever the shared pages hold).
  void Assign(size_t n, char value, bool fold);
  char* data() { return shared_ != nullptr ? shared_ : owned_.data(); }
  const char* data() const { return shared_ != nullptr ? shared_ : owned_.data(); }
  char* begin() { return data(); }
  char* end() { return data() + size_; }
  size_t size() const { return size_; }

 private:
  void Release();
  std::vector<char> owned_;
  char* shared_ = nullptr;
  size_t size_ = 0;
};

class SendView {
 public:
  // Views `count` elements of `type` at `buf` as count * size bytes.
  int Init(const void* buf, int count, MPI_Datatype type, MPI_Comm comm);
  const char* bytes() const { return bytes_; }
  size_t size_bytes() const { return size_; }
  bool packed() const { return !scratch_.empty(); }

 private:
  const char* bytes_ = nullptr;
  size_t size_ = 0;
  std::vector<char> scratch_;
};

class RecvView {
 public:
  // Views `count` elements of `type` at `buf`; call Finish() after the data
  // has arrived in bytes().
  int Init(void* buf, int count, MPI_Datatype type, MPI_Comm comm);
  char* bytes() { return bytes_; }
  size_t size_bytes() const { return size_; }
  int Finish();
  bool packed() const { return !scratch_.empty(); }

 private:
  void* buf_ = nullptr;
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
  char* bytes_ = nullptr;
  size_t size_ = 0;
  std::vector<char> scratch_;
};

}  // namespace topotune::kernels
