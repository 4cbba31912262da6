// A topotune.v1 message as JSON text: proto field names, every field
// (defaults too), compact. For the stats file and the store's JSON columns,
// so that they spell a message as the API does.
//
// Thread-safety: pure functions.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace topotune::v1 {

// "{}" when the message cannot be printed (an Any of an unknown type;
// topotune.v1 has none).
std::string MessageJson(const google::protobuf::Message& message);

}  // namespace topotune::v1
