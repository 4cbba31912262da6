#include "tuner/read_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>

namespace topotune {

StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  auto io_error = [&](int err) {
    return Status::IoError(
        fmt::format("{}: cannot read {}: {}", path, what, std::error_code(err, std::generic_category()).message()));
  };
  if (!f) return io_error(errno);
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
  // fopen succeeds on a directory; the read is what fails (EISDIR).
  if (std::ferror(f.get())) return io_error(errno);
  return text;
}

StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg));
  }
}

}  // namespace topotune
