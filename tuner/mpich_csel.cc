#include "tuner/mpich_csel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "tuner/topology.h"

namespace topotune {
namespace {

// Key order is MPICH's evaluation order, so never the sorting nlohmann::json.
using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kMpichPrefix = "mpich:";
constexpr std::string_view kOmpiPrefix = "ompi:";
constexpr std::string_view kCollectiveKey = "collective=";
constexpr char kIntraKey[] = "comm_type=intra";
constexpr char kInPlaceKey[] = "is_sendbuf_inplace=yes";
// MPICH parses the number of a size key with atoi into an int.
constexpr double kMaxCselValue = INT_MAX;
// The base is checked (and later written) recursively: a bound on its depth
// bounds the stack.
constexpr int kMaxBaseDepth = 64;
// Keys of one object of the base.
constexpr size_t kMaxBaseKeys = 1024;

// An MPICH algorithm a table may name as "mpich:<name>" (4.0.2:
// csel_container.c, the algorithm= keys it accepts; coll_algorithms.txt, the
// restrictions).
struct MpichAlgorithm {
  std::string_view name;      // After "mpich:".
  std::string_view function;  // The algorithm= key's value.
  // MPIR_Allgather_intra_recursive_doubling asserts on other communicator
  // sizes: written behind comm_size=pow2, the base's choice elsewhere.
  bool pow2_only = false;
  // The *_pairwise_sendrecv_replace algorithms exchange recvbuf in place and
  // ignore sendbuf; MPICH runs them only for MPI_IN_PLACE.
  bool in_place_only = false;
};

// A topotune kernel that MPICH has a counterpart of.
struct Counterpart {
  std::string_view topotune;  // The kernel's registry name.
  std::string_view mpich;     // MpichAlgorithm::name.
  std::string_view how;       // How close it is, for the note.
};

enum class SizeKey {
  kAvg,    // avg_msg_size: bytes per block.
  kTotal,  // total_msg_size: bytes per block x communicator size.
  kNone,   // Sizes local to each rank: one algorithm per communicator size only.
};

struct MpichCollective {
  std::string_view name;
  SizeKey size_key;
  bool in_place_branch;  // The base's in-place branch goes first.
  std::span<const MpichAlgorithm> algorithms;
  std::span<const Counterpart> counterparts;
};

constexpr MpichAlgorithm kAlltoall[] = {
    {"brucks", "MPIR_Alltoall_intra_brucks"},
    {"pairwise", "MPIR_Alltoall_intra_pairwise"},
    {"scattered", "MPIR_Alltoall_intra_scattered"},
    {"allcomm_nb", "MPIR_Alltoall_allcomm_nb"},
    {"pairwise_sendrecv_replace", "MPIR_Alltoall_intra_pairwise_sendrecv_replace", false, true},
};
constexpr MpichAlgorithm kAlltoallv[] = {
    {"scattered", "MPIR_Alltoallv_intra_scattered"},
    {"allcomm_nb", "MPIR_Alltoallv_allcomm_nb"},
    {"pairwise_sendrecv_replace", "MPIR_Alltoallv_intra_pairwise_sendrecv_replace", false, true},
};
constexpr MpichAlgorithm kAllgather[] = {
    {"brucks", "MPIR_Allgather_intra_brucks"},
    {"recursive_doubling", "MPIR_Allgather_intra_recursive_doubling", true},
    {"ring", "MPIR_Allgather_intra_ring"},
    {"allcomm_nb", "MPIR_Allgather_allcomm_nb"},
};

constexpr std::string_view kSameExchange = "the same exchange";
constexpr std::string_view kThrottled =
    "the closest: its sends and receives go in blocks of MPIR_CVAR_ALLTOALL_THROTTLE (default 32) with staggered "
    "partners";
constexpr Counterpart kAlltoallCounterparts[] = {
    {"pairwise", "pairwise", kSameExchange},
    {"bruck", "brucks", kSameExchange},
    {"linear", "scattered", kThrottled},
};
constexpr Counterpart kAlltoallvCounterparts[] = {{"linear", "scattered", kThrottled}};
constexpr Counterpart kAllgatherCounterparts[] = {
    {"ring", "ring", kSameExchange},
    {"recursive_doubling", "recursive_doubling", "the same exchange on powers of two"},
};

// In the order the sets are written.
constexpr MpichCollective kCollectives[] = {
    {"alltoall", SizeKey::kAvg, true, kAlltoall, kAlltoallCounterparts},
    {"alltoallv", SizeKey::kNone, true, kAlltoallv, kAlltoallvCounterparts},
    {"allgather", SizeKey::kTotal, false, kAllgather, kAllgatherCounterparts},
};

// The entry of `table` whose `name` is `name`, or nullptr.
template <typename Entry>
const Entry* Named(std::span<const Entry> table, std::string_view name) {
  auto it = std::ranges::find(table, name, &Entry::name);
  return it == table.end() ? nullptr : &*it;
}

const MpichCollective* FindCollective(std::string_view name) {
  return Named(std::span<const MpichCollective>(kCollectives), name);
}

std::string FormatRange(double lo, double hi) {
  return fmt::format("[{}, {})", FormatBytes(lo), std::isinf(hi) ? std::string("inf") : FormatBytes(hi));
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// A stretch of whole block sizes [lo, hi) (hi may be infinite) and the
// subtree MPICH evaluates there.
struct Segment {
  double lo = 0;
  double hi = 0;
  const MpichAlgorithm* algorithm = nullptr;  // nullptr: the base's intra branch.
  std::vector<std::string> origins;           // For the base's: what topotune had there.
};

std::string SegmentLabel(const Segment& s) {
  return s.algorithm == nullptr ? fmt::format("MPICH's own selection ({})", Joined(s.origins))
                                : std::string(s.algorithm->function);
}

// Copies of the base's intra branch the segment's subtree holds.
int IntraCopies(const Segment& s) { return s.algorithm == nullptr || s.algorithm->pow2_only ? 1 : 0; }

OrderedJson Leaf(std::string_view function) {
  OrderedJson leaf = OrderedJson::object();
  leaf["algorithm=" + std::string(function)] = OrderedJson::object();
  return leaf;
}

// The subtree MPICH evaluates in a segment; `intra` is the base's intra
// branch.
OrderedJson SegmentTree(const Segment& s, const OrderedJson& intra) {
  if (s.algorithm == nullptr) return intra;
  if (!s.algorithm->pow2_only) return Leaf(s.algorithm->function);
  OrderedJson guarded = OrderedJson::object();
  guarded["comm_size=pow2"] = Leaf(s.algorithm->function);
  guarded["comm_size=any"] = intra;
  return guarded;
}

// The segments of one set's table, covering [0, inf), adjacent equal
// subtrees merged.
StatusOr<std::vector<Segment>> BuildSegments(const OmpiRuleSet& set, const MpichCollective& coll,
                                             const std::string& where, std::vector<std::string>* notes) {
  TOPOTUNE_RETURN_IF_ERROR(CheckRuleSetRanges(set, where));
  auto base = [](double lo, double hi, std::string origin) { return Segment{lo, hi, nullptr, {std::move(origin)}}; };
  std::vector<Segment> segments;
  double cursor = 0;
  for (const DecisionRange& r : set.table) {
    // Block sizes are whole bytes: b >= min exactly when b >= ceil(min).
    const double lo = std::ceil(r.min_msize);
    const double hi = std::isinf(r.max_msize) ? r.max_msize : std::ceil(r.max_msize);
    const std::string& name = r.algorithm;
    const std::string range = FormatRange(lo, hi);
    const MpichAlgorithm* a = nullptr;
    if (name.starts_with(kMpichPrefix)) {
      a = Named(coll.algorithms, std::string_view(name).substr(kMpichPrefix.size()));
      if (a == nullptr || a->in_place_only) {
        std::string valid;
        for (const MpichAlgorithm& v : coll.algorithms)
          if (!v.in_place_only) valid += fmt::format("{}{}{}", valid.empty() ? "" : ", ", kMpichPrefix, v.name);
        return Status::InvalidArgument(fmt::format(
            "{} {}: {} MPICH {} algorithm '{}'; valid: native, {}", where, range,
            a == nullptr ? "unknown" : "in-place only (it ignores the send buffer)", coll.name, name, valid));
      }
    }
    if (lo >= hi) continue;  // Holds no whole number of bytes.
    if (lo > cursor) {
      notes->push_back(
          fmt::format("{} {}: no decision; MPICH's own selection is used there", where, FormatRange(cursor, lo)));
      segments.push_back(base(cursor, lo, "no decision"));
    }
    auto twin_it = std::ranges::find(coll.counterparts, name, &Counterpart::topotune);
    const Counterpart* twin = twin_it == coll.counterparts.end() ? nullptr : &*twin_it;
    if (twin != nullptr) {
      a = Named(coll.algorithms, twin->mpich);
      notes->push_back(
          fmt::format("{} {}: {} is a topotune algorithm; MPICH's {} ({}) is used there "
                      "(libtopotune-mpich.so runs topotune's own)",
                      where, range, name, a->function, twin->how));
    }
    if (a != nullptr) {
      if (a->pow2_only)
        notes->push_back(fmt::format(
            "{} {}: {} only works on a power of two ranks; other communicator sizes{} get "
            "MPICH's own selection there",
            where, range, a->function, (set.comm_size & (set.comm_size - 1)) != 0 ? " (this one among them)" : ""));
      segments.push_back({lo, hi, a, {}});
    } else {
      if (name.starts_with(kOmpiPrefix))
        notes->push_back(
            fmt::format("{} {}: {} is an Open MPI algorithm; MPICH's own selection is used there", where, range, name));
      else if (name != "native")
        notes->push_back(
            fmt::format("{} {}: {} is a topotune algorithm; only libtopotune-mpich.so runs it; MPICH's "
                        "own selection is used there",
                        where, range, name));
      segments.push_back(base(lo, hi, name));
    }
    cursor = hi;
  }
  if (!std::isinf(cursor)) {
    const double inf = std::numeric_limits<double>::infinity();
    notes->push_back(
        fmt::format("{} {}: no decision; MPICH's own selection is used there", where, FormatRange(cursor, inf)));
    segments.push_back(base(cursor, inf, "no decision"));
  }

  std::vector<Segment> merged = rules_detail::MergeAdjacent(
      std::move(segments), [](const Segment& a, const Segment& b) { return a.algorithm == b.algorithm; });
  if (coll.size_key == SizeKey::kNone && merged.size() > 1) {
    std::vector<std::string> table;
    for (const Segment& s : merged) table.push_back(fmt::format("{} {}", FormatRange(s.lo, s.hi), SegmentLabel(s)));
    notes->push_back(fmt::format(
        "{}: the table changes algorithm with the message size ({}), but {} sizes differ between ranks, which could "
        "then choose different algorithms; MPICH's own selection is used",
        where, fmt::join(table, "; "), coll.name));
    merged = {base(0, std::numeric_limits<double>::infinity(), "the table varies with size")};
  }
  return merged;
}

// The message-size chain of one set: its segments' subtrees behind
// `avg_msg_size<B` or `total_msg_size<B` keys, ending in `=any`.
OrderedJson SizeChain(const std::vector<Segment>& segments, const MpichCollective& coll, int comm_size,
                      const OrderedJson& intra, const std::string& where, std::vector<std::string>* notes) {
  if (segments.size() == 1) return SegmentTree(segments.front(), intra);
  const std::string key = coll.size_key == SizeKey::kTotal ? "total_msg_size" : "avg_msg_size";
  const double scale = coll.size_key == SizeKey::kTotal ? comm_size : 1;
  OrderedJson chain = OrderedJson::object();
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    const double bound = s.hi * scale;
    if (i + 1 == segments.size()) {
      chain[key + "=any"] = SegmentTree(s, intra);
    } else if (bound > kMaxCselValue) {
      std::vector<std::string> dropped;
      for (size_t k = i + 1; k < segments.size(); ++k)
        dropped.push_back(fmt::format("{} {}", FormatRange(segments[k].lo, segments[k].hi), SegmentLabel(segments[k])));
      notes->push_back(fmt::format(
          "{}: the boundary at {} per block is {} {:.0f} bytes, more than the 2^31-1 MPICH can read (it parses sizes "
          "as "
          "int), so {} is used from {} up, and these ranges are left out: {}",
          where, FormatBytes(s.hi), key, bound, SegmentLabel(s), FormatBytes(s.lo), fmt::join(dropped, "; ")));
      chain[key + "=any"] = SegmentTree(s, intra);
      break;
    } else {
      chain[fmt::format("{}<{}", key, static_cast<int64_t>(bound))] = SegmentTree(s, intra);
    }
  }
  return chain;
}

// `text` from a base, for a message: one line of printable ASCII, other
// bytes as \xNN, cut after 64 bytes, in quotes unless `quoted` is false.
std::string Printable(std::string_view text, bool quoted = true) {
  constexpr size_t kMaxShown = 64;
  std::string out = quoted ? "\"" : "";
  for (const char ch : text.substr(0, quoted ? kMaxShown : text.size())) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  if (quoted) out += text.size() > kMaxShown ? "\"..." : "\"";
  return out;
}

// Every value an object (MPICH asserts so), nested at most kMaxBaseDepth
// deep with at most kMaxBaseKeys keys per object, and whether some key names
// an MPIR_ algorithm. `path` names the place for messages.
Status CheckTree(const nlohmann::json& tree, const std::string& path, int depth, bool* mpir) {
  if (depth > kMaxBaseDepth)
    return Status::InvalidArgument(fmt::format(
        "the MPICH base nests objects more than {} deep{}; MPICH's trees are about 8 deep", kMaxBaseDepth, path));
  if (tree.size() > kMaxBaseKeys)
    return Status::InvalidArgument(
        fmt::format("the MPICH base has an object of {} keys{}, more than {}; MPICH's have "
                    "about 10",
                    tree.size(), path, kMaxBaseKeys));
  for (const auto& [key, value] : tree.items()) {
    if (!value.is_object())
      return Status::InvalidArgument(
          fmt::format("the MPICH base: the value of {}{} is not an object; MPICH's selection JSON has only objects",
                      Printable(key), path));
    *mpir = *mpir || key.starts_with("algorithm=MPIR_");
    TOPOTUNE_RETURN_IF_ERROR(CheckTree(value, " in " + Printable(key), depth + 1, mpir));
  }
  return Status::Ok();
}

StatusOr<OrderedJson> ParseBase(std::string_view base_json) {
  // Checked as a plain (key-sorted) json first: ordered_json finds a key by
  // a linear search, so reading an object of many keys takes quadratic time.
  nlohmann::json plain;
  try {
    plain = nlohmann::json::parse(base_json);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(fmt::format("the MPICH base is not JSON: {}", Printable(e.what(), false)));
  }
  if (!plain.is_object() || plain.empty())
    return Status::InvalidArgument("the MPICH base is not a JSON object of \"collective=NAME\" keys");
  for (const auto& [key, value] : plain.items())
    if (!key.starts_with(kCollectiveKey))
      return Status::InvalidArgument(fmt::format(
          "the MPICH base: the top-level key {} does not start with \"collective=\"; is it a selection file?",
          Printable(key)));
  bool mpir = false;
  TOPOTUNE_RETURN_IF_ERROR(CheckTree(plain, "", 1, &mpir));
  if (!mpir)
    return Status::InvalidArgument(
        "the MPICH base names no MPIR_ algorithm: it is not MPICH's MPIR tree (the CH4 tree of MPIDI_ compositions, "
        "also built into libmpich.so, is not a base)");
  return OrderedJson::parse(base_json);  // In file order now; it parsed above.
}

// One collective's sets, ascending in communicator size.
struct CollectiveSets {
  const MpichCollective* collective = nullptr;
  std::vector<const OmpiRuleSet*> sets;
};

StatusOr<std::vector<CollectiveSets>> Group(const std::vector<OmpiRuleSet>& sets, std::vector<std::string>* notes) {
  std::vector<CollectiveSets> groups;
  for (const MpichCollective& c : kCollectives) groups.push_back({&c, {}});
  for (const OmpiRuleSet& s : sets) {
    const MpichCollective* coll = FindCollective(s.collective);
    if (coll == nullptr) {
      std::vector<std::string> valid;
      for (const MpichCollective& c : kCollectives) valid.emplace_back(c.name);
      return Status::InvalidArgument(fmt::format(
          "unknown collective '{}'; MPICH selection files can be written for: {}", s.collective, Joined(valid)));
    }
    const std::string where = fmt::format("{} comm size {}", s.collective, s.comm_size);
    if (s.comm_size < 2) return Status::InvalidArgument(where + ": a communicator size is at least 2");
    if (s.max_requests != 0)
      notes->push_back(
          fmt::format("{}: max_requests {} is an Open MPI parameter; MPICH has none (ignored)", where, s.max_requests));
    groups[coll - kCollectives].sets.push_back(&s);
  }
  for (CollectiveSets& g : groups) {
    std::stable_sort(g.sets.begin(), g.sets.end(),
                     [](const OmpiRuleSet* a, const OmpiRuleSet* b) { return a->comm_size < b->comm_size; });
    for (size_t i = 1; i < g.sets.size(); ++i)
      if (g.sets[i]->comm_size == g.sets[i - 1]->comm_size)
        return Status::InvalidArgument(
            fmt::format("{} comm size {}: given twice", g.collective->name, g.sets[i]->comm_size));
  }
  std::erase_if(groups, [](const CollectiveSets& g) { return g.sets.empty(); });
  return groups;
}

// The base's subtree of one collective with its intra branch replaced by
// the tables of `group`.
StatusOr<OrderedJson> CollectiveTree(const CollectiveSets& group, const OrderedJson& base_tree,
                                     std::vector<std::string>* notes) {
  const MpichCollective& coll = *group.collective;
  const bool has_intra = base_tree.contains(kIntraKey);
  const OrderedJson& intra = has_intra ? base_tree.at(kIntraKey) : base_tree;

  // The segments of every set first: the intra branch is copied into the
  // file once per segment of MPICH's own choice, which must stay bounded.
  std::vector<std::vector<Segment>> per_set;
  int64_t copies = 2;  // The in-place branch and comm_size=any.
  for (const OmpiRuleSet* set : group.sets) {
    auto segments = BuildSegments(*set, coll, fmt::format("{} comm size {}", coll.name, set->comm_size), notes);
    if (!segments.ok()) return segments.status();
    for (const Segment& s : *segments) copies += IntraCopies(s);
    per_set.push_back(std::move(*segments));
  }
  const int64_t intra_bytes = static_cast<int64_t>(intra.dump().size());
  if (copies * intra_bytes > kMaxMpichCselBytes)
    return Status::InvalidArgument(fmt::format(
        "{}: the file would hold the base's {}-byte {} branch {} times, more than the {} bytes allowed; is the base "
        "MPICH's MPIR tree?",
        coll.name, intra_bytes, has_intra ? kIntraKey : "collective", copies, kMaxMpichCselBytes));

  OrderedJson replaced = OrderedJson::object();
  if (coll.in_place_branch) replaced[kInPlaceKey] = intra.contains(kInPlaceKey) ? intra.at(kInPlaceKey) : intra;
  for (size_t i = 0; i < group.sets.size(); ++i) {
    const OmpiRuleSet& set = *group.sets[i];
    const std::string where = fmt::format("{} comm size {}", coll.name, set.comm_size);
    // Up to the next size listed; the last up to its own size.
    const int upto = i + 1 < group.sets.size() ? group.sets[i + 1]->comm_size - 1 : set.comm_size;
    replaced[fmt::format("comm_size<={}", upto)] = SizeChain(per_set[i], coll, set.comm_size, intra, where, notes);
  }
  replaced["comm_size=any"] = intra;
  notes->push_back(
      fmt::format("{}: communicators of more than {} ranks (the largest size tuned) keep MPICH's own "
                  "selection",
                  coll.name, group.sets.back()->comm_size));

  if (has_intra) {
    OrderedJson tree = base_tree;
    tree[kIntraKey] = std::move(replaced);  // Keeps the key's place.
    return tree;
  }
  OrderedJson tree = OrderedJson::object();
  tree[kIntraKey] = std::move(replaced);
  tree["comm_type=inter"] = base_tree;
  return tree;
}

}  // namespace

Status CheckMpichBase(std::string_view base_json) { return ParseBase(base_json).status(); }

StatusOr<MpichCselExport> ExportMpichCsel(const std::vector<OmpiRuleSet>& sets, std::string_view base_json) {
  auto root = ParseBase(base_json);
  if (!root.ok()) return root.status();
  MpichCselExport out;
  auto groups = Group(sets, &out.notes);
  if (!groups.ok()) return groups.status();
  for (const CollectiveSets& g : *groups) {
    const std::string key = std::string(kCollectiveKey) + std::string(g.collective->name);
    if (!root->contains(key))
      return Status::InvalidArgument(fmt::format(
          "the MPICH base has no \"{}\"; MPICH asserts on a collective its selection file does not name, so the base "
          "must be MPICH's whole MPIR tree",
          key));
    auto tree = CollectiveTree(g, (*root)[key], &out.notes);
    if (!tree.ok()) return tree.status();
    (*root)[key] = std::move(*tree);
  }
  out.text = root->dump(2) + "\n";
  return out;
}

StatusOr<std::string> ExtractMpichBase(std::string_view library_bytes, std::string_view name) {
  constexpr std::string_view kStart = "{\"collective=";
  int rejected = 0;
  Status last;
  for (size_t pos = library_bytes.find(kStart); pos != std::string_view::npos;
       pos = library_bytes.find(kStart, pos + 1)) {
    const size_t end = library_bytes.find('\0', pos);
    const std::string_view text = library_bytes.substr(pos, end == std::string_view::npos ? end : end - pos);
    if (text.find("\"algorithm=MPIR_") == std::string_view::npos) continue;  // CH4's tree, or not a tree.
    Status st = CheckMpichBase(text);
    if (st.ok()) return std::string(text);
    ++rejected;
    last = std::move(st);
  }
  if (rejected > 0)
    return Status::NotFound(fmt::format("{}: {} string(s) looking like MPICH's MPIR selection tree, none usable: {}",
                                        name, rejected, last.message()));
  return Status::NotFound(
      fmt::format("{}: no MPICH MPIR selection tree in it (a string starting with {} that names "
                  "MPIR_ algorithms); is it MPICH 4's libmpich.so?",
                  name, kStart));
}

}  // namespace topotune
