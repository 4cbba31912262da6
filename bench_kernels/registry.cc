// The kernel registry: one typed table assembled from the per-collective
// tables in alltoall/registry.cc, alltoallv/registry.cc and
// allgather/registry.cc, each the rows of the kernel catalog
// (tuner/kernel_catalog.h, where names, descriptions and preferences live)
// joined with the kernels' functions.
#include <fmt/format.h>

#include <cstdio>
#include <vector>

#include "bench_kernels/kernel.h"
#include "bench_kernels/registry_join.h"
#include "tuner/scheduled_kernels.h"

namespace topotune::kernels {

std::span<const KernelInfo> AlltoallKernels();
std::span<const KernelInfo> AlltoallvKernels();
std::span<const KernelInfo> AllgatherKernels();

std::string_view CollectiveName(Collective c) {
  const std::string_view name = registry_detail::CatalogCollective(c);
  return name.empty() ? "unknown" : name;
}

bool ParseCollective(std::string_view name, Collective* out) {
  for (Collective c : {Collective::kAlltoall, Collective::kAlltoallv, Collective::kAllgather}) {
    if (CollectiveName(c) == name) {
      *out = c;
      return true;
    }
  }
  return false;
}

bool RunsHostProgram(const KernelInfo& k) { return HostCombinedKernel(CollectiveName(k.collective), k.name); }

std::span<const KernelInfo> Kernels() {
  static const std::vector<KernelInfo> all = [] {
    std::vector<KernelInfo> v;
    for (auto table : {AlltoallKernels(), AlltoallvKernels(), AllgatherKernels()})
      v.insert(v.end(), table.begin(), table.end());
    return v;
  }();
  return all;
}

const HostProgram* KernelContext::HostProgramOf(std::string_view kernel) const {
  if (host_programs == nullptr) return nullptr;
  auto it = host_programs->find(kernel);
  return it == host_programs->end() ? nullptr : &it->second;
}

const KernelInfo* FindKernel(Collective c, std::string_view name) {
  for (const KernelInfo& k : Kernels())
    if (k.collective == c && k.name == name) return &k;
  return nullptr;
}

std::string ValidKernels(Collective c) {
  std::string out = fmt::format("valid algorithms for {}:", CollectiveName(c));
  bool first = true;
  for (const KernelInfo& k : Kernels()) {
    if (k.collective != c) continue;
    out += fmt::format("{} {}", first ? "" : ",", k.name);
    first = false;
  }
  return out;
}

void FallbackLog::Record(std::string_view kernel, const std::string& reason) {
  std::string key = fmt::format("{}: {}", kernel, reason);
  ++total_;
  last_ = key;
  if (counts_[key]++ == 0) {
    std::string line = fmt::format("topotune: {} falls back to the MPI library's collective: {}", kernel, reason);
    if (sink)
      sink(line);
    else
      std::fprintf(stderr, "%s\n", line.c_str());
  }
}

namespace {

template <typename Fn, typename Args, typename Native>
int Run(const KernelInfo& k, Fn fn, const Args& a, const KernelContext& ctx, FallbackLog* log, Native native) {
  if (fn == nullptr) {
    if (log) log->Record(k.name, "kernel does not implement this collective");
    return native(a);
  }
  KernelStatus st = fn(a, ctx);
  if (st.done()) return MPI_SUCCESS;
  if (st.fallback()) {
    if (log) log->Record(k.name, st.reason());
    return native(a);
  }
  return st.mpi_error();
}

}  // namespace

int RunAlltoall(const KernelInfo& k, const AlltoallArgs& a, const KernelContext& ctx, FallbackLog* log) {
  return Run(k, k.alltoall, a, ctx, log, [](const AlltoallArgs& x) {
    return PMPI_Alltoall(x.sendbuf, x.sendcount, x.sendtype, x.recvbuf, x.recvcount, x.recvtype, x.comm);
  });
}

int RunAlltoallv(const KernelInfo& k, const AlltoallvArgs& a, const KernelContext& ctx, FallbackLog* log) {
  return Run(k, k.alltoallv, a, ctx, log, [](const AlltoallvArgs& x) {
    return PMPI_Alltoallv(x.sendbuf, x.sendcounts, x.sdispls, x.sendtype, x.recvbuf, x.recvcounts, x.rdispls,
                          x.recvtype, x.comm);
  });
}

int RunAllgather(const KernelInfo& k, const AllgatherArgs& a, const KernelContext& ctx, FallbackLog* log) {
  return Run(k, k.allgather, a, ctx, log, [](const AllgatherArgs& x) {
    return PMPI_Allgather(x.sendbuf, x.sendcount, x.sendtype, x.recvbuf, x.recvcount, x.recvtype, x.comm);
  });
}

}  // namespace topotune::kernels
