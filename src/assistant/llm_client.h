// An OpenAI-compatible chat-completions client with tool calling (docs/assistant.md "Ask"):
// POST {url}/chat/completions with the messages, the tools as JSON schemas, and the model
// name; the answer is one assistant message (text and/or tool calls) and a finish_reason.
// Works with llama.cpp's server, vLLM, Ollama and hosted APIs that speak this dialect.
//
// Contract:
//  - The model's reply is untrusted input: ParseChatReply bounds its size and nesting and
//    turns malformed JSON, missing fields and wrong types into kCorrupt with the reason; it
//    never throws. A tool call's `arguments` stay the raw text the model sent (the tool
//    layer validates them), so a model that sends bad arguments gets an error as its tool
//    result rather than failing the whole answer.
//  - The API key comes from a file (first line; refused when group/others can read it) and
//    is sent only as "Authorization: Bearer"; it is never logged and never part of an error
//    message or a reply: wherever a server or model echoes it (or a value in
//    LlmConfig::secrets) verbatim, in an error, the reply's text or a tool call, it is
//    replaced by "[redacted]" before the caller sees it (and so before any transcript).
//  - Plain http:// is refused unless the host is loopback (127.0.0.0/8, ::1, localhost) or
//    LlmConfig::allow_http is set: the key and the node's data would cross in clear.
//  - TLS verification is on (the HttpClient's own policy); replies over max_reply_bytes are
//    refused with a clear error; every request has a timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "sources/redfish/http_client.h"

namespace faultline::assistant {

struct ToolCall {
  std::string id;         // the model's id for this call; echoed in the tool message
  std::string name;       // function name
  std::string arguments;  // raw JSON text of the arguments, as the model sent it
  bool operator==(const ToolCall&) const = default;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant messages only
  std::string tool_call_id;          // tool messages only
  std::string name;                  // tool messages: the tool's name
  bool operator==(const ChatMessage&) const = default;
};

struct ToolSpec {
  std::string name;
  std::string description;
  Json parameters;  // JSON schema of the arguments object
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::vector<ToolSpec> tools;
  int max_tokens = 1024;   // completion tokens for this reply
  int64_t timeout_ms = 0;  // 0 = the client's own timeout; else the smaller of the two
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t total_tokens = 0;
  bool reported = false;  // the server sent a usage object
};

struct ChatReply {
  ChatMessage message;        // role "assistant"
  std::string finish_reason;  // "stop", "tool_calls", "length", ... ("" when absent)
  Usage usage;
};

// Limits on what a reply may be before it is parsed.
inline constexpr size_t kDefaultMaxReplyBytes = size_t{4} << 20;
inline constexpr int kMaxReplyDepth = 64;
inline constexpr size_t kMaxToolCallsPerReply = 32;

// The request body for `model` (OpenAI chat-completions dialect, temperature 0).
Json ChatRequestJson(const ChatRequest& request, const std::string& model);
// One message as the API expects it (also the transcript's form).
Json ChatMessageJson(const ChatMessage& message);

// Parses a chat-completions response body: choices[0].message (content string or null,
// tool_calls[] of {id, type "function", function {name, arguments}}), finish_reason and
// usage. Arguments sent as a JSON object instead of a string are accepted (re-serialised).
Result<ChatReply> ParseChatReply(std::string_view body, size_t max_bytes = kDefaultMaxReplyBytes);

// What the ask loop talks to: the HTTP client below, or a test's scripted model.
class ChatModel {
 public:
  virtual ~ChatModel() = default;
  virtual Result<ChatReply> Complete(const ChatRequest& request) = 0;
  // For the transcript ("" when not known).
  virtual std::string ModelName() const { return ""; }
};

struct LlmConfig {
  std::string url;               // base URL ("http://127.0.0.1:8080/v1") or the full .../chat/completions
  std::string model;             // model name as the server knows it
  std::string api_key_file;      // "" = no Authorization header (a local server)
  std::string ca_file;           // PEM bundle to trust instead of the system store
  int64_t timeout_ms = 120'000;  // per request
  size_t max_reply_bytes = kDefaultMaxReplyBytes;  // larger replies are refused
  bool allow_http = false;                         // plain http:// to a host that is not loopback
  std::vector<std::string> secrets;                // more values to redact (the key always is)
};

// The endpoint a base URL names: appends "/chat/completions" unless already there.
// kInvalidArgument unless the URL is http:// or https://.
Result<std::string> ChatCompletionsUrl(const std::string& url);

// Whether `url` may be used: https://, http:// to a loopback host, or any http:// with
// `allow_http`. kInvalidArgument (naming the opt-in) otherwise.
Status CheckLlmUrl(const std::string& url, bool allow_http);

class OpenAiChatClient final : public ChatModel {
 public:
  // Reads the key file and checks the URL. `http` is borrowed (tests inject one); null =
  // the project's libcurl client with TLS verification on.
  static Result<std::unique_ptr<OpenAiChatClient>> Create(const LlmConfig& config, redfish::HttpClient* http = nullptr);
  Result<ChatReply> Complete(const ChatRequest& request) override;
  std::string ModelName() const override { return config_.model; }

 private:
  OpenAiChatClient(LlmConfig config, std::string endpoint, std::string key, redfish::HttpClient* http,
                   std::unique_ptr<redfish::HttpClient> owned);
  // `text` with the secrets replaced, cut to `max` bytes, on one line: safe in an error.
  std::string Redact(std::string_view text, size_t max) const;
  // Every secret in `text` replaced by "[redacted]".
  void RedactInPlace(std::string& text) const;
  // The reply's text and tool calls with the secrets replaced.
  void RedactReply(ChatReply& reply) const;

  LlmConfig config_;
  std::string endpoint_;
  std::string key_;
  std::vector<std::string> secrets_;  // the key and config_.secrets, none empty
  std::unique_ptr<redfish::HttpClient> owned_;
  redfish::HttpClient* http_;
};

}  // namespace faultline::assistant
