#include "assistant/llm_client.h"

#include <arpa/inet.h>

#include <algorithm>
#include <utility>

#include "sources/redfish/credentials.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/redfish_client.h"

namespace faultline::assistant {
namespace {

Status Bad(const std::string& what) { return Status(StatusCode::kCorrupt, "LLM reply: " + what); }

std::string TypeName(const Json& j) { return j.type_name(); }

// Serialises JSON that may hold bytes that are not UTF-8 (log lines): bad bytes become
// U+FFFD instead of an exception.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Result<ToolCall> ParseToolCall(const Json& j, size_t index) {
  const std::string where = "tool_calls[" + std::to_string(index) + "]";
  if (!j.is_object()) return Bad(where + " is " + TypeName(j) + ", not an object");
  ToolCall call;
  if (auto it = j.find("id"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return Bad(where + ".id is " + TypeName(*it) + ", not a string");
    call.id = it->get<std::string>();
  }
  if (call.id.empty()) call.id = "call_" + std::to_string(index);  // some servers omit it
  if (auto it = j.find("type"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>() != "function") return Bad(where + ".type is not \"function\"");
  }
  auto fn = j.find("function");
  if (fn == j.end() || !fn->is_object()) return Bad(where + ".function is missing or not an object");
  auto name = fn->find("name");
  if (name == fn->end() || !name->is_string() || name->get<std::string>().empty()) {
    return Bad(where + ".function.name is missing or not a string");
  }
  call.name = name->get<std::string>();
  auto args = fn->find("arguments");
  if (args == fn->end() || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_string()) {
    call.arguments = args->get<std::string>();
  } else if (args->is_object()) {
    call.arguments = Dump(*args);  // a server that decoded them already
  } else {
    return Bad(where + ".function.arguments is " + TypeName(*args) + ", not a string or object");
  }
  return call;
}

// Reads an optional non-negative integer field of `usage`.
Status UsageField(const Json& usage, const char* name, int64_t& out) {
  auto it = usage.find(name);
  if (it == usage.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return Bad(std::string("usage.") + name + " is not a non-negative integer");
  }
  out = it->get<int64_t>();
  return Status::Ok();
}

Status ParseUsage(const Json& root, Usage& usage) {
  auto it = root.find("usage");
  if (it == root.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Bad("usage is " + TypeName(*it) + ", not an object");
  for (auto [name, field] :
       {std::pair{"prompt_tokens", &usage.prompt_tokens}, std::pair{"completion_tokens", &usage.completion_tokens},
        std::pair{"total_tokens", &usage.total_tokens}}) {
    if (Status s = UsageField(*it, name, *field); !s.ok()) return s;
  }
  if (usage.total_tokens == 0) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  usage.reported = true;
  return Status::Ok();
}

Status ParseMessage(const Json& msg, ChatMessage& out) {
  out.role = "assistant";
  if (auto it = msg.find("content"); it != msg.end() && !it->is_null()) {
    if (!it->is_string()) return Bad("message.content is " + TypeName(*it) + ", not a string");
    out.content = it->get<std::string>();
  }
  auto calls = msg.find("tool_calls");
  if (calls == msg.end() || calls->is_null()) return Status::Ok();
  if (!calls->is_array()) return Bad("message.tool_calls is " + TypeName(*calls) + ", not an array");
  if (calls->size() > kMaxToolCallsPerReply) {
    return Bad(std::to_string(calls->size()) + " tool calls in one reply (at most " +
               std::to_string(kMaxToolCallsPerReply) + ")");
  }
  for (size_t i = 0; i < calls->size(); ++i) {
    auto call = ParseToolCall((*calls)[i], i);
    if (!call.ok()) return call.status();
    out.tool_calls.push_back(std::move(call).value());
  }
  return Status::Ok();
}

}  // namespace

Json ChatMessageJson(const ChatMessage& m) {
  Json j{{"role", m.role}};
  // An assistant message that only calls tools has null content in this dialect.
  if (m.role == "assistant" && m.content.empty() && !m.tool_calls.empty()) {
    j["content"] = nullptr;
  } else {
    j["content"] = m.content;
  }
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : m.tool_calls) {
      calls.push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    j["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) j["name"] = m.name;
  return j;
}

Json ChatRequestJson(const ChatRequest& request, const std::string& model) {
  Json messages = Json::array();
  for (const ChatMessage& m : request.messages) messages.push_back(ChatMessageJson(m));
  Json body{{"model", model}, {"messages", std::move(messages)}, {"temperature", 0}, {"stream", false}};
  body["max_tokens"] = request.max_tokens;
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const ToolSpec& t : request.tools) {
      tools.push_back({{"type", "function"},
                       {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    }
    body["tools"] = std::move(tools);
    body["tool_choice"] = "auto";
  }
  return body;
}

Result<ChatReply> ParseChatReply(std::string_view body, size_t max_bytes) {
  if (body.size() > max_bytes) {
    return Bad("reply is " + std::to_string(body.size()) + " bytes, over the " + std::to_string(max_bytes) +
               "-byte limit");
  }
  if (body.empty()) return Bad("empty body");
  if (JsonNestingDepth(body) > kMaxReplyDepth) {
    return Bad("nested deeper than " + std::to_string(kMaxReplyDepth) + " levels");
  }
  Json root = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Bad("not valid JSON");
  if (!root.is_object()) return Bad("top level is " + TypeName(root) + ", not an object");
  if (auto err = root.find("error"); err != root.end() && !err->is_null()) {
    std::string what = err->is_object() && err->contains("message") && (*err)["message"].is_string()
                           ? (*err)["message"].get<std::string>()
                           : Dump(*err);
    if (what.size() > 300) what.resize(300);
    return Status(StatusCode::kUnavailable, "LLM server error: " + what);
  }
  auto choices = root.find("choices");
  if (choices == root.end()) return Bad("no \"choices\"");
  if (!choices->is_array()) return Bad("choices is " + TypeName(*choices) + ", not an array");
  if (choices->empty()) return Bad("choices is empty");
  const Json& choice = (*choices)[0];
  if (!choice.is_object()) return Bad("choices[0] is " + TypeName(choice) + ", not an object");
  auto msg = choice.find("message");
  if (msg == choice.end() || !msg->is_object()) return Bad("choices[0].message is missing or not an object");
  ChatReply reply;
  if (Status s = ParseMessage(*msg, reply.message); !s.ok()) return s;
  if (auto fr = choice.find("finish_reason"); fr != choice.end() && !fr->is_null()) {
    if (!fr->is_string()) return Bad("finish_reason is " + TypeName(*fr) + ", not a string");
    reply.finish_reason = fr->get<std::string>();
  }
  if (Status s = ParseUsage(root, reply.usage); !s.ok()) return s;
  return reply;
}

namespace {

// 127.0.0.0/8, ::1 (also v4-mapped), "localhost": traffic that never leaves the machine.
// Anything else, other spellings of an address included, is not loopback.
bool IsLoopbackHost(std::string host) {
  if (host == "localhost") return true;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

}  // namespace

Status CheckLlmUrl(const std::string& url, bool allow_http) {
  if (url.rfind("https://", 0) == 0) return Status::Ok();
  if (url.rfind("http://", 0) != 0) {
    return Status(StatusCode::kInvalidArgument, "--llm-url must start with http:// or https://");
  }
  auto origin = redfish::UrlOrigin(url);  // "http://host:port"
  if (!origin.ok()) {
    return Status(StatusCode::kInvalidArgument, "--llm-url is not usable: " + origin.status().message());
  }
  const std::string host = origin->substr(7, origin->rfind(':') - 7);
  if (allow_http || IsLoopbackHost(host)) return Status::Ok();
  return Status(StatusCode::kInvalidArgument,
                "refusing plain http to the LLM server (" + *origin +
                    "): the API key and the node's data would cross the network unencrypted; use https, or allow "
                    "it explicitly (--llm-allow-http / [assistant] llm_allow_http)");
}

Result<std::string> ChatCompletionsUrl(const std::string& url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return Status(StatusCode::kInvalidArgument, "--llm-url must start with http:// or https://");
  }
  std::string u = url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  const std::string suffix = "/chat/completions";
  if (u.size() >= suffix.size() && u.compare(u.size() - suffix.size(), suffix.size(), suffix) == 0) return u;
  return u + suffix;
}

Result<std::unique_ptr<OpenAiChatClient>> OpenAiChatClient::Create(const LlmConfig& config, redfish::HttpClient* http) {
  auto endpoint = ChatCompletionsUrl(config.url);
  if (!endpoint.ok()) return endpoint.status();
  if (Status s = CheckLlmUrl(config.url, config.allow_http); !s.ok()) return s;
  if (config.model.empty()) return Status(StatusCode::kInvalidArgument, "no model name (--llm-model)");
  std::string key;
  if (!config.api_key_file.empty()) {
    auto read = redfish::ReadPasswordFile(config.api_key_file);
    // The reader's errors name the file and the problem, never its content.
    if (!read.ok()) return Status(read.status().code(), "API key file: " + read.status().message());
    key = std::move(read).value();
  }
  std::unique_ptr<redfish::HttpClient> owned;
  if (http == nullptr) {
    redfish::CurlOptions options;
    options.ca_file = config.ca_file;
    options.max_body_bytes = config.max_reply_bytes;
    owned = std::make_unique<redfish::CurlHttpClient>(options);
    http = owned.get();
  }
  return std::unique_ptr<OpenAiChatClient>(
      new OpenAiChatClient(config, std::move(endpoint).value(), std::move(key), http, std::move(owned)));
}

OpenAiChatClient::OpenAiChatClient(LlmConfig config, std::string endpoint, std::string key, redfish::HttpClient* http,
                                   std::unique_ptr<redfish::HttpClient> owned)
    : config_(std::move(config)),
      endpoint_(std::move(endpoint)),
      key_(std::move(key)),
      owned_(std::move(owned)),
      http_(http) {
  if (!key_.empty()) secrets_.push_back(key_);
  for (const std::string& s : config_.secrets) {
    if (!s.empty()) secrets_.push_back(s);
  }
}

void OpenAiChatClient::RedactInPlace(std::string& text) const {
  constexpr std::string_view kRedacted = "[redacted]";
  for (const std::string& secret : secrets_) {
    // Searching on past the replacement: a secret that is part of "[redacted]" ends too.
    for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + kRedacted.size())) {
      text.replace(pos, secret.size(), kRedacted);
    }
  }
}

// A model can be made to repeat what it was never told (a proxy or a compromised server
// echoing the Authorization header into the text): the reply is stored and printed.
void OpenAiChatClient::RedactReply(ChatReply& reply) const {
  RedactInPlace(reply.message.content);
  for (ToolCall& call : reply.message.tool_calls) {
    RedactInPlace(call.id);
    RedactInPlace(call.name);
    RedactInPlace(call.arguments);
  }
}

std::string OpenAiChatClient::Redact(std::string_view text, size_t max) const {
  std::string out(text);
  RedactInPlace(out);
  if (out.size() > max) out.resize(max);
  // Keep the message on one printable line.
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

Result<ChatReply> OpenAiChatClient::Complete(const ChatRequest& request) {
  redfish::HttpRequest http;
  http.method = "POST";
  http.url = endpoint_;
  http.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  if (!key_.empty()) http.headers.emplace_back("Authorization", "Bearer " + key_);
  http.body = Dump(ChatRequestJson(request, config_.model));
  http.timeout_ms = request.timeout_ms > 0 ? std::min(request.timeout_ms, config_.timeout_ms) : config_.timeout_ms;
  auto response = http_->Send(http);
  if (!response.ok()) {
    const Status& s = response.status();
    if (s.code() == StatusCode::kCorrupt && s.message().find("size limit") != std::string::npos) {
      return Status(StatusCode::kCorrupt,
                    "LLM reply larger than the " + std::to_string(config_.max_reply_bytes) + "-byte limit: refused");
    }
    if (s.code() == StatusCode::kTimeout) {
      return Status(StatusCode::kTimeout,
                    "LLM server did not answer within " + std::to_string(http.timeout_ms) + " ms");
    }
    return Status(s.code(), "LLM server unreachable: " + Redact(s.message(), 300));
  }
  if (response->status < 200 || response->status > 299) {
    return Status(
        response->status == 401 || response->status == 403 ? StatusCode::kPermissionDenied : StatusCode::kUnavailable,
        "LLM server answered HTTP " + std::to_string(response->status) + ": " + Redact(response->body, 200));
  }
  auto reply = ParseChatReply(response->body, config_.max_reply_bytes);
  if (!reply.ok()) return Status(reply.status().code(), Redact(reply.status().message(), 400));
  RedactReply(*reply);
  return reply;
}

}  // namespace faultline::assistant
