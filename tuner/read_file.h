// Reading a whole small file (a configuration, a token) into memory, and
// parsing YAML text, with errors that name the file (and line), what it is
// and why it could not be read.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "tuner/status.h"

namespace topotune {

// The contents of `path`. `what` names the file in the error ("the
// configuration file"): "PATH: cannot read WHAT: REASON".
StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what);

// `text` as one YAML document; a syntax error is "SOURCE:LINE: MESSAGE".
StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& source);

}  // namespace topotune
