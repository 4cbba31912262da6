// Prints the kernel catalog (tuner/kernel_catalog.h) for CMake, which
// compiles and runs this at configure time (bench_kernels/CMakeLists.txt) to
// build the test matrices from the one table: a line per kernel, in catalog
// order, "COLLECTIVE:NAME NEEDS_CONTEXT" with NEEDS_CONTEXT 0 or 1.
#include <cstdio>
#include <string>

#include "tuner/kernel_catalog.h"

int main() {
  for (const topotune::CatalogKernel& k : topotune::kKernelCatalog) {
    const std::string entry = std::string(k.collective) + ":" + std::string(k.name);
    std::printf("%s %d\n", entry.c_str(), k.needs_context ? 1 : 0);
  }
  return 0;
}
