// Reading a whole small file (a configuration, a token) into memory, with an
// error that names the file, what it is and why it could not be read.
#pragma once

#include <string>
#include <string_view>

#include "tuner/status.h"

namespace topotune {

// The contents of `path`. `what` names the file in the error ("the
// configuration file"): "PATH: cannot read WHAT: REASON".
StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what);

}  // namespace topotune
