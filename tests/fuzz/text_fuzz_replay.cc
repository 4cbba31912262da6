// Runs a libFuzzer target on text input without libFuzzer, so that the
// ordinary (and the sanitizer) test pass exercises it. Linked with the
// target's .cc, whose LLVMFuzzerTestOneInput it calls; shared by every text
// fuzz target (daemon/discovery/snmp_walk_fuzz.cc on SNMP walks,
// tuner/topology_fuzz.cc on topology files). Each file of the seed corpus
// runs as is, then its truncations at every tenth, then deterministic
// mutations of it (fixed seed): byte flips; dropped, duplicated and swapped
// lines; a line's value (what follows its first or last separator, one of
// | = : ,) replaced by a dictionary token or cut; a dotted index cut before
// the first separator (an OID's last arc); a dictionary token inserted at a
// random byte. Exits non-zero only if the target crashes or aborts (then the
// sanitizer or the target's message says where).
//
// Usage: text_fuzz_replay CORPUS_DIR [MUTATIONS [DICT]]
//   MUTATIONS per file, default 300. DICT is a libFuzzer dictionary (one
//   "token" or name="token" a line, escapes \\ \" \xAB, # comments), the same
//   file that `-dict=` gives the real fuzzer; without it only cuts are used.
//
// Thread-safety: single-threaded program.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr const char* kSeparators = "|=:,";

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// One dictionary line in libFuzzer's syntax (its ParseOneDictionaryEntry):
// the token between the first and the last double quote.
bool ParseDictLine(const std::string& line, std::string* token) {
  size_t l = line.find('"');
  size_t r = line.find_last_not_of(" \t\r");
  if (l == std::string::npos || r == std::string::npos || r <= l || line[r] != '"') return false;
  token->clear();
  for (size_t i = l + 1; i < r; ++i) {
    if (line[i] != '\\') {
      *token += line[i];
    } else if (i + 1 < r && (line[i + 1] == '\\' || line[i + 1] == '"')) {
      *token += line[++i];
    } else if (i + 3 < r && line[i + 1] == 'x' && std::isxdigit(static_cast<unsigned char>(line[i + 2])) &&
               std::isxdigit(static_cast<unsigned char>(line[i + 3]))) {
      *token += static_cast<char>(std::strtol(line.substr(i + 2, 2).c_str(), nullptr, 16));
      i += 3;
    } else {
      return false;
    }
  }
  return true;
}

// The tokens of a dictionary file, after the empty token (a cut value).
std::vector<std::string> ReadDict(const char* path) {
  std::vector<std::string> tokens{""};
  if (path == nullptr) return tokens;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read the dictionary\n", path);
    std::exit(2);
  }
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::string token;
    if (!ParseDictLine(line, &token)) {
      std::fprintf(stderr, "%s:%d: not a dictionary entry: %s\n", path, n, line.c_str());
      std::exit(2);
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

std::string Mutate(const std::string& text, const std::vector<std::string>& dict, int m, std::mt19937_64& rng) {
  std::string s = text;
  std::vector<std::string> ls = Lines(text);
  switch (m % 6) {
    case 0:  // Flip bytes.
      for (int k = 0; k < 4 && !s.empty(); ++k) s[rng() % s.size()] ^= static_cast<char>(1 + rng() % 255);
      return s;
    case 1:  // Drop lines.
      for (int k = 0; k < 3 && !ls.empty(); ++k) ls.erase(ls.begin() + static_cast<long>(rng() % ls.size()));
      return Join(ls);
    case 2:  // Duplicate and swap lines.
      if (!ls.empty()) {
        ls.push_back(ls[rng() % ls.size()]);
        std::swap(ls[rng() % ls.size()], ls[rng() % ls.size()]);
      }
      return Join(ls);
    case 3:  // A junk value after a line's first or last separator (the whole line if it has none).
      if (!ls.empty()) {
        std::string& l = ls[rng() % ls.size()];
        size_t sep = rng() % 2 ? l.find_first_of(kSeparators) : l.find_last_of(kSeparators);
        l = (sep == std::string::npos ? std::string() : l.substr(0, sep + 1)) + dict[rng() % dict.size()];
      }
      return Join(ls);
    case 4:  // Cut the last dotted part before a line's first separator.
      if (!ls.empty()) {
        std::string& l = ls[rng() % ls.size()];
        size_t sep = l.find_first_of(kSeparators);
        size_t dot = sep == std::string::npos ? std::string::npos : l.rfind('.', sep);
        if (dot != std::string::npos) l.erase(dot, sep - dot);
      }
      return Join(ls);
    default:  // A token inserted at a random byte.
      s.insert(s.empty() ? 0 : rng() % (s.size() + 1), dict[rng() % dict.size()]);
      return s;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS [DICT]]\n", argv[0]);
    return 2;
  }
  const int mutations = argc > 2 ? std::atoi(argv[2]) : 300;
  const std::vector<std::string> dict = ReadDict(argc > 3 ? argv[3] : nullptr);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1]))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // Directory order differs between file systems.
  if (files.empty()) {
    std::fprintf(stderr, "%s: no corpus files\n", argv[1]);
    return 2;
  }
  std::mt19937_64 rng(20261121);
  int runs = 0;
  for (const auto& path : files) {
    const std::string text = ReadFile(path);
    Run(text);
    ++runs;
    for (int i = 1; i <= 10; ++i, ++runs) Run(text.substr(0, text.size() * i / 10));
    for (int m = 0; m < mutations; ++m, ++runs) Run(Mutate(text, dict, m, rng));
  }
  std::printf("%s: %zu files, %d inputs, %zu dictionary tokens, no crash\n", argv[0], files.size(), runs,
              dict.size() - 1);
  return 0;
}
