#include "tuner/status.h"

namespace topotune {

std::string Status::ToString() const {
  const char* name = "ok";
  switch (code_) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      name = "invalid argument";
      break;
    case Code::kNotFound:
      name = "not found";
      break;
    case Code::kFailedPrecondition:
      name = "failed precondition";
      break;
    case Code::kInternal:
      name = "internal error";
      break;
    case Code::kIoError:
      name = "I/O error";
      break;
    case Code::kCancelled:
      name = "cancelled";
      break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace topotune
