#include "bench_kernels/buffers.h"

#ifdef TOPOTUNE_SMPI
#include <smpi/smpi.h>
#endif

namespace topotune::kernels {

void FoldableBytes::Assign(size_t n, char value, bool fold) {
  Release();
  size_ = n;
#ifdef TOPOTUNE_SMPI
  if (fold) {
    shared_ = static_cast<char*>(SMPI_SHARED_MALLOC(n));
    return;
  }
#else
  (void)fold;
#endif
  owned_.assign(n, value);
}

void FoldableBytes::Release() {
#ifdef TOPOTUNE_SMPI
  if (shared_ != nullptr) SMPI_SHARED_FREE(shared_);
#endif
  shared_ = nullptr;
  owned_.clear();
  size_ = 0;
}

int DescribeType(MPI_Datatype type, TypeLayout* out) {
  int rc = MPI_Type_size(type, &out->size);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Aint lb = 0, true_extent = 0;
  rc = MPI_Type_get_extent(type, &lb, &out->extent);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Type_get_true_extent(type, &out->true_lb, &true_extent);
  if (rc != MPI_SUCCESS) return rc;
  // Contiguous: the data fills [lb, lb + size) with no gaps, and consecutive
  // elements follow each other without gaps either.
  out->contiguous = true_extent == out->size && out->extent == out->size && out->true_lb == lb;
  return MPI_SUCCESS;
}

int SendView::Init(const void* buf, int count, MPI_Datatype type, MPI_Comm comm) {
  TypeLayout t;
  int rc = DescribeType(type, &t);
  if (rc != MPI_SUCCESS) return rc;
  size_ = static_cast<size_t>(count) * static_cast<size_t>(t.size);
  if (t.contiguous || count == 0) {
    bytes_ = static_cast<const char*>(buf) + t.true_lb;
    return MPI_SUCCESS;
  }
  int packed = 0;
  rc = MPI_Pack_size(count, type, comm, &packed);
  if (rc != MPI_SUCCESS) return rc;
  scratch_.resize(static_cast<size_t>(packed) > 0 ? static_cast<size_t>(packed) : 1);
  int pos = 0;
  rc = MPI_Pack(buf, count, type, scratch_.data(), packed, &pos, comm);
  bytes_ = scratch_.data();
  size_ = static_cast<size_t>(pos);
  return rc;
}

int RecvView::Init(void* buf, int count, MPI_Datatype type, MPI_Comm comm) {
  TypeLayout t;
  int rc = DescribeType(type, &t);
  if (rc != MPI_SUCCESS) return rc;
  buf_ = buf;
  count_ = count;
  type_ = type;
  comm_ = comm;
  size_ = static_cast<size_t>(count) * static_cast<size_t>(t.size);
  if (t.contiguous || count == 0) {
    bytes_ = static_cast<char*>(buf) + t.true_lb;
    return MPI_SUCCESS;
  }
  int packed = 0;
  rc = MPI_Pack_size(count, type, comm, &packed);
  if (rc != MPI_SUCCESS) return rc;
  scratch_.resize(static_cast<size_t>(packed) > 0 ? static_cast<size_t>(packed) : 1);
  bytes_ = scratch_.data();
  return MPI_SUCCESS;
}

int RecvView::Finish() {
  if (scratch_.empty()) return MPI_SUCCESS;
  int pos = 0;
  return MPI_Unpack(scratch_.data(), static_cast<int>(scratch_.size()), &pos, buf_, count_, type_, comm_);
}

}  // namespace topotune::kernels
