// libFuzzer target: arbitrary text as `scontrol show node -o` and `sinfo -h -N -o
// %N|%T|%H|%E` output (what a broken or hostile Slurm could print). Bad output must become an
// error, never a crash; a parsed node keeps its invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "actions/slurm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline::actions;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto node = ParseScontrolNode(text);
  if (node.ok() && (node->name.empty() || node->state.empty())) std::abort();
  auto nodes = ParseSinfoNodes(text);
  if (nodes.ok()) {
    for (const SlurmNode& n : *nodes) {
      if (n.name.empty()) std::abort();
      (void)n.Drained();
      (void)IsFaultlineReason(n.reason);
    }
  }
  (void)ParseSlurmTime(text.substr(0, 64));
  return 0;
}
