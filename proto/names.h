// Names of the topotune.v1 enums as the rest of topotune spells them: the
// collective names of the kernel and schedule registries ("alltoall"), the
// alltoallv pattern names of topotune-bench ("uniform"). Servers, agents,
// the CLI and the shim convert through here, so that a name has one
// spelling.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "topotune/v1/agents.pb.h"
#include "topotune/v1/common.pb.h"
#include "topotune/v1/plans.pb.h"

namespace topotune::v1 {

// "alltoall", "alltoallv", "allgather"; "" for UNSPECIFIED or an unknown value.
inline std::string_view CollectiveName(Collective c) {
  switch (c) {
    case COLLECTIVE_ALLTOALL:
      return "alltoall";
    case COLLECTIVE_ALLTOALLV:
      return "alltoallv";
    case COLLECTIVE_ALLGATHER:
      return "allgather";
    default:
      return "";
  }
}

// The inverse of CollectiveName; nullopt for any other name.
inline std::optional<Collective> ParseCollectiveName(std::string_view name) {
  if (name == "alltoall") return COLLECTIVE_ALLTOALL;
  if (name == "alltoallv") return COLLECTIVE_ALLTOALLV;
  if (name == "allgather") return COLLECTIVE_ALLGATHER;
  return std::nullopt;
}

// "uniform", "skewed", "random", "sparse" (UNSPECIFIED reads as uniform); "" for an
// unknown value.
inline std::string_view PatternName(AlltoallvPattern p) {
  switch (p) {
    case ALLTOALLV_PATTERN_UNSPECIFIED:
    case ALLTOALLV_PATTERN_UNIFORM:
      return "uniform";
    case ALLTOALLV_PATTERN_SKEWED:
      return "skewed";
    case ALLTOALLV_PATTERN_RANDOM:
      return "random";
    case ALLTOALLV_PATTERN_SPARSE:
      return "sparse";
    default:
      return "";
  }
}

inline std::optional<AlltoallvPattern> ParsePatternName(std::string_view name) {
  if (name == "uniform") return ALLTOALLV_PATTERN_UNIFORM;
  if (name == "skewed") return ALLTOALLV_PATTERN_SKEWED;
  if (name == "random") return ALLTOALLV_PATTERN_RANDOM;
  if (name == "sparse") return ALLTOALLV_PATTERN_SPARSE;
  return std::nullopt;
}

// "tuned", "nearest", "default", "forced"; "unspecified" for UNSPECIFIED or
// an unknown value.
inline std::string_view DecisionSourceName(DecisionSource s) {
  switch (s) {
    case DECISION_SOURCE_TUNED:
      return "tuned";
    case DECISION_SOURCE_NEAREST:
      return "nearest";
    case DECISION_SOURCE_DEFAULT:
      return "default";
    case DECISION_SOURCE_FORCED:
      return "forced";
    default:
      return "unspecified";
  }
}

}  // namespace topotune::v1
