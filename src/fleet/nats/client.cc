#include "fleet/nats/client.h"

#include <nats/nats.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <unordered_map>

namespace faultline::fleet::nats {

namespace detail {
// What the async ack handler of one Connection reports into (PublishBatch).
struct AsyncBatch {
  std::mutex mu;
  std::unordered_map<natsMsg*, size_t> in_flight;  // message -> its index in results
  std::vector<PublishResult>* results = nullptr;   // the running batch's; null between batches
};
}  // namespace detail

namespace {

constexpr const char* kMsgIdHeader = "Nats-Msg-Id";
constexpr size_t kMaxCredentialsBytes = 64 << 10;
// JetStream API error codes (nats/status.h) this layer tells apart.
constexpr int kJsStreamNotFound = 10059;
constexpr int kJsConsumerNotFound = 10014;
constexpr int kJsNotEnabled = 10076;
constexpr int kJsNotEnabledForAccount = 10039;
constexpr int kJsClusterNotAvail = 10008;
constexpr int kJsClusterNoPeers = 10005;
constexpr int kJsInsufficientResources = 10023;
constexpr int kJsStorageResourcesExceeded = 10047;
constexpr int kJsStreamNameExist = 10058;
constexpr int kJsConsumerNameExist = 10013;
constexpr int kJsConsumerExists = 10105;
constexpr int kJsConsumerAlreadyExists = 10148;

int64_t Ms(int64_t ns) { return std::max<int64_t>(1, ns / 1'000'000); }

// "what: libnats text (last error detail)"; never includes credentials (libnats does not
// put them in errors; URLs are redacted by the callers).
Status NatsError(natsStatus s, int jerr, const std::string& what) {
  std::string msg = what + ": " + natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  if (detail != nullptr && detail[0] != '\0' && last == s && msg.find(detail) == std::string::npos) {
    msg += std::string(" (") + detail + ")";
  }
  if (jerr != 0) msg += " [jetstream error " + std::to_string(static_cast<int>(jerr)) + "]";
  return Status(MapNatsStatus(s, jerr), msg);
}

bool IsNotFound(natsStatus s, int jerr) {
  return s == NATS_NOT_FOUND || jerr == kJsStreamNotFound || jerr == kJsConsumerNotFound;
}

struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};
struct StreamInfoDeleter {
  void operator()(jsStreamInfo* si) const { jsStreamInfo_Destroy(si); }
};
struct ConsumerInfoDeleter {
  void operator()(jsConsumerInfo* ci) const { jsConsumerInfo_Destroy(ci); }
};
using StreamInfoPtr = std::unique_ptr<jsStreamInfo, StreamInfoDeleter>;
using ConsumerInfoPtr = std::unique_ptr<jsConsumerInfo, ConsumerInfoDeleter>;

std::string Trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return std::string(s.substr(b, e - b));
}

// Routes every async ack of js_async_ to the running batch. libnats hands the original
// message back and leaves destroying it to us.
void OnAsyncAck(jsCtx* /*js*/, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  auto* batch = static_cast<detail::AsyncBatch*>(closure);
  {
    std::lock_guard<std::mutex> lock(batch->mu);
    auto it = batch->in_flight.find(msg);
    if (it != batch->in_flight.end() && batch->results != nullptr) {
      PublishResult& r = (*batch->results)[it->second];
      if (pa != nullptr) {
        r.status = Status::Ok();
        r.ack = PubAck{pa->Stream ? pa->Stream : "", pa->Sequence, pa->Duplicate};
      } else if (pae != nullptr) {
        std::string text = pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err);
        r.status = Status(MapNatsStatus(pae->Err, pae->ErrCode), "publish: " + text);
      }
      batch->in_flight.erase(it);
    }
  }
  natsMsg_Destroy(msg);
}

StreamState StateOf(const jsStreamInfo& si) {
  StreamState st;
  st.messages = si.State.Msgs;
  st.bytes = si.State.Bytes;
  st.first_seq = si.State.FirstSeq;
  st.last_seq = si.State.LastSeq;
  if (si.Cluster != nullptr && si.Cluster->Leader != nullptr) st.leader = si.Cluster->Leader;
  if (si.Config != nullptr) {
    const jsStreamConfig& c = *si.Config;
    st.name = c.Name ? c.Name : "";
    st.config.name = st.name;
    st.config.subjects.clear();
    for (int i = 0; i < c.SubjectsLen; ++i) st.config.subjects.emplace_back(c.Subjects[i]);
    st.config.max_age_ns = c.MaxAge;
    st.config.max_bytes = c.MaxBytes;
    st.config.max_msg_size = c.MaxMsgSize;
    st.config.duplicate_window_ns = c.Duplicates;
    st.config.replicas = static_cast<int>(c.Replicas);
    st.config.memory_storage = c.Storage == js_MemoryStorage;
  }
  return st;
}

// The fields EnsureStream keeps in step (storage cannot change after creation).
bool SameLimits(const StreamConfig& have, const StreamConfig& want) {
  return have.subjects == want.subjects && have.max_age_ns == want.max_age_ns && have.max_bytes == want.max_bytes &&
         have.max_msg_size == want.max_msg_size && have.duplicate_window_ns == want.duplicate_window_ns &&
         have.replicas == want.replicas;
}

bool ValidDurable(std::string_view d) {
  if (d.empty()) return false;
  return std::none_of(d.begin(), d.end(), [](char c) {
    return c == '.' || c == '*' || c == '>' || c == ' ' || c == '\t' || static_cast<unsigned char>(c) < 0x20;
  });
}

}  // namespace

StatusCode MapNatsStatus(int nats_status, int js_error_code) {
  switch (js_error_code) {
    case kJsStreamNotFound:
    case kJsConsumerNotFound:
      return StatusCode::kNotFound;
    case kJsNotEnabled:
    case kJsNotEnabledForAccount:
      return StatusCode::kUnsupported;
    case kJsClusterNotAvail:
      return StatusCode::kUnavailable;
    case kJsClusterNoPeers:
    case kJsInsufficientResources:
    case kJsStorageResourcesExceeded:
      return StatusCode::kInvalidArgument;
    default:
      break;
  }
  switch (static_cast<natsStatus>(nats_status)) {
    case NATS_OK:
      return StatusCode::kOk;
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_IO_ERROR:
    case NATS_STALE_CONNECTION:
    case NATS_NO_RESPONDERS:
    case NATS_NOT_YET_CONNECTED:
    case NATS_DRAINING:
    case NATS_SLOW_CONSUMER:
    case NATS_MISSED_HEARTBEAT:
      return StatusCode::kUnavailable;
    case NATS_TIMEOUT:
      return StatusCode::kTimeout;
    case NATS_CONNECTION_AUTH_FAILED:
    case NATS_NOT_PERMITTED:
    case NATS_SSL_ERROR:
    case NATS_SECURE_CONNECTION_WANTED:
    case NATS_SECURE_CONNECTION_REQUIRED:
      return StatusCode::kPermissionDenied;
    case NATS_NOT_FOUND:
      return StatusCode::kNotFound;
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBJECT:
    case NATS_ADDRESS_MISSING:
    case NATS_INVALID_TIMEOUT:
    case NATS_MAX_PAYLOAD:
    case NATS_INVALID_QUEUE_NAME:
      return StatusCode::kInvalidArgument;
    case NATS_NO_SERVER_SUPPORT:
      return StatusCode::kUnsupported;
    case NATS_PROTOCOL_ERROR:
    case NATS_LINE_TOO_LONG:
      return StatusCode::kCorrupt;
    default:
      return StatusCode::kInternal;
  }
}

// ---- credentials, URLs ----

Result<Credentials> ParseCredentials(std::string_view text) {
  if (text.size() > kMaxCredentialsBytes) return Status(StatusCode::kInvalidArgument, "credentials: over 64 KiB");
  Credentials c;
  if (text.find("-----BEGIN NATS USER JWT-----") != std::string_view::npos) {
    if (text.find("-----BEGIN USER NKEY SEED-----") == std::string_view::npos) {
      return Status(StatusCode::kInvalidArgument, "credentials: a .creds file without its nkey seed");
    }
    c.creds_file = true;
    return c;
  }
  const size_t eol = text.find('\n');
  const std::string line = Trim(text.substr(0, eol));
  if (line.empty()) return Status(StatusCode::kInvalidArgument, "credentials: empty first line");
  if (line.find('\0') != std::string::npos) return Status(StatusCode::kInvalidArgument, "credentials: NUL byte");
  const size_t colon = line.find(':');
  if (colon == std::string::npos) {
    c.token = line;
    return c;
  }
  c.user = line.substr(0, colon);
  c.password = line.substr(colon + 1);
  if (c.user.empty() || c.password.empty()) {
    return Status(StatusCode::kInvalidArgument, "credentials: expected user:password (both non-empty) or a token");
  }
  return c;
}

Result<Credentials> ReadCredentialsFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status(StatusCode::kNotFound, "credentials file not found: " + path);
  if (!S_ISREG(st.st_mode))
    return Status(StatusCode::kInvalidArgument, "credentials file is not a regular file: " + path);
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return Status(StatusCode::kPermissionDenied,
                  "credentials file " + path + " is accessible by group or others; chmod 600 it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kPermissionDenied, "cannot read credentials file: " + path);
  std::string text(kMaxCredentialsBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  auto c = ParseCredentials(text);
  if (!c.ok()) return Status(c.status().code(), c.status().message() + " (" + path + ")");
  return c;
}

std::string RedactUrl(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const size_t slash = url.find('/', start);
  const size_t at = url.rfind('@', slash == std::string_view::npos ? url.size() : slash);
  if (at == std::string_view::npos || at < start) return std::string(url);
  return std::string(url.substr(0, start)) + "***@" + std::string(url.substr(at + 1));
}

std::vector<std::string> SplitUrls(std::string_view csv) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= csv.size()) {
    const size_t comma = csv.find(',', pos);
    const size_t end = comma == std::string_view::npos ? csv.size() : comma;
    std::string part = Trim(csv.substr(pos, end - pos));
    if (!part.empty()) out.push_back(std::move(part));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// ---- Connection ----

Result<std::unique_ptr<Connection>> Connection::Connect(const ConnectOptions& o) {
  if (o.urls.empty()) return Status(StatusCode::kInvalidArgument, "nats: no server URL");
  natsOptions* raw = nullptr;
  if (natsStatus s = natsOptions_Create(&raw); s != NATS_OK) return NatsError(s, 0, "nats options");
  std::unique_ptr<natsOptions, OptionsDeleter> opts(raw);
  std::vector<const char*> servers;
  for (const auto& u : o.urls) servers.push_back(u.c_str());
  std::string redacted;
  for (const auto& u : o.urls) redacted += (redacted.empty() ? "" : ",") + RedactUrl(u);
  natsStatus s = natsOptions_SetServers(opts.get(), servers.data(), static_cast<int>(servers.size()));
  if (s != NATS_OK) return NatsError(s, 0, "nats: server list " + redacted);
  // In the order given: the operator lists the nearest server first.
  (void)natsOptions_SetNoRandomize(opts.get(), true);
  (void)natsOptions_SetName(opts.get(), o.name.c_str());
  (void)natsOptions_SetTimeout(opts.get(), Ms(o.connect_timeout_ns));
  (void)natsOptions_SetAllowReconnect(opts.get(), true);
  (void)natsOptions_SetMaxReconnect(opts.get(), -1);  // forever: an agent outlives NATS outages
  (void)natsOptions_SetReconnectWait(opts.get(), Ms(o.reconnect_wait_ns));
  (void)natsOptions_SetReconnectBufSize(opts.get(), o.reconnect_buffer_bytes);
  // A request (JetStream API call, sync publish) in flight when the connection drops
  // fails at once instead of waiting out its timeout.
  (void)natsOptions_SetFailRequestsOnDisconnect(opts.get(), true);
  // A server that died without closing its sockets (a host crash, a partition) is noticed
  // after ping_interval x max_pings_out, not libnats' default 4 minutes.
  (void)natsOptions_SetPingInterval(opts.get(), Ms(o.ping_interval_ns));
  (void)natsOptions_SetMaxPingsOut(opts.get(), std::max(1, o.max_pings_out));
  if (!o.inbox_prefix.empty()) {
    s = natsOptions_SetCustomInboxPrefix(opts.get(), o.inbox_prefix.c_str());
    if (s != NATS_OK) return NatsError(s, 0, "nats: inbox prefix " + o.inbox_prefix);
  }
  if (!o.credentials_file.empty()) {
    auto creds = ReadCredentialsFile(o.credentials_file);
    if (!creds.ok()) return creds.status();
    if (creds->creds_file) {
      s = natsOptions_SetUserCredentialsFromFiles(opts.get(), o.credentials_file.c_str(), nullptr);
    } else if (!creds->token.empty()) {
      s = natsOptions_SetToken(opts.get(), creds->token.c_str());
    } else {
      s = natsOptions_SetUserInfo(opts.get(), creds->user.c_str(), creds->password.c_str());
    }
    if (s != NATS_OK) return NatsError(s, 0, "nats: credentials from " + o.credentials_file);
  }
  if (!o.ca_file.empty()) {
    s = natsOptions_SetSecure(opts.get(), true);
    if (s == NATS_OK) s = natsOptions_LoadCATrustedCertificates(opts.get(), o.ca_file.c_str());
    if (s != NATS_OK) return NatsError(s, 0, "nats: TLS CA " + o.ca_file);
  }
  std::unique_ptr<Connection> c(new Connection());
  c->request_timeout_ns_ = o.request_timeout_ns;
  c->batch_ = std::make_unique<detail::AsyncBatch>();
  s = natsConnection_Connect(&c->nc_, opts.get());
  if (s != NATS_OK) return NatsError(s, 0, "nats: connect to " + redacted);
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = Ms(o.request_timeout_ns);
  s = natsConnection_JetStream(&c->js_, c->nc_, &jo);
  if (s != NATS_OK) return NatsError(s, 0, "nats: jetstream context");
  jsOptions ja;
  jsOptions_Init(&ja);
  ja.Wait = Ms(o.request_timeout_ns);
  ja.PublishAsync.MaxPending = std::max(1, o.max_pending_publishes);
  ja.PublishAsync.AckHandler = OnAsyncAck;
  ja.PublishAsync.AckHandlerClosure = c->batch_.get();
  ja.PublishAsync.StallWait = Ms(o.request_timeout_ns);  // a full window waits for acks, then times out
  s = natsConnection_JetStream(&c->js_async_, c->nc_, &ja);
  if (s != NATS_OK) return NatsError(s, 0, "nats: jetstream context");
  return c;
}

Connection::~Connection() {
  if (js_async_ != nullptr) jsCtx_Destroy(js_async_);
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (nc_ != nullptr) {
    natsConnection_Close(nc_);
    natsConnection_Destroy(nc_);
  }
}

bool Connection::IsConnected() const {
  return nc_ != nullptr && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

std::string Connection::ConnectedUrl() const {
  char buf[512] = {};
  if (nc_ == nullptr || natsConnection_GetConnectedUrl(nc_, buf, sizeof(buf)) != NATS_OK) return "";
  return RedactUrl(buf);
}

int64_t Connection::MaxPayload() const { return nc_ == nullptr ? 0 : natsConnection_GetMaxPayload(nc_); }

Status Connection::Flush(int64_t timeout_ns) {
  natsStatus s = natsConnection_FlushTimeout(nc_, Ms(timeout_ns));
  return s == NATS_OK ? Status::Ok() : NatsError(s, 0, "nats: flush");
}

Result<StreamState> Connection::GetStream(const std::string& name) {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&raw, js_, name.c_str(), nullptr, &jerr);
  StreamInfoPtr si(raw);
  if (s != NATS_OK) return NatsError(s, jerr, "nats: stream " + name);
  return StateOf(*si);
}

namespace {

void FillStreamConfig(const StreamConfig& config, std::vector<const char*>& subjects, jsStreamConfig& cfg) {
  for (const auto& sub : config.subjects) subjects.push_back(sub.c_str());
  jsStreamConfig_Init(&cfg);
  cfg.Name = config.name.c_str();
  cfg.Subjects = subjects.data();
  cfg.SubjectsLen = static_cast<int>(subjects.size());
  cfg.Retention = js_LimitsPolicy;
  cfg.Discard = js_DiscardOld;
  cfg.MaxAge = config.max_age_ns;
  cfg.MaxBytes = config.max_bytes;
  cfg.MaxMsgSize = config.max_msg_size;
  cfg.Duplicates = config.duplicate_window_ns;
  cfg.Replicas = config.replicas;
  cfg.Storage = config.memory_storage ? js_MemoryStorage : js_FileStorage;
}

std::string Duration(int64_t ns) { return ns == 0 ? "unlimited" : std::to_string(ns / 1'000'000'000) + " s"; }

// One setting of an existing stream: changed to `want` when asked for explicitly, else
// kept; either way a difference is said in `notes`.
template <typename T>
void ReconcileSetting(const char* what, T& have, T want, bool asked, const std::function<std::string(T)>& show,
                      std::vector<std::string>& notes) {
  if (have == want) return;
  if (asked) {
    notes.push_back(std::string(what) + ": changed from " + show(have) + " to " + show(want) + " as asked");
    have = want;
  } else {
    notes.push_back(std::string(what) + ": the stream has " + show(have) + ", not the default " + show(want) +
                    ": kept (not asked to change it)");
  }
}

// The existing stream's config with the settings `overrides` names taken from `want`,
// and `want`'s subjects added; what differed goes to `notes`.
StreamConfig Merge(const StreamConfig& have, const StreamConfig& want, const StreamOverrides& ov,
                   std::vector<std::string>& notes) {
  StreamConfig out = have;
  const std::function<std::string(int64_t)> dur = Duration;
  const std::function<std::string(int64_t)> num = [](int64_t v) { return std::to_string(v); };
  const std::function<std::string(int32_t)> num32 = [](int32_t v) { return std::to_string(v); };
  const std::function<std::string(int)> reps = [](int v) { return std::to_string(v); };
  ReconcileSetting("max age", out.max_age_ns, want.max_age_ns, ov.max_age, dur, notes);
  ReconcileSetting("max bytes", out.max_bytes, want.max_bytes, ov.max_bytes, num, notes);
  ReconcileSetting("max message size", out.max_msg_size, want.max_msg_size, ov.max_msg_size, num32, notes);
  ReconcileSetting("duplicate window", out.duplicate_window_ns, want.duplicate_window_ns, ov.duplicate_window, dur,
                   notes);
  const int had_replicas = out.replicas;
  ReconcileSetting("replicas", out.replicas, want.replicas, ov.replicas, reps, notes);
  if (out.replicas < had_replicas) {
    notes.push_back("replicas: LOWERED from " + std::to_string(had_replicas) + " to " + std::to_string(out.replicas) +
                    ": the stream survives fewer server losses");
  }
  for (const auto& sub : want.subjects) {
    if (std::find(out.subjects.begin(), out.subjects.end(), sub) != out.subjects.end()) continue;
    out.subjects.push_back(sub);
    notes.push_back("subjects: added " + sub);
  }
  if (have.memory_storage != want.memory_storage) {
    notes.push_back(std::string("storage: the stream is ") + (have.memory_storage ? "memory" : "file") +
                    ", cannot change after creation: kept");
  }
  return out;
}

Result<StreamState> ReconcileStream(jsCtx* js, const jsStreamInfo& si, const StreamConfig& config,
                                    const StreamOverrides& overrides) {
  StreamState have = StateOf(si);
  std::vector<std::string> notes;
  const StreamConfig merged = Merge(have.config, config, overrides, notes);
  if (SameLimits(have.config, merged) || si.Config == nullptr) {
    have.notes = std::move(notes);
    return have;
  }
  // The server's own config with only our fields changed: settings faultline does not
  // manage (max messages, per-subject limits, placement...) stay as the operator set them.
  jsStreamConfig cfg = *si.Config;
  std::vector<const char*> subjects;
  for (const auto& sub : merged.subjects) subjects.push_back(sub.c_str());
  cfg.Subjects = subjects.data();
  cfg.SubjectsLen = static_cast<int>(subjects.size());
  cfg.MaxAge = merged.max_age_ns;
  cfg.MaxBytes = merged.max_bytes;
  cfg.MaxMsgSize = merged.max_msg_size;
  cfg.Duplicates = merged.duplicate_window_ns;
  cfg.Replicas = merged.replicas;
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_UpdateStream(&raw, js, &cfg, nullptr, &jerr);
  StreamInfoPtr updated(raw);
  if (s != NATS_OK) {
    Status e = NatsError(s, jerr, "nats: update stream " + config.name);
    // The server refuses some changes outright (more replicas than servers...).
    return Status(e.code() == StatusCode::kInternal ? StatusCode::kInvalidArgument : e.code(), e.message());
  }
  StreamState st = StateOf(*updated);
  st.notes = std::move(notes);
  return st;
}

}  // namespace

Result<StreamState> Connection::EnsureStream(const StreamConfig& config, const StreamOverrides& overrides) {
  if (config.name.empty() || config.subjects.empty()) {
    return Status(StatusCode::kInvalidArgument, "nats: a stream needs a name and subjects");
  }
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&raw, js_, config.name.c_str(), nullptr, &jerr);
  StreamInfoPtr si(raw);
  if (s != NATS_OK && !IsNotFound(s, jerr)) return NatsError(s, jerr, "nats: stream " + config.name);
  if (s != NATS_OK) {
    std::vector<const char*> subjects;
    jsStreamConfig cfg;
    FillStreamConfig(config, subjects, cfg);
    raw = nullptr;
    jerr = static_cast<jsErrCode>(0);
    s = js_AddStream(&raw, js_, &cfg, nullptr, &jerr);
    si.reset(raw);
    if (s == NATS_OK) return StateOf(*si);
    if (jerr != kJsStreamNameExist) return NatsError(s, jerr, "nats: create stream " + config.name);
    // Another process created it between our look and our add: reconcile with theirs.
    raw = nullptr;
    s = js_GetStreamInfo(&raw, js_, config.name.c_str(), nullptr, &jerr);
    si.reset(raw);
    if (s != NATS_OK) return NatsError(s, jerr, "nats: stream " + config.name);
  }
  return ReconcileStream(js_, *si, config, overrides);
}

bool Connection::Refused(const std::string& subject) const {
  // The server answers a forbidden publish with an asynchronous -ERR (no ack ever comes):
  // libnats keeps it as the connection's last error.
  const char* text = nullptr;
  const natsStatus last = natsConnection_GetLastError(nc_, &text);
  if (last != NATS_NOT_PERMITTED || text == nullptr) return false;
  const std::string_view t(text);
  return t.find("Publish") != std::string_view::npos && t.find(subject) != std::string_view::npos;
}

Status Connection::DeleteStream(const std::string& name) {
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_DeleteStream(js_, name.c_str(), nullptr, &jerr);
  return s == NATS_OK ? Status::Ok() : NatsError(s, jerr, "nats: delete stream " + name);
}

Result<PubAck> Connection::Publish(const std::string& subject, std::string_view data, const std::string& msg_id) {
  if (data.size() > static_cast<size_t>(INT_MAX))
    return Status(StatusCode::kInvalidArgument, "nats: message too large");
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = Ms(request_timeout_ns_);
  if (!msg_id.empty()) po.MsgId = msg_id.c_str();
  jsPubAck* pa = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_Publish(&pa, js_, subject.c_str(), data.data(), static_cast<int>(data.size()), &po, &jerr);
  if (s != NATS_OK) {
    if (Refused(subject)) {
      return Status(StatusCode::kPermissionDenied,
                    "nats: publish to " + subject + " refused by the server (permissions violation)");
    }
    return NatsError(s, jerr, "nats: publish to " + subject);
  }
  PubAck ack{pa->Stream ? pa->Stream : "", pa->Sequence, pa->Duplicate};
  jsPubAck_Destroy(pa);
  return ack;
}

std::vector<PublishResult> Connection::PublishBatch(const std::vector<OutMessage>& messages, int64_t timeout_ns) {
  std::lock_guard<std::mutex> one_batch(batch_mu_);
  std::vector<PublishResult> results(messages.size());
  for (auto& r : results) r.status = Status(StatusCode::kTimeout, "publish: no ack in time");
  {
    std::lock_guard<std::mutex> lock(batch_->mu);
    batch_->results = &results;
  }
  Status broken;  // once the connection refuses a publish, the rest are not tried
  for (size_t i = 0; i < messages.size(); ++i) {
    const OutMessage& m = messages[i];
    if (!broken.ok()) {
      results[i].status = broken;
      continue;
    }
    if (m.msg_id.empty() || m.data.size() > static_cast<size_t>(INT_MAX)) {
      results[i].status = Status(StatusCode::kInvalidArgument, "publish: a batch message needs a msg id");
      continue;
    }
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.data.data(), static_cast<int>(m.data.size()));
    if (s != NATS_OK) {
      results[i].status = NatsError(s, 0, "publish to " + m.subject);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(batch_->mu);
      batch_->in_flight[msg] = i;  // before sending: the ack may beat us back
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = m.msg_id.c_str();
    natsMsg* handed = msg;
    s = js_PublishMsgAsync(js_async_, &handed, &po);
    if (s != NATS_OK) {
      {
        std::lock_guard<std::mutex> lock(batch_->mu);
        batch_->in_flight.erase(msg);
      }
      natsMsg_Destroy(handed);  // a no-op when libnats kept it
      results[i].status = NatsError(s, 0, "publish to " + m.subject);
      if (results[i].status.code() == StatusCode::kUnavailable || s == NATS_TIMEOUT) broken = results[i].status;
    }
  }
  jsPubOptions wait;
  jsPubOptions_Init(&wait);
  wait.MaxWait = Ms(timeout_ns);
  if (js_PublishAsyncComplete(js_async_, &wait) != NATS_OK) {
    // Take back what was not acked: those stay failed (kTimeout) and late acks are dropped.
    natsMsgList pending{};
    if (js_PublishAsyncGetPendingList(&pending, js_async_) == NATS_OK) {
      {
        std::lock_guard<std::mutex> lock(batch_->mu);
        for (int i = 0; i < pending.Count; ++i) batch_->in_flight.erase(pending.Msgs[i]);
      }
      natsMsgList_Destroy(&pending);
    }
  }
  std::lock_guard<std::mutex> lock(batch_->mu);
  batch_->in_flight.clear();
  batch_->results = nullptr;
  return results;
}

Result<std::unique_ptr<PullConsumer>> Connection::BindPullConsumer(const ConsumerConfig& config) {
  if (!ValidDurable(config.durable)) {
    return Status(StatusCode::kInvalidArgument,
                  "nats: durable name '" + config.durable + "' must be non-empty without '.', '*', '>' or whitespace");
  }
  jsConsumerInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetConsumerInfo(&raw, js_, config.stream.c_str(), config.durable.c_str(), nullptr, &jerr);
  ConsumerInfoPtr ci(raw);
  if (s != NATS_OK && !IsNotFound(s, jerr)) return NatsError(s, jerr, "nats: consumer " + config.durable);
  if (s != NATS_OK) {
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = config.durable.c_str();
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = js_DeliverAll;
    cc.AckWait = config.ack_wait_ns;
    cc.MaxAckPending = config.max_ack_pending;
    cc.MaxDeliver = config.max_deliver;
    cc.FilterSubject = config.filter_subject.c_str();
    raw = nullptr;
    jerr = static_cast<jsErrCode>(0);
    s = js_AddConsumer(&raw, js_, config.stream.c_str(), &cc, nullptr, &jerr);
    ci.reset(raw);
    const bool raced = jerr == kJsConsumerNameExist || jerr == kJsConsumerExists || jerr == kJsConsumerAlreadyExists;
    if (s != NATS_OK && !raced) return NatsError(s, jerr, "nats: create consumer " + config.durable);
    if (s != NATS_OK) {
      raw = nullptr;
      s = js_GetConsumerInfo(&raw, js_, config.stream.c_str(), config.durable.c_str(), nullptr, &jerr);
      ci.reset(raw);
      if (s != NATS_OK) return NatsError(s, jerr, "nats: consumer " + config.durable);
    }
  }
  const char* have = ci->Config != nullptr && ci->Config->FilterSubject ? ci->Config->FilterSubject : "";
  if (config.filter_subject != have) {
    return Status(StatusCode::kInvalidArgument, "nats: consumer " + config.durable + " filters '" + have + "', not '" +
                                                    config.filter_subject +
                                                    "'; use another durable name for another partition");
  }
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = config.stream.c_str();
  so.Consumer = config.durable.c_str();
  so.ManualAck = true;
  natsSubscription* sub = nullptr;
  jerr = static_cast<jsErrCode>(0);
  s = js_PullSubscribe(&sub, js_, config.filter_subject.c_str(), config.durable.c_str(), nullptr, &so, &jerr);
  if (s != NATS_OK) return NatsError(s, jerr, "nats: bind consumer " + config.durable);
  ConsumerConfig bound = config;
  // An existing durable keeps the limits it was made with: report what the server holds.
  if (ci->Config != nullptr) {
    bound.max_ack_pending = ci->Config->MaxAckPending;
    bound.ack_wait_ns = ci->Config->AckWait;
  }
  return std::unique_ptr<PullConsumer>(new PullConsumer(sub, js_, std::move(bound)));
}

Status Connection::DeleteConsumer(const std::string& stream, const std::string& durable) {
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_DeleteConsumer(js_, stream.c_str(), durable.c_str(), nullptr, &jerr);
  return s == NATS_OK ? Status::Ok() : NatsError(s, jerr, "nats: delete consumer " + durable);
}

Result<uint64_t> Connection::ReadRange(const std::string& stream, const std::string& filter, uint64_t first_seq,
                                       uint64_t last_seq, const std::function<bool(JsMessage&)>& f) {
  if (first_seq == 0 || last_seq < first_seq) return uint64_t{0};
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.DeliverPolicy = js_DeliverByStartSequence;
  so.Config.OptStartSeq = first_seq;
  so.Config.AckPolicy = js_AckNone;                           // reading changes no consumer's state
  so.Config.InactiveThreshold = int64_t{30} * 1'000'000'000;  // gone soon if we die mid-read
  so.Config.MaxAckPending = -1;
  natsSubscription* sub = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_PullSubscribe(&sub, js_, filter.c_str(), nullptr, nullptr, &so, &jerr);
  if (s != NATS_OK) return NatsError(s, jerr, "nats: read " + stream);
  std::unique_ptr<PullConsumer> reader(
      new PullConsumer(sub, js_, ConsumerConfig{.stream = stream, .durable = "(reader)"}));
  // Unsubscribing deletes the ephemeral consumer on the server (the PullConsumer only frees ours).
  struct Unsubscribe {
    natsSubscription* sub;
    ~Unsubscribe() { (void)natsSubscription_Unsubscribe(sub); }
  } unsubscribe{sub};
  uint64_t read = 0;
  for (;;) {
    auto batch = reader->Fetch(256, request_timeout_ns_);
    if (!batch.ok()) return batch.status();
    if (batch->empty()) return read;  // nothing more (retention may have dropped the rest)
    for (JsMessage& m : *batch) {
      if (m.stream_sequence() > last_seq) return read;
      ++read;
      if (!f(m) || m.stream_sequence() == last_seq) return read;
    }
  }
}

namespace {
constexpr char kAckBody[] = "+ACK";  // JetStream's ack body (what natsMsg_Ack sends)
}  // namespace

Status Connection::AckLater(const std::vector<std::string>& ack_subjects, int64_t timeout_ns) {
  for (const auto& subject : ack_subjects) {
    if (subject.empty()) continue;
    natsStatus s = natsConnection_Publish(nc_, subject.c_str(), kAckBody, sizeof(kAckBody) - 1);
    if (s != NATS_OK) return NatsError(s, 0, "nats: ack");
  }
  return Flush(timeout_ns);
}

Status Connection::AckLater(const DeferredAcks& acks, int64_t timeout_ns) {
  // libnats buffers these publishes and writes them in large chunks; one flush at the end.
  natsStatus failed = NATS_OK;
  acks.ForEach([&](const char* subject) {
    if (failed == NATS_OK) failed = natsConnection_Publish(nc_, subject, kAckBody, sizeof(kAckBody) - 1);
  });
  if (failed != NATS_OK) return NatsError(failed, 0, "nats: ack");
  return Flush(timeout_ns);
}

void DeferredAcks::Add(std::string_view ack_subject) {
  if (ack_subject.empty() || ack_subject.find('\0') != std::string_view::npos) return;
  packed_.append(ack_subject);
  packed_.push_back('\0');
  ++count_;
}

void DeferredAcks::clear() {
  // Keeps the buffer's capacity only while it is modest (the next checkpoint reuses it).
  if (packed_.capacity() > (size_t{64} << 20)) {
    std::string().swap(packed_);
  } else {
    packed_.clear();
  }
  count_ = 0;
}

Result<std::unique_ptr<KeyValue>> Connection::EnsureKeyValue(const KvConfig& config) {
  kvStore* kv = nullptr;
  natsStatus s = js_KeyValue(&kv, js_, config.bucket.c_str());
  if (s == NATS_OK) return std::unique_ptr<KeyValue>(new KeyValue(kv));
  if (s != NATS_NOT_FOUND) return NatsError(s, 0, "nats: kv bucket " + config.bucket);
  kvConfig kc;
  kvConfig_Init(&kc);
  kc.Bucket = config.bucket.c_str();
  kc.History = static_cast<uint8_t>(std::clamp(config.history, 1, 64));
  kc.Replicas = config.replicas;
  kc.MaxValueSize = config.max_value_size;
  s = js_CreateKeyValue(&kv, js_, &kc);
  if (s != NATS_OK) return NatsError(s, 0, "nats: create kv bucket " + config.bucket);
  return std::unique_ptr<KeyValue>(new KeyValue(kv));
}

// ---- PullConsumer, JsMessage ----

PullConsumer::~PullConsumer() {
  // Destroy only: the durable stays on the server for the next member or restart.
  if (sub_ != nullptr) natsSubscription_Destroy(sub_);
}

Result<std::vector<JsMessage>> PullConsumer::Fetch(int batch, int64_t timeout_ns) {
  natsMsgList list{};
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = natsSubscription_Fetch(&list, sub_, std::max(1, batch), Ms(timeout_ns), &jerr);
  std::vector<JsMessage> out;
  out.reserve(static_cast<size_t>(std::max(0, list.Count)));
  for (int i = 0; i < list.Count; ++i) {
    out.push_back(JsMessage(list.Msgs[i]));
    list.Msgs[i] = nullptr;  // ours now
  }
  natsMsgList_Destroy(&list);
  if (!out.empty() || s == NATS_OK || s == NATS_TIMEOUT) return out;
  return NatsError(s, jerr, "nats: fetch from " + config_.durable);
}

Result<PullConsumer::Info> PullConsumer::GetInfo() {
  jsConsumerInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  // By name, not through the subscription (libnats refuses that for pull subscriptions).
  natsStatus s = js_GetConsumerInfo(&raw, js_, config_.stream.c_str(), config_.durable.c_str(), nullptr, &jerr);
  ConsumerInfoPtr ci(raw);
  if (s != NATS_OK) return NatsError(s, jerr, "nats: consumer info " + config_.durable);
  return Info{ci->NumPending, ci->NumAckPending, ci->NumRedelivered, ci->AckFloor.Stream, ci->Delivered.Stream};
}

namespace {

// Reads "<delivered>.<stream seq>" from a JetStream ack subject without allocating:
// "$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>" (9 tokens) or the
// newer "$JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>..." (11 or 12).
// False when the subject has neither form.
bool ParseAckSubject(std::string_view reply, uint64_t& delivered, uint64_t& stream_seq) {
  constexpr size_t kMaxTokens = 13;
  std::string_view tokens[kMaxTokens];
  size_t n = 0;
  size_t pos = 0;
  while (n < kMaxTokens) {
    const size_t dot = reply.find('.', pos);
    tokens[n++] = reply.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (n < 9 || tokens[0] != "$JS" || tokens[1] != "ACK") return false;
  const size_t base = n == 9 ? 4 : (n == 11 || n == 12 ? 6 : 0);
  if (base == 0) return false;
  auto number = [](std::string_view t, uint64_t& out) {
    if (t.empty() || t.size() > 19) return false;
    uint64_t v = 0;
    for (char c : t) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    out = v;
    return true;
  };
  return number(tokens[base], delivered) && number(tokens[base + 1], stream_seq);
}

}  // namespace

JsMessage::JsMessage(natsMsg* msg) : msg_(msg) {
  const char* reply = natsMsg_GetReply(msg_);
  if (reply != nullptr && ParseAckSubject(reply, delivered_, stream_seq_)) return;
  // Some other form: let libnats read it (allocates; not the common path).
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg_) == NATS_OK) {
    stream_seq_ = meta->Sequence.Stream;
    delivered_ = meta->NumDelivered;
    jsMsgMetaData_Destroy(meta);
  }
}

std::string JsMessage::msg_id() const {
  const char* id = nullptr;
  if (msg_ != nullptr && natsMsgHeader_Get(msg_, kMsgIdHeader, &id) == NATS_OK && id != nullptr) return id;
  return "";
}

JsMessage::~JsMessage() {
  if (msg_ != nullptr) natsMsg_Destroy(msg_);
}

JsMessage::JsMessage(JsMessage&& o) noexcept : msg_(o.msg_), stream_seq_(o.stream_seq_), delivered_(o.delivered_) {
  o.msg_ = nullptr;
}

JsMessage& JsMessage::operator=(JsMessage&& o) noexcept {
  if (this != &o) {
    if (msg_ != nullptr) natsMsg_Destroy(msg_);
    msg_ = o.msg_;
    o.msg_ = nullptr;
    stream_seq_ = o.stream_seq_;
    delivered_ = o.delivered_;
  }
  return *this;
}

std::string_view JsMessage::data() const {
  if (msg_ == nullptr) return {};
  const char* d = natsMsg_GetData(msg_);
  return d == nullptr ? std::string_view() : std::string_view(d, static_cast<size_t>(natsMsg_GetDataLength(msg_)));
}

std::string_view JsMessage::subject() const {
  if (msg_ == nullptr) return {};
  const char* s = natsMsg_GetSubject(msg_);
  return s == nullptr ? std::string_view() : std::string_view(s);
}

namespace {
Status AckResult(natsStatus s, const char* what) {
  return s == NATS_OK ? Status::Ok() : NatsError(s, 0, std::string("nats: ") + what);
}
}  // namespace

std::string_view JsMessage::ack_subject() const {
  const char* reply = msg_ == nullptr ? nullptr : natsMsg_GetReply(msg_);
  return reply == nullptr ? std::string_view() : std::string_view(reply);
}

Status JsMessage::Ack() {
  if (msg_ == nullptr) return Status(StatusCode::kInvalidArgument, "nats: no message");
  return AckResult(natsMsg_Ack(msg_, nullptr), "ack");
}
Status JsMessage::AckSync() {
  if (msg_ == nullptr) return Status(StatusCode::kInvalidArgument, "nats: no message");
  return AckResult(natsMsg_AckSync(msg_, nullptr, nullptr), "ack");
}
Status JsMessage::Nak(int64_t delay_ns) {
  if (msg_ == nullptr) return Status(StatusCode::kInvalidArgument, "nats: no message");
  if (delay_ns > 0) return AckResult(natsMsg_NakWithDelay(msg_, Ms(delay_ns), nullptr), "nak");
  return AckResult(natsMsg_Nak(msg_, nullptr), "nak");
}
Status JsMessage::Term() {
  if (msg_ == nullptr) return Status(StatusCode::kInvalidArgument, "nats: no message");
  return AckResult(natsMsg_Term(msg_, nullptr), "term");
}
Status JsMessage::InProgress() {
  if (msg_ == nullptr) return Status(StatusCode::kInvalidArgument, "nats: no message");
  return AckResult(natsMsg_InProgress(msg_, nullptr), "in progress");
}

// ---- KeyValue ----

KeyValue::~KeyValue() {
  if (kv_ != nullptr) kvStore_Destroy(kv_);
}

Result<uint64_t> KeyValue::Put(const std::string& key, std::string_view value) {
  if (value.size() > static_cast<size_t>(INT_MAX)) return Status(StatusCode::kInvalidArgument, "kv: value too large");
  uint64_t rev = 0;
  natsStatus s = kvStore_Put(&rev, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return NatsError(s, 0, "kv: put " + key);
  return rev;
}

Result<uint64_t> KeyValue::Create(const std::string& key, std::string_view value) {
  if (value.size() > static_cast<size_t>(INT_MAX)) return Status(StatusCode::kInvalidArgument, "kv: value too large");
  uint64_t rev = 0;
  natsStatus s = kvStore_Create(&rev, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s == NATS_OK) return rev;
  Status failed = NatsError(s, 0, "kv: create " + key);
  auto existing = Get(key);
  if (existing.ok() && existing->has_value()) return Status(StatusCode::kInvalidArgument, "kv: " + key + " exists");
  return failed;
}

Result<std::optional<KvEntry>> KeyValue::Get(const std::string& key) {
  kvEntry* e = nullptr;
  natsStatus s = kvStore_Get(&e, kv_, key.c_str());
  if (s == NATS_NOT_FOUND) return std::optional<KvEntry>();
  if (s != NATS_OK) return NatsError(s, 0, "kv: get " + key);
  KvEntry out;
  const void* v = kvEntry_Value(e);
  const int n = kvEntry_ValueLen(e);
  if (v != nullptr && n > 0) out.value.assign(static_cast<const char*>(v), static_cast<size_t>(n));
  out.revision = kvEntry_Revision(e);
  kvEntry_Destroy(e);
  return std::optional<KvEntry>(std::move(out));
}

Result<std::vector<std::string>> KeyValue::Keys() {
  kvKeysList list{};
  natsStatus s = kvStore_Keys(&list, kv_, nullptr);
  std::vector<std::string> out;
  for (int i = 0; i < list.Count; ++i) out.emplace_back(list.Keys[i]);
  kvKeysList_Destroy(&list);
  if (s == NATS_NOT_FOUND) return std::vector<std::string>();  // no key at all
  if (s != NATS_OK) return NatsError(s, 0, "kv: keys");
  return out;
}

Result<int> KeyValue::Replicas() {
  kvStatus* st = nullptr;
  natsStatus s = kvStore_Status(&st, kv_);
  if (s != NATS_OK) return NatsError(s, 0, "kv: status");
  const int64_t r = kvStatus_Replicas(st);
  kvStatus_Destroy(st);
  return static_cast<int>(r);
}

Status KeyValue::Delete(const std::string& key) {
  natsStatus s = kvStore_Delete(kv_, key.c_str());
  return s == NATS_OK ? Status::Ok() : NatsError(s, 0, "kv: delete " + key);
}

}  // namespace faultline::fleet::nats
