#include "parse/json_log.h"

#include <charconv>
#include <cstdio>

#include "core/time.h"

namespace faultline {
namespace {

constexpr int kMaxRecordNesting = 8;  // records are flat: strings, numbers, byte arrays

// A journal or dmesg field value as text, without control characters that would break
// the line (a tab stays).
void AppendClean(std::string_view text, std::string& out) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 && c != '\t' ? ' ' : c);
  }
}

// A host name or program tag is one word in the line: anything else would move the
// message's start.
std::string Token(const Json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_string()) return "";
  std::string out;
  for (char c : it->get_ref<const std::string&>()) {
    const auto u = static_cast<unsigned char>(c);
    if (u > 0x20 && c != ':' && u != 0x7f) out.push_back(c);
    if (out.size() == 64) break;
  }
  return out;
}

// MESSAGE is a string, or an array of bytes when the text is not valid UTF-8.
bool MessageText(const Json& value, std::string& text) {
  if (value.is_string()) {
    text = value.get<std::string>();
    return true;
  }
  if (!value.is_array()) return false;
  text.clear();
  for (const Json& b : value) {
    if (!b.is_number_unsigned() || b.get<uint64_t>() > 255) return false;
    text.push_back(static_cast<char>(b.get<uint64_t>()));
  }
  return true;
}

// The journal writes its microsecond timestamps as decimal strings.
int64_t MicrosField(const Json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end()) return 0;
  // Past 9e15 us (year 2255) the ns conversion would overflow: such a stamp is no time.
  constexpr uint64_t kMaxUs = 9'000'000'000'000'000ULL;
  uint64_t us = 0;
  if (it->is_number_unsigned()) {
    us = it->get<uint64_t>();
  } else if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), us);
    if (ec != std::errc() || end != s.data() + s.size()) return 0;
  }
  return us > kMaxUs ? 0 : static_cast<int64_t>(us) * 1000;
}

// Appends `prefix` + the message's first line, then each later line indented.
void AppendMessage(const std::string& prefix, std::string_view message, std::string& out) {
  bool first = true;
  while (true) {
    const size_t nl = message.find('\n');
    std::string_view line = message.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (first) {
      out += prefix;
      AppendClean(line, out);
      out.push_back('\n');
    } else if (!line.empty()) {
      out.push_back(' ');
      AppendClean(line, out);
      out.push_back('\n');
    }
    first = false;
    if (nl == std::string_view::npos) break;
    message.remove_prefix(nl + 1);
  }
}

bool ConvertJournal(const Json& record, std::string& out) {
  auto msg = record.find("MESSAGE");
  std::string text;
  if (msg == record.end() || !MessageText(*msg, text)) return false;
  int64_t ns = MicrosField(record, "__REALTIME_TIMESTAMP");
  if (ns == 0) ns = MicrosField(record, "_SOURCE_REALTIME_TIMESTAMP");
  std::string ident = Token(record, "SYSLOG_IDENTIFIER");
  if (ident.empty()) ident = Token(record, "_COMM");
  if (ident.empty()) ident = Token(record, "_TRANSPORT") == "kernel" ? "kernel" : "unknown";
  std::string prefix;
  if (ns > 0) {
    const std::string host = Token(record, "_HOSTNAME");
    prefix = FormatIso8601(ns) + " " + (host.empty() ? "" : host + " ") + ident + ": ";
  }
  AppendMessage(prefix, text, out);
  return true;
}

bool ConvertDmesg(const Json& record, std::string& out) {
  auto msg = record.find("msg");
  if (msg == record.end() || !msg->is_string()) return false;
  std::string prefix;
  auto time = record.find("time");
  if (time != record.end() && time->is_number() && time->get<double>() >= 0 && time->get<double>() < 1e10) {
    char stamp[48];
    std::snprintf(stamp, sizeof stamp, "[%12.6f] ", time->get<double>());
    prefix = stamp;
  } else if (time != record.end() && time->is_string()) {
    // --time-format iso prints the ISO time bare; ctime/reltime forms are bracketed.
    std::string t;
    AppendClean(time->get_ref<const std::string&>().substr(0, 64), t);
    const bool iso = t.size() > 10 && t[4] == '-' && t[10] == 'T';
    prefix = iso ? t + " " : "[" + t + "] ";
  }
  AppendMessage(prefix, msg->get_ref<const std::string&>(), out);
  return true;
}

// Skips blanks and an RS byte (json-seq) before the first value.
size_t FirstValue(std::string_view head) {
  size_t i = 0;
  if (head.starts_with("\xEF\xBB\xBF")) i = 3;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r' ||
                             head[i] == '\x1e')) {
    ++i;
  }
  return i;
}

}  // namespace

JsonLogForm SniffJsonLog(std::string_view head) {
  const size_t start = FirstValue(head);
  if (start >= head.size() || head[start] != '{') return JsonLogForm::kNone;
  size_t key = start + 1;
  while (key < head.size() && (head[key] == ' ' || head[key] == '\n' || head[key] == '\r' || head[key] == '\t')) ++key;
  if (head.substr(key).starts_with("\"dmesg\"")) return JsonLogForm::kDmesg;
  // The first record, as far as the head holds it.
  JsonStructureScanner scanner;
  size_t end = start;
  int depth = 0;
  for (; end < head.size(); ++end) {
    if (!scanner.Structural(head[end])) continue;
    if (head[end] == '{' || head[end] == '[') ++depth;
    if ((head[end] == '}' || head[end] == ']') && --depth == 0) break;
  }
  const std::string_view first = head.substr(start, end - start);
  if (first.find("\"MESSAGE\"") == std::string_view::npos) return JsonLogForm::kNone;
  for (const char* field : {"\"__CURSOR\"", "\"__REALTIME_TIMESTAMP\"", "\"_BOOT_ID\"", "\"PRIORITY\"",
                            "\"SYSLOG_IDENTIFIER\"", "\"_TRANSPORT\""}) {
    if (first.find(field) != std::string_view::npos) return JsonLogForm::kJournal;
  }
  return JsonLogForm::kNone;
}

JsonLogToText::JsonLogToText(JsonLogForm form, size_t max_record_bytes)
    : form_(form), max_record_bytes_(max_record_bytes), record_depth_(form == JsonLogForm::kDmesg ? 2 : 0) {}

void JsonLogToText::Feed(std::string_view data, std::string& out) {
  for (char c : data) {
    const bool structural = scanner_.Structural(c);
    if (c == '\n' && !structural) {
      // A raw newline cannot be inside a JSON string: the record was cut short. Start
      // afresh at the next line instead of reading the rest of the file as one string.
      scanner_ = JsonStructureScanner();
      if (in_record_) ++stats_.bad;
      in_record_ = false;
      depth_ = record_depth_;
      continue;
    }
    if (structural && c == '{' && depth_ > record_depth_ && in_record_) {
      // Records are flat: an object inside one means the one before was cut short.
      ++stats_.bad;
      in_record_ = false;
      depth_ = record_depth_;
    }
    if (structural && c == '{' && depth_ == record_depth_ && !in_record_) {
      in_record_ = true;
      oversized_ = false;
      record_.clear();
    }
    if (in_record_ && !oversized_) {
      if (record_.size() < max_record_bytes_) {
        record_.push_back(c);
      } else {
        oversized_ = true;
        record_.clear();
      }
    }
    if (!structural) continue;
    if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && depth_ > 0) {
      --depth_;
      if (in_record_ && depth_ == record_depth_) EndRecord(out);
    }
  }
}

void JsonLogToText::EndRecord(std::string& out) {
  in_record_ = false;
  if (oversized_) {
    ++stats_.oversized;
    record_.clear();
    return;
  }
  if (JsonNestingDepth(record_) > kMaxRecordNesting) {
    ++stats_.bad;
    return;
  }
  Json record = Json::parse(record_, nullptr, /*allow_exceptions=*/false);
  record_.clear();
  if (!record.is_object()) {
    ++stats_.bad;
    return;
  }
  Convert(record, out);
}

void JsonLogToText::Convert(const Json& record, std::string& out) {
  const bool ok = form_ == JsonLogForm::kDmesg ? ConvertDmesg(record, out) : ConvertJournal(record, out);
  ++(ok ? stats_.records : stats_.bad);
}

}  // namespace faultline
