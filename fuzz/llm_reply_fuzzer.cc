// libFuzzer target for the assistant's reading of a model's reply: any bytes must parse
// into a ChatReply or fail with a Status (never throw or crash), an accepted reply keeps
// the parser's caps, and every tool call it carries goes through the toolbox's argument
// checks to a result that is valid JSON within the result cap, over an empty store.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "assistant/llm_client.h"
#include "assistant/tools.h"
#include "core/json.h"
#include "store/store.h"

namespace {

faultline::Store* FuzzStore() {
  static std::unique_ptr<faultline::Store> store = [] {
    auto s = faultline::Store::Open(":memory:");
    if (!s.ok()) std::abort();
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
  ctx.node = "fuzz-node";
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
