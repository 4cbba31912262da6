// Runs the libFuzzer target snmp_walk_fuzz.cc without libFuzzer, so that the
// ordinary (and the sanitizer) test pass exercises it: every file of the seed
// corpus (fuzz_corpus/) as is, then deterministic mutations of each: byte
// flips, truncations at every tenth of the file, dropped, duplicated and
// swapped lines, and junk values. Usage: snmp_walk_fuzz_replay CORPUS_DIR
// [MUTATIONS]. Exits non-zero only if the target crashes (then the sanitizer
// or the signal says where).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n", argv[0]);
    return 2;
  }
  int mutations = argc > 2 ? std::atoi(argv[2]) : 300;
  std::mt19937_64 rng(20261121);
  static const char* const kJunk[] = {"",
                                      "|",
                                      "4x|zz",
                                      "2|-",
                                      "66|99999999999999999999",
                                      "6|1..2",
                                      "64|300.1.1.1",
                                      "4e|\\x",
                                      "4|\xff\xfe",
                                      "2|2147483648",
                                      "70|-1",
                                      "1.3.6|4"};
  int runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Run(text);
    ++runs;
    for (int i = 1; i <= 10; ++i, ++runs) Run(text.substr(0, text.size() * i / 10));
    std::vector<std::string> lines = Lines(text);
    for (int m = 0; m < mutations; ++m, ++runs) {
      std::string s = text;
      std::vector<std::string> ls = lines;
      switch (m % 5) {
        case 0:  // Flip bytes.
          for (int k = 0; k < 4 && !s.empty(); ++k) s[rng() % s.size()] ^= static_cast<char>(1 + rng() % 255);
          Run(s);
          break;
        case 1:  // Drop lines.
          for (int k = 0; k < 3 && !ls.empty(); ++k) ls.erase(ls.begin() + static_cast<long>(rng() % ls.size()));
          Run(Join(ls));
          break;
        case 2:  // Duplicate and swap lines.
          if (!ls.empty()) {
            ls.push_back(ls[rng() % ls.size()]);
            std::swap(ls[rng() % ls.size()], ls[rng() % ls.size()]);
          }
          Run(Join(ls));
          break;
        case 3:  // Junk value on a line.
          if (!ls.empty()) {
            std::string& l = ls[rng() % ls.size()];
            size_t bar = l.find('|');
            l = (bar == std::string::npos ? l : l.substr(0, bar + 1)) + kJunk[rng() % std::size(kJunk)];
          }
          Run(Join(ls));
          break;
        default:  // Truncate an OID index.
          if (!ls.empty()) {
            std::string& l = ls[rng() % ls.size()];
            size_t bar = l.find('|');
            size_t dot = bar == std::string::npos ? std::string::npos : l.rfind('.', bar);
            if (dot != std::string::npos) l.erase(dot, bar - dot);
          }
          Run(Join(ls));
          break;
      }
    }
  }
  std::printf("snmp_walk_fuzz_replay: %d inputs, no crash\n", runs);
  return 0;
}
