// How each collective's registry.cc joins the kernel catalog
// (tuner/kernel_catalog.h: names, descriptions, preferences, context needs)
// with the kernels' functions, at compile time. A registry.cc lists its
// functions by catalog name and writes
//
//   constexpr KernelFunction<AlltoallFn> kFunctions[] = {{"native", &AlltoallNative}, ...};
//   static_assert(JoinsCatalog(Collective::kAlltoall, kFunctions), "...");
//   constexpr auto kTable = JoinCatalog(Collective::kAlltoall, kFunctions);
//
// JoinsCatalog holds when every catalog row of the collective has exactly
// one function and every function names a row, so a kernel added to one side
// only fails the build. JoinCatalog gives the KernelInfo rows in catalog
// order.
//
// Thread-safety: compile-time only.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "bench_kernels/kernel.h"
#include "tuner/kernel_catalog.h"

namespace topotune::kernels::registry_detail {

template <typename Fn>
struct KernelFunction {
  std::string_view name;  // A name of the collective's catalog rows.
  Fn fn;
};

constexpr std::string_view CatalogCollective(Collective c) {
  switch (c) {
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kAlltoallv:
      return "alltoallv";
    case Collective::kAllgather:
      return "allgather";
  }
  return "";
}

template <typename Fn, size_t N>
constexpr bool JoinsCatalog(Collective c, const KernelFunction<Fn> (&functions)[N]) {
  const std::string_view collective = CatalogCollective(c);
  if (CatalogKernelCount(collective) != static_cast<int>(N)) return false;
  for (const KernelFunction<Fn>& f : functions) {
    // Not f.fn == nullptr: with the sanitizers GCC does not take that as a
    // constant expression; kernels_test checks every function is set.
    if (CatalogKernelIndex(collective, f.name) < 0) return false;
    int same = 0;
    for (const KernelFunction<Fn>& g : functions) same += f.name == g.name ? 1 : 0;
    if (same != 1) return false;
  }
  return true;
}

template <typename Fn, size_t N>
constexpr std::array<KernelInfo, N> JoinCatalog(Collective c, const KernelFunction<Fn> (&functions)[N]) {
  const std::string_view collective = CatalogCollective(c);
  std::array<KernelInfo, N> out{};
  size_t i = 0;
  for (const CatalogKernel& row : kKernelCatalog) {
    if (row.collective != collective) continue;
    KernelInfo k{c, row.name, row.description, row.preference, row.needs_context};
    for (const KernelFunction<Fn>& f : functions) {
      if (f.name != row.name) continue;
      if constexpr (std::is_same_v<Fn, AlltoallFn>) k.alltoall = f.fn;
      if constexpr (std::is_same_v<Fn, AlltoallvFn>) k.alltoallv = f.fn;
      if constexpr (std::is_same_v<Fn, AllgatherFn>) k.allgather = f.fn;
    }
    out[i++] = k;
  }
  return out;
}

}  // namespace topotune::kernels::registry_detail
