// Recorded SNMP walks: the text that snmpsimd serves (.snmprec, "OID|TAG|VALUE")
// and the text that `snmpwalk -On` prints (".1.3.6... = STRING: x"). Discovery
// parses and builds trees from these exactly as from a live switch, so a
// user's bug report (one walk per switch) becomes a test with no socket.
//
// Bad lines never abort a parse: each becomes a warning naming the source,
// the line and the reason, and the rest of the walk is kept. Warnings of one
// kind (one reason, or duplicate OIDs) are folded after the first few into a
// line with their count (WarningLog).
//
// Thread-safety: pure functions; a RecordedSource is immutable after
// construction and may be walked from many threads.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/discovery/snmp_source.h"
#include "daemon/discovery/snmp_types.h"
#include "tuner/status.h"

namespace topotune::discovery {

struct ParsedWalk {
  std::vector<VarBind> vars;          // Sorted by OID, duplicates removed (the first kept).
  std::vector<std::string> warnings;  // "FILE:LINE: reason", then "FILE: KIND: N more like these (M in all)".
  int lines = 0;                      // Lines read, blank and comment lines included; 0 for an empty text.
};

// Parses .snmprec text: "OID|TAG|VALUE" where TAG is the ASN.1 type number,
// optionally with 'x' (hex value) or 'e' (Python-escaped value).
ParsedWalk ParseSnmprec(std::string_view text, std::string_view source);
// Parses `snmpwalk -On` (or -Onx, -OnQ) output, with multi-line values.
ParsedWalk ParseSnmpwalkOutput(std::string_view text, std::string_view source);
// Either format, told apart by the first line that is not blank or a comment.
ParsedWalk ParseRecordedWalk(std::string_view text, std::string_view source);
// Reads and parses a file; IoError when it cannot be read.
StatusOr<ParsedWalk> LoadRecordedWalk(const std::string& path);

// Writes `vars` as .snmprec text (OID-sorted), values hex-encoded when not
// plain alphanumeric text, so that a live walk can be saved and replayed.
std::string FormatSnmprec(const std::vector<VarBind>& vars);

// An SnmpSource over a recorded walk: Walk() returns the recorded rows under
// the requested roots, as a live agent would, and counts one request per root.
class RecordedSource : public SnmpSource {
 public:
  RecordedSource(std::string name, std::vector<VarBind> vars);
  StatusOr<std::vector<VarBind>> Walk(const std::vector<Oid>& roots) override;
  std::string name() const override { return name_; }
  int64_t requests() const override { return requests_; }

 private:
  std::string name_;
  std::vector<VarBind> vars_;  // Sorted.
  int64_t requests_ = 0;
};

}  // namespace topotune::discovery
