#include "fake_kube_api.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "core/time.h"
#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::testing_kube {
namespace {

// A Kubernetes Status object, as the API server sends with every error.
Json StatusBody(int code, const std::string& reason, const std::string& message) {
  return Json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"code", code}};
}

std::string ReasonFor(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    default:
      return code >= 500 ? "InternalError" : "Unknown";
  }
}

std::string MediaType(const httplib::Request& req) {
  std::string ct = req.get_header_value("Content-Type");
  const size_t semi = ct.find(';');
  if (semi != std::string::npos) ct.resize(semi);
  while (!ct.empty() && ct.back() == ' ') ct.pop_back();
  return ct;
}

bool IsDnsName(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9.]*[a-z0-9])?");
  return s.size() <= 253 && std::regex_match(s, re);
}

bool IsLabelValue(const std::string& s) {
  static const std::regex re("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
  return s.size() <= 63 && std::regex_match(s, re);
}

// A qualified name: optional DNS prefix, "/", and a 63-character name.
bool IsQualifiedName(const std::string& s) {
  const size_t slash = s.find('/');
  std::string name = s;
  if (slash != std::string::npos) {
    if (!IsDnsName(s.substr(0, slash))) return false;
    name = s.substr(slash + 1);
  }
  return !name.empty() && IsLabelValue(name);
}

bool IsRfc3339(const Json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  return s.size() >= 20 && s[10] == 'T' && ParseIso8601(s).has_value() && (s.back() == 'Z' || s[s.size() - 3] == ':');
}

// RFC 7386 JSON merge patch, with the strategic-merge rule the node status needs:
// status.conditions merge by "type" (everything else: lists replaced, null deletes).
void Merge(Json& target, const Json& patch, bool strategic, const std::string& path) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = Json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string child = path + "/" + it.key();
    if (it->is_null()) {
      target.erase(it.key());
    } else if (strategic && child == "/status/conditions" && it->is_array()) {
      Json& list = target[it.key()];
      if (!list.is_array()) list = Json::array();
      for (const Json& c : *it) {
        bool merged = false;
        for (Json& existing : list) {
          if (c.is_object() && existing.is_object() && existing.value("type", "") == c.value("type", "")) {
            Merge(existing, c, strategic, child + "/item");
            merged = true;
          }
        }
        if (!merged) list.push_back(c);
      }
    } else {
      Merge(target[it.key()], *it, strategic, child);
    }
  }
}

}  // namespace

struct FakeKubeApi::Impl {
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  int port = 0;
  bool tls = false;
  std::string token;
  std::string cert_path;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::map<std::string, Json> nodes;
  std::map<std::string, Json> pods;        // ns/name
  std::map<std::string, int> pdb;          // ns/name -> 429s left (-1 = always)
  std::map<std::string, int> terminating;  // ns/name -> lists left before it disappears
  int terminating_lists = 0;
  std::vector<Json> events;
  std::vector<RecordedRequest> requests;
  std::vector<std::string> violations;
  int fail_count = 0;
  int fail_status = 500;
  std::string fail_path;
  int delay_ms = 0;
  int conflicts = 0;
  int64_t resource_version = 100;
  int uid = 0;
  std::string bad_continue;  // when set, node lists hand out this continue token forever

  std::string NextVersion() { return std::to_string(++resource_version); }

  void Send(httplib::Response& res, int code, const Json& body) {
    res.status = code;
    res.set_content(body.dump(), "application/json");
  }
  // A refused request: the answer the API server would give, and a note for the test.
  void Refuse(const httplib::Request& req, httplib::Response& res, int code, const std::string& message) {
    violations.push_back(req.method + " " + req.path + ": " + std::to_string(code) + " " + message);
    Send(res, code, StatusBody(code, ReasonFor(code), message));
  }

  void Route(const httplib::Request& req, httplib::Response& res);
  void NodeGet(const httplib::Request& req, httplib::Response& res, const std::string& name);
  void NodePatch(const httplib::Request& req, httplib::Response& res, const std::string& name, bool status);
  void PodList(const httplib::Request& req, httplib::Response& res);
  void NodeList(const httplib::Request& req, httplib::Response& res);
  void EventPost(const httplib::Request& req, httplib::Response& res, const std::string& ns);
  void Eviction(const httplib::Request& req, httplib::Response& res, const std::string& ns, const std::string& name);
  bool ValidNode(const Json& node, std::string& why) const;
};

void FakeKubeApi::Impl::Route(const httplib::Request& req, httplib::Response& res) {
  std::unique_lock<std::mutex> lock(mu);
  if (delay_ms > 0) cv.wait_for(lock, std::chrono::milliseconds(delay_ms), [this] { return stopping; });
  if (req.get_header_value("Authorization") != "Bearer " + token) {
    Refuse(req, res, 401, "Unauthorized");
    return;
  }
  if (fail_count > 0 && req.path.find(fail_path) != std::string::npos) {
    --fail_count;
    Send(res, fail_status, StatusBody(fail_status, ReasonFor(fail_status), "injected failure"));
    return;
  }
  static const std::regex node_re("/api/v1/nodes/([^/]+)");
  static const std::regex node_status_re("/api/v1/nodes/([^/]+)/status");
  static const std::regex events_re("/api/v1/namespaces/([^/]+)/events");
  static const std::regex evict_re("/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction");
  static const std::regex pod_re("/api/v1/namespaces/([^/]+)/pods/([^/]+)");
  std::smatch m;
  const std::string& p = req.path;
  const std::string& method = req.method;
  auto wrong_method = [&] { Refuse(req, res, 405, method + " is not allowed on " + p); };
  if (std::regex_match(p, m, node_status_re)) {
    if (method == "PATCH") return NodePatch(req, res, m[1], true);
    if (method == "GET") return NodeGet(req, res, m[1]);
    return wrong_method();
  }
  if (std::regex_match(p, m, node_re)) {
    if (method == "PATCH") return NodePatch(req, res, m[1], false);
    if (method == "GET") return NodeGet(req, res, m[1]);
    return wrong_method();
  }
  if (p == "/api/v1/nodes") {
    if (method == "GET") return NodeList(req, res);
    return wrong_method();
  }
  if (p == "/api/v1/pods") {
    if (method == "GET") return PodList(req, res);
    return wrong_method();
  }
  if (std::regex_match(p, m, events_re)) {
    if (method == "POST") return EventPost(req, res, m[1]);
    return wrong_method();
  }
  if (std::regex_match(p, m, evict_re)) {
    if (method == "POST") return Eviction(req, res, m[1], m[2]);
    return wrong_method();
  }
  if (std::regex_match(p, m, pod_re) && method == "DELETE") {
    // The actuator must never delete a pod: recorded as a violation, and done, as the API would.
    pods.erase(std::string(m[1]) + "/" + std::string(m[2]));
    return Refuse(req, res, 200, "pod deleted directly (a drain must only evict)");
  }
  Refuse(req, res, 404, "the server could not find the requested resource");
}

void FakeKubeApi::Impl::NodeGet(const httplib::Request& req, httplib::Response& res, const std::string& name) {
  auto it = nodes.find(name);
  if (it == nodes.end()) return Refuse(req, res, 404, "nodes \"" + name + "\" not found");
  Send(res, 200, it->second);
}

bool FakeKubeApi::Impl::ValidNode(const Json& node, std::string& why) const {
  const Json& spec = node.value("spec", Json::object());
  if (spec.contains("unschedulable") && !spec["unschedulable"].is_boolean()) {
    why = "spec.unschedulable: must be a boolean";
    return false;
  }
  if (spec.contains("taints")) {
    if (!spec["taints"].is_array()) {
      why = "spec.taints: must be a list";
      return false;
    }
    std::set<std::string> seen;
    for (const Json& t : spec["taints"]) {
      if (!t.is_object() || !t.contains("key") || !t["key"].is_string() || !IsQualifiedName(t["key"])) {
        why = "spec.taints[].key: invalid";
        return false;
      }
      const std::string effect = t.value("effect", "");
      if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
        why = "spec.taints[].effect: Unsupported value";
        return false;
      }
      if (t.contains("value") && (!t["value"].is_string() || !IsLabelValue(t["value"]))) {
        why = "spec.taints[].value: invalid";
        return false;
      }
      if (t.contains("timeAdded") && !IsRfc3339(t["timeAdded"])) {
        why = "spec.taints[].timeAdded: not RFC 3339";
        return false;
      }
      if (!seen.insert(t["key"].get<std::string>() + ":" + effect).second) {
        why = "spec.taints: duplicate key and effect";
        return false;
      }
    }
  }
  const Json& meta = node.value("metadata", Json::object());
  if (meta.contains("annotations")) {
    if (!meta["annotations"].is_object()) {
      why = "metadata.annotations: must be a map";
      return false;
    }
    for (const auto& [k, v] : meta["annotations"].items()) {
      if (!v.is_string() || !IsQualifiedName(k)) {
        why = "metadata.annotations: invalid key or non-string value";
        return false;
      }
    }
  }
  const Json& status = node.value("status", Json::object());
  if (status.contains("conditions")) {
    if (!status["conditions"].is_array()) {
      why = "status.conditions: must be a list";
      return false;
    }
    std::set<std::string> types;
    for (const Json& c : status["conditions"]) {
      if (!c.is_object() || !c.contains("type") || !c["type"].is_string() || c["type"].get<std::string>().empty()) {
        why = "status.conditions[].type: Required value";
        return false;
      }
      const std::string st = c.value("status", "");
      if (st != "True" && st != "False" && st != "Unknown") {
        why = "status.conditions[].status: Unsupported value";
        return false;
      }
      for (const char* t : {"lastHeartbeatTime", "lastTransitionTime"}) {
        if (c.contains(t) && !IsRfc3339(c[t])) {
          why = std::string("status.conditions[].") + t + ": not RFC 3339";
          return false;
        }
      }
      for (const char* s : {"reason", "message"}) {
        if (c.contains(s) && !c[s].is_string()) {
          why = std::string("status.conditions[].") + s + ": must be a string";
          return false;
        }
      }
      if (!types.insert(c["type"].get<std::string>()).second) {
        why = "status.conditions: duplicate type";
        return false;
      }
    }
  }
  return true;
}

void FakeKubeApi::Impl::NodePatch(const httplib::Request& req, httplib::Response& res, const std::string& name,
                                  bool status) {
  const std::string ct = MediaType(req);
  const bool strategic = ct == "application/strategic-merge-patch+json";
  if (!strategic && ct != "application/merge-patch+json") {
    return Refuse(req, res, 415,
                  "the body of the request was in an unknown format - accepted media types include: "
                  "application/merge-patch+json, application/strategic-merge-patch+json");
  }
  auto it = nodes.find(name);
  if (it == nodes.end()) return Refuse(req, res, 404, "nodes \"" + name + "\" not found");
  const Json patch = Json::parse(req.body, nullptr, false);
  if (!patch.is_object()) return Refuse(req, res, 400, "error decoding patch: not a JSON object");
  const Json meta = patch.value("metadata", Json::object());
  if (!meta.is_object()) return Refuse(req, res, 400, "metadata: must be an object");
  if (meta.contains("name") && meta["name"] != name)
    return Refuse(req, res, 400, "the name of the object does not match");
  if (meta.contains("resourceVersion")) {
    if (conflicts > 0) {
      --conflicts;
      it->second["metadata"]["resourceVersion"] = NextVersion();  // someone else wrote the node
    }
    if (meta["resourceVersion"] != it->second["metadata"]["resourceVersion"]) {
      return Refuse(req, res, 409,
                    "Operation cannot be fulfilled on nodes \"" + name +
                        "\": the object has been modified; please apply your changes to the latest "
                        "version and try again");
    }
  }
  Json merged = it->second;
  Merge(merged, patch, strategic, "");
  // The main resource never changes status; the status subresource changes nothing else.
  if (status) {
    Json keep = it->second;
    keep["status"] = merged.value("status", Json::object());
    merged = std::move(keep);
  } else {
    merged["status"] = it->second.value("status", Json::object());
  }
  merged["metadata"]["name"] = name;
  merged["metadata"]["uid"] = it->second["metadata"]["uid"];
  std::string why;
  if (!ValidNode(merged, why)) return Refuse(req, res, 422, "Node \"" + name + "\" is invalid: " + why);
  merged["metadata"]["resourceVersion"] = NextVersion();
  it->second = std::move(merged);
  Send(res, 200, it->second);
}

void FakeKubeApi::Impl::PodList(const httplib::Request& req, httplib::Response& res) {
  static const std::set<std::string> kFields = {"metadata.name", "metadata.namespace", "spec.nodeName",
                                                "spec.restartPolicy", "status.phase"};
  std::map<std::string, std::string> want;
  if (req.has_param("fieldSelector")) {
    std::string sel = req.get_param_value("fieldSelector");
    size_t start = 0;
    while (start <= sel.size()) {
      size_t comma = sel.find(',', start);
      std::string term = sel.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const size_t eq = term.find('=');
      if (eq == std::string::npos || !kFields.count(term.substr(0, eq))) {
        return Refuse(req, res, 400, "\"" + term + "\" is not a known field selector");
      }
      want[term.substr(0, eq)] = term.substr(term[eq + 1] == '=' ? eq + 2 : eq + 1);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  Json items = Json::array();
  for (auto it = pods.begin(); it != pods.end();) {
    const Json& pod = it->second;
    bool match = true;
    if (want.count("spec.nodeName") && pod["spec"].value("nodeName", "") != want["spec.nodeName"]) match = false;
    if (want.count("metadata.namespace") && pod["metadata"].value("namespace", "") != want["metadata.namespace"]) {
      match = false;
    }
    if (match) items.push_back(pod);
    // A terminating pod disappears after its remaining lists.
    auto t = terminating.find(it->first);
    if (t != terminating.end() && --t->second < 0) {
      terminating.erase(t);
      it = pods.erase(it);
    } else {
      ++it;
    }
  }
  Send(res, 200,
       Json{{"kind", "PodList"},
            {"apiVersion", "v1"},
            {"metadata", {{"resourceVersion", NextVersion()}}},
            {"items", items}});
}

// GET /api/v1/nodes: a NodeList, paged like the API server: `limit` items, then an opaque
// `continue` token naming where the next page starts (checked: a token the fake did not
// hand out is a 410-like error, as with an expired one).
void FakeKubeApi::Impl::NodeList(const httplib::Request& req, httplib::Response& res) {
  size_t limit = nodes.size() + 1;
  if (req.has_param("limit")) {
    const std::string v = req.get_param_value("limit");
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
      return Refuse(req, res, 400, "limit: must be a whole number");
    }
    limit = std::max<size_t>(1, std::stoul(v));
  }
  size_t start = 0;
  if (req.has_param("continue")) {
    const std::string token = req.get_param_value("continue");
    if (token.rfind("page-", 0) != 0 || token.size() > 14 ||
        token.find_first_not_of("0123456789", 5) != std::string::npos) {
      return Refuse(req, res, 410, "the provided continue parameter is too old or invalid");
    }
    start = std::stoul(token.substr(5));
  }
  Json items = Json::array();
  size_t i = 0;
  for (const auto& [name, node] : nodes) {
    if (i >= start && items.size() < limit) items.push_back(node);
    ++i;
  }
  Json meta{{"resourceVersion", NextVersion()}};
  if (!bad_continue.empty()) {
    meta["continue"] = bad_continue;
  } else if (start + items.size() < nodes.size()) {
    meta["continue"] = "page-" + std::to_string(start + items.size());
  }
  Send(res, 200, Json{{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", meta}, {"items", items}});
}

void FakeKubeApi::Impl::EventPost(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
  if (MediaType(req) != "application/json") return Refuse(req, res, 415, "events take application/json");
  const Json ev = Json::parse(req.body, nullptr, false);
  if (!ev.is_object()) return Refuse(req, res, 400, "error decoding body: not a JSON object");
  if (ev.value("kind", "Event") != "Event" || ev.value("apiVersion", "v1") != "v1") {
    return Refuse(req, res, 400, "body is not a v1 Event");
  }
  const Json meta = ev.value("metadata", Json::object());
  const std::string name = meta.is_object() ? meta.value("name", "") : "";
  if (!IsDnsName(name)) return Refuse(req, res, 422, "metadata.name: Required value or invalid");
  if (meta.contains("namespace") && meta["namespace"] != ns) {
    return Refuse(req, res, 400,
                  "the namespace of the provided object does not match the namespace sent on the request");
  }
  const Json obj = ev.value("involvedObject", Json::object());
  if (!obj.is_object() || obj.value("kind", "").empty() || obj.value("name", "").empty()) {
    return Refuse(req, res, 422, "involvedObject: kind and name are required");
  }
  const Json reason = ev.value("reason", Json());
  if (!reason.is_string() || reason.get<std::string>().empty() || reason.get<std::string>().size() > 128) {
    return Refuse(req, res, 422, "reason: Required value");
  }
  const std::string type = ev.value("type", "");
  if (type != "Normal" && type != "Warning") return Refuse(req, res, 422, "type: Unsupported value");
  for (const char* t : {"firstTimestamp", "lastTimestamp"}) {
    if (ev.contains(t) && !IsRfc3339(ev[t])) return Refuse(req, res, 422, std::string(t) + ": not RFC 3339");
  }
  for (const Json& e : events) {
    if (e["metadata"]["name"] == name) return Refuse(req, res, 409, "events \"" + name + "\" already exists");
  }
  Json stored = ev;
  stored["metadata"]["namespace"] = ns;
  events.push_back(stored);
  Send(res, 201, stored);
}

void FakeKubeApi::Impl::Eviction(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                                 const std::string& name) {
  if (MediaType(req) != "application/json") return Refuse(req, res, 415, "evictions take application/json");
  const Json ev = Json::parse(req.body, nullptr, false);
  if (!ev.is_object()) return Refuse(req, res, 400, "error decoding body: not a JSON object");
  if (ev.value("kind", "") != "Eviction" || ev.value("apiVersion", "") != "policy/v1") {
    return Refuse(req, res, 422, "body must be a policy/v1 Eviction");
  }
  const Json meta = ev.value("metadata", Json::object());
  if (!meta.is_object() || meta.value("name", "") != name) {
    return Refuse(req, res, 400, "name in URL does not match name in Eviction object");
  }
  if (meta.contains("namespace") && meta["namespace"] != ns) {
    return Refuse(req, res, 400, "namespace in URL does not match the Eviction object");
  }
  const std::string key = ns + "/" + name;
  auto pod = pods.find(key);
  if (pod == pods.end() || terminating.count(key)) {
    // A terminating pod still answers as the real one would: eviction accepted again.
    if (pod != pods.end()) return Send(res, 201, Json{{"kind", "Status"}, {"status", "Success"}, {"code", 201}});
    return Send(res, 404, StatusBody(404, "NotFound", "pods \"" + name + "\" not found"));
  }
  auto guard = pdb.find(key);
  if (guard != pdb.end() && guard->second != 0) {
    if (guard->second > 0) --guard->second;
    return Send(
        res, 429,
        StatusBody(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget."));
  }
  if (terminating_lists > 0) {
    terminating[key] = terminating_lists;
    pod->second["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  } else {
    pods.erase(pod);
  }
  Send(res, 201, Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}});
}

FakeKubeApi::FakeKubeApi(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeKubeApi::~FakeKubeApi() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::unique_ptr<FakeKubeApi> FakeKubeApi::Start(bool tls, const std::string& token, const std::string& cert_dir,
                                                const std::string& client_ca_file) {
  auto impl = std::make_unique<Impl>();
  impl->tls = tls;
  impl->token = token;
  if (tls) {
    auto paths = sim::GenerateSelfSignedCert(cert_dir);
    if (!paths.ok()) return nullptr;
    impl->cert_path = paths->cert_path;
    // With a client CA, a client without a certificate it signed fails the handshake.
    impl->server = client_ca_file.empty()
                       ? std::make_unique<httplib::SSLServer>(paths->cert_path.c_str(), paths->key_path.c_str())
                       : std::make_unique<httplib::SSLServer>(paths->cert_path.c_str(), paths->key_path.c_str(),
                                                              client_ca_file.c_str());
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  if (!impl->server->is_valid()) return nullptr;
  Impl* raw = impl.get();
  auto handler = [raw](const httplib::Request& req, httplib::Response& res) { raw->Route(req, res); };
  raw->server->Get(".*", handler);
  raw->server->Post(".*", handler);
  raw->server->Delete(".*", handler);
  raw->server->Patch(".*", handler);
  raw->server->Put(".*", handler);
  // Every answer is recorded with the request that caused it.
  raw->server->set_logger([raw](const httplib::Request& req, const httplib::Response& res) {
    std::lock_guard<std::mutex> lock(raw->mu);
    std::string query;
    for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
    raw->requests.push_back({req.method, req.path, query, req.get_header_value("Content-Type"),
                             req.get_header_value("Authorization"), req.body, res.status});
  });
  raw->port = raw->server->bind_to_any_port("127.0.0.1");
  if (raw->port <= 0) return nullptr;
  raw->thread = std::thread([raw] { raw->server->listen_after_bind(); });
  // Accepting starts on the thread; stop() before that would be missed, so wait for it.
  while (!raw->server->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<FakeKubeApi>(new FakeKubeApi(std::move(impl)));
}

std::string FakeKubeApi::url() const {
  return std::string(impl_->tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(impl_->port);
}
std::string FakeKubeApi::ca_file() const { return impl_->cert_path; }

void FakeKubeApi::AddNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->nodes[name] = Json{{"kind", "Node"},
                            {"apiVersion", "v1"},
                            {"metadata",
                             {{"name", name},
                              {"uid", "node-uid-" + std::to_string(++impl_->uid)},
                              {"resourceVersion", impl_->NextVersion()},
                              {"labels", {{"kubernetes.io/hostname", name}}}}},
                            {"spec", Json::object()},
                            {"status", {{"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

void FakeKubeApi::MergeIntoNode(const std::string& name, const Json& patch) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Json& node = impl_->nodes.at(name);
  Merge(node, patch, true, "");
  node["metadata"]["resourceVersion"] = impl_->NextVersion();
}

void FakeKubeApi::AddPod(const PodSpec& pod) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Json meta{{"name", pod.name}, {"namespace", pod.ns}, {"uid", "pod-uid-" + std::to_string(++impl_->uid)}};
  if (!pod.owner_kind.empty()) {
    meta["ownerReferences"] = Json::array(
        {{{"apiVersion", "apps/v1"}, {"kind", pod.owner_kind}, {"name", pod.name + "-owner"}, {"controller", true}}});
  }
  if (pod.mirror) meta["annotations"] = {{"kubernetes.io/config.mirror", "abc123"}};
  impl_->pods[pod.ns + "/" + pod.name] =
      Json{{"kind", "Pod"}, {"metadata", meta}, {"spec", {{"nodeName", pod.node}}}, {"status", {{"phase", pod.phase}}}};
}

void FakeKubeApi::ProtectByPdb(const std::string& ns, const std::string& name, int times) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->pdb[ns + "/" + name] = times;
}
void FakeKubeApi::SetTerminatingLists(int lists) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->terminating_lists = lists;
}
void FakeKubeApi::FailNext(int count, int status, const std::string& path_part) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->fail_path = path_part;
  impl_->fail_count = count;
  impl_->fail_status = status;
}
void FakeKubeApi::SetNodeListContinue(const std::string& token) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->bad_continue = token;
}
void FakeKubeApi::SetDelayMs(int ms) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->delay_ms = ms;
}
void FakeKubeApi::ConflictNext(int count) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->conflicts = count;
}
Json FakeKubeApi::Node(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->nodes.find(name);
  return it == impl_->nodes.end() ? Json() : it->second;
}
bool FakeKubeApi::HasPod(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->pods.count(ns + "/" + name) > 0;
}
std::vector<Json> FakeKubeApi::Events() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->events;
}
std::vector<RecordedRequest> FakeKubeApi::Requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->requests;
}
std::vector<std::string> FakeKubeApi::Violations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->violations;
}

}  // namespace faultline::testing_kube
