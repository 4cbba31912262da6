#include "proto/host_program_wire.h"

#include <utility>

namespace topotune::v1 {

void HostProgramToProto(const HostProgram& program, RankProgram* out) {
  out->set_rank(program.rank);
  for (const auto& [list, wire] :
       {std::pair{&program.sends, out->mutable_sends()}, std::pair{&program.recvs, out->mutable_recvs()}})
    for (const topotune::HostTransfer& t : *list) {
      v1::HostTransfer* w = wire->Add();
      w->set_phase(t.phase);
      w->set_peer(t.peer);
      w->set_offset(t.offset);
      w->set_blocks(t.blocks);
    }
  out->mutable_stream_origin()->Add(program.stream_origin.begin(), program.stream_origin.end());
}

}  // namespace topotune::v1
