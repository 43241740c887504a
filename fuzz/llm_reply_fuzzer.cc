// libFuzzer target for the assistant's reading of a model's reply: any bytes must parse
// into a ChatReply or fail with a Status (never throw or crash), an accepted reply keeps
// the parser's caps, and every tool call it carries goes through the toolbox's argument
// checks to a result that is valid JSON within the result cap, over a store holding one
// observation of the node asked about (so the tools read and render rows, not only "no node
// data") and no diagnosis (so no proposal may be accepted).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "assistant/llm_client.h"
#include "assistant/tools.h"
#include "core/json.h"
#include "core/types.h"
#include "store/store.h"

namespace {

constexpr char kNode[] = "fuzz-node";
constexpr int64_t kObservedNs = int64_t{1'767'225'600} * 1'000'000'000;  // fixed: every run alike

// A kernel line as the agent stores it: the tools' row readers and raw-line rendering see data.
faultline::Observation NodeObservation() {
  faultline::Observation o;
  o.time_ns = kObservedNs;
  o.node = kNode;
  o.layer = faultline::Layer::kGpu;
  o.component = faultline::GpuComponent("0");
  o.kind = faultline::ObsKind::kXid;
  o.code = 79;
  o.source = faultline::Source::kKmsg;
  o.text = "Xid 79: GPU has fallen off the bus";
  o.raw = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.";
  return o;
}

// Built once: no tool writes to the store, so every input sees the same one row.
faultline::Store* FuzzStore() {
  static std::unique_ptr<faultline::Store> store = [] {
    auto s = faultline::Store::Open(":memory:");
    if (!s.ok()) std::abort();
    if (!(*s)->Append({NodeObservation()}).ok()) std::abort();
    return std::move(s).value();
  }();
  return store.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto reply = faultline::assistant::ParseChatReply(text, 1 << 20);
  if (!reply.ok()) return 0;
  const auto& calls = reply->message.tool_calls;
  if (calls.size() > faultline::assistant::kMaxToolCallsPerReply) std::abort();
  faultline::assistant::ToolContext ctx;
  ctx.store = FuzzStore();
  ctx.node = kNode;
  ctx.now_ns = kObservedNs + int64_t{3600} * 1'000'000'000;  // "since: 2h" reaches the row
  ctx.max_result_bytes = 4096;
  faultline::assistant::Toolbox tools(ctx);
  for (const auto& call : calls) {
    if (call.name.empty() || call.id.empty()) std::abort();
    auto result = tools.Call(call.name, call.arguments);
    if (result.content.size() > ctx.max_result_bytes) std::abort();
    if (faultline::Json::parse(result.content, nullptr, false).is_discarded()) std::abort();
    if (result.proposal && result.proposal->accepted) std::abort();  // nothing is diagnosed here
  }
  return 0;
}
