// Compiled (syntax only) by the status_nodiscard_* tests of
// tuner/CMakeLists.txt, never linked: a Status or StatusOr that a caller
// drops must be a compiler diagnostic, and IgnoreError() must silence it.
//   -DDROP_STATUS      drops a Status: the compiler must name nodiscard.
//   -DDROP_STATUS_OR   drops a StatusOr: the same.
//   neither            drops both with IgnoreError(): must compile cleanly.
#include "tuner/status.h"

namespace {

topotune::Status MayFail() { return topotune::Status::Internal("x"); }
topotune::StatusOr<int> MayFailWithValue() { return 1; }

}  // namespace

void Caller() {
#if defined(DROP_STATUS)
  MayFail();
#elif defined(DROP_STATUS_OR)
  MayFailWithValue();
#else
  MayFail().IgnoreError();
  MayFailWithValue().IgnoreError();
#endif
}
