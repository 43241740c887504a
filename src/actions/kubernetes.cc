#include "actions/kubernetes.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <thread>

#include "actions/kubernetes_http.h"
#include "core/json.h"
#include "core/time.h"

namespace faultline::actions {

namespace {

constexpr char kStrategicMerge[] = "application/strategic-merge-patch+json";
constexpr char kJson[] = "application/json";
constexpr size_t kMaxMessageBytes = 1024;

// The API server's own explanation from a Status body, trimmed to one short line.
std::string ApiMessage(const std::string& body) {
  std::string msg;
  Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) msg = j["message"].get<std::string>();
  if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
  for (char& c : msg) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return msg;
}

Status HttpError(const std::string& what, const KubeHttpResponse& r) {
  std::string msg = "kubernetes: " + what + ": API server answered " + std::to_string(r.status);
  if (const std::string api = ApiMessage(r.body); !api.empty()) msg += " (" + api + ")";
  if (r.status == 401 || r.status == 403) return Status(StatusCode::kPermissionDenied, msg);
  if (r.status == 404) return Status(StatusCode::kNotFound, msg);
  if (r.status == 408 || r.status == 504) return Status(StatusCode::kTimeout, msg);
  if (r.status == 409 || r.status == 429 || r.status >= 500) return Status(StatusCode::kUnavailable, msg);
  return Status(StatusCode::kInvalidArgument, msg);
}

bool Ok2xx(int status) { return status >= 200 && status < 300; }

std::string OneLine(std::string_view text, size_t limit) {
  std::string out;
  for (char c : text) {
    if (out.size() >= limit) break;
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  }
  return out;
}

// Taint values follow label-value rules: at most 63 of [A-Za-z0-9._-], alphanumeric ends.
bool IsValidLabelValue(std::string_view v) {
  if (v.size() > 63) return false;
  if (v.empty()) return true;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::string Rfc3339(int64_t ns) {
  // Kubernetes metav1.Time is second precision ("2025-01-21T04:41:44Z").
  std::string s = FormatIso8601(ns - ns % kNsPerSec);
  const size_t dot = s.find('.');
  if (dot != std::string::npos) s = s.substr(0, dot) + "Z";
  return s;
}

std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return out;
}

uint32_t Fnv1a(std::string_view text) {
  uint32_t h = 2166136261u;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

std::string Annotation(const Json& node, const std::string& key) {
  const Json* a = nullptr;
  if (node.contains("metadata") && node["metadata"].contains("annotations")) a = &node["metadata"]["annotations"];
  if (a == nullptr || !a->is_object() || !a->contains(key) || !(*a)[key].is_string()) return "";
  return (*a)[key].get<std::string>();
}

bool Unschedulable(const Json& node) {
  return node.contains("spec") && node["spec"].is_object() && node["spec"].value("unschedulable", false);
}

std::string ResourceVersion(const Json& obj) {
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  return obj["metadata"].value("resourceVersion", "");
}

Json Taints(const Json& node) {
  if (node.contains("spec") && node["spec"].is_object() && node["spec"].contains("taints") &&
      node["spec"]["taints"].is_array()) {
    return node["spec"]["taints"];
  }
  return Json::array();
}

// Why a pod is left alone by a drain ("" = evict it).
std::string SkipReason(const Json& pod) {
  const Json& meta = pod.contains("metadata") ? pod["metadata"] : Json::object();
  if (meta.contains("annotations") && meta["annotations"].is_object() &&
      meta["annotations"].contains("kubernetes.io/config.mirror")) {
    return "mirror";
  }
  if (meta.contains("ownerReferences") && meta["ownerReferences"].is_array()) {
    for (const Json& owner : meta["ownerReferences"]) {
      if (owner.is_object() && owner.value("kind", "") == "DaemonSet" && owner.value("controller", true)) {
        return "daemonset";
      }
    }
  }
  if (pod.contains("status") && pod["status"].is_object()) {
    const std::string phase = pod["status"].value("phase", "");
    if (phase == "Succeeded" || phase == "Failed") return "finished";
  }
  return "";
}

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
  std::string Key() const { return ns + "/" + name; }
};

struct EvictState {
  int64_t next_attempt_ns = 0;
  int64_t backoff_ns = 0;
  bool evicted = false;
  int refusals = 0;
};

}  // namespace

std::string_view ToString(CordonOutcome v) {
  switch (v) {
    case CordonOutcome::kCordoned:
      return "cordoned";
    case CordonOutcome::kAlreadyOurs:
      return "already cordoned by faultline";
    case CordonOutcome::kCordonedByOther:
      return "already cordoned by someone else (left alone)";
  }
  return "unknown";
}

std::string ConditionTypeForLayer(Layer layer) {
  switch (layer) {
    case Layer::kOob:
      return "FaultlineOOBProblem";
    case Layer::kGpu:
      return "FaultlineGPUProblem";
    case Layer::kOs:
      return "FaultlineOSProblem";
    case Layer::kFabric:
      return "FaultlineFabricProblem";
    case Layer::kWorkload:
      return "FaultlineWorkloadProblem";
  }
  return "FaultlineProblem";
}

std::string CamelReason(std::string_view text) {
  std::string out;
  bool upper = true;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    out.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
    upper = false;
    if (out.size() >= 128) break;
  }
  if (out.empty() || !std::isalpha(static_cast<unsigned char>(out.front()))) out.insert(0, "Faultline");
  return out;
}

bool IsValidKubeName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

struct KubernetesActuator::Impl {
  KubeConfig config;
  KubeOptions options;
  SystemClock system_clock;

  const Clock& clock() const { return options.clock != nullptr ? *options.clock : system_clock; }
  void Sleep(int64_t ns) const {
    if (ns <= 0) return;
    if (options.sleep) {
      options.sleep(ns);
    } else {
      std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
    }
  }

  Result<KubeHttpResponse> Call(const std::string& method, const std::string& path, const std::string& content_type,
                                const std::string& body) const {
    KubeHttpLimits limits{options.request_timeout_ms, options.connect_timeout_ms, options.max_body_bytes};
    return KubeRequest(config, limits, method, path, content_type, body);
  }

  static Status CheckName(const std::string& what, const std::string& name) {
    if (IsValidKubeName(name)) return Status::Ok();
    return Status(StatusCode::kInvalidArgument,
                  "kubernetes: '" + OneLine(name, 80) + "' is not a valid " + what + " name (DNS-1123 subdomain)");
  }

  Result<Json> GetNode(const std::string& node) const {
    auto r = Call("GET", "/api/v1/nodes/" + node, "", "");
    if (!r.ok()) return r.status();
    if (!Ok2xx(r->status)) return HttpError("reading node " + node, *r);
    Json j = Json::parse(r->body, nullptr, false);
    if (!j.is_object()) return Status(StatusCode::kCorrupt, "kubernetes: node " + node + " answer is not JSON");
    return j;
  }

  // GET the node, let `build` make a patch from it (nullopt = nothing to change), PATCH it
  // guarded by the resourceVersion read; a 409 means someone changed the node in between:
  // read again and rebuild, up to conflict_retries times.
  template <typename Build>
  Status GuardedPatch(const std::string& node, const std::string& what, Build build) const {
    for (int attempt = 0; attempt <= options.conflict_retries; ++attempt) {
      auto current = GetNode(node);
      if (!current.ok()) return current.status();
      auto patch = build(*current);
      if (!patch.ok()) return patch.status();
      if (!patch->has_value()) return Status::Ok();
      Json& p = **patch;
      p["metadata"]["resourceVersion"] = ResourceVersion(*current);
      auto r = Call("PATCH", "/api/v1/nodes/" + node, kStrategicMerge, p.dump());
      if (!r.ok()) return r.status();
      if (Ok2xx(r->status)) return Status::Ok();
      if (r->status != 409) return HttpError(what + " " + node, *r);
    }
    return Status(StatusCode::kUnavailable, "kubernetes: " + what + " " + node + ": the node kept changing (" +
                                                std::to_string(options.conflict_retries + 1) + " conflicts)");
  }

  Result<std::vector<Json>> ListPods(const std::string& node) const {
    std::vector<Json> pods;
    std::string cont;
    do {
      std::string path = "/api/v1/pods?fieldSelector=spec.nodeName%3D" + node + "&limit=500";
      if (!cont.empty()) path += "&continue=" + cont;
      auto r = Call("GET", path, "", "");
      if (!r.ok()) return r.status();
      if (!Ok2xx(r->status)) return HttpError("listing pods on " + node, *r);
      Json j = Json::parse(r->body, nullptr, false);
      if (!j.is_object() || !j.contains("items") || !j["items"].is_array()) {
        return Status(StatusCode::kCorrupt, "kubernetes: pod list for " + node + " is not a PodList");
      }
      for (Json& item : j["items"]) pods.push_back(std::move(item));
      cont = j.contains("metadata") && j["metadata"].is_object() ? j["metadata"].value("continue", "") : "";
      // The continue token is opaque base64-ish text: only URL-safe characters may pass.
      if (!std::all_of(cont.begin(), cont.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '~';
          })) {
        return Status(StatusCode::kCorrupt, "kubernetes: pod list continue token has unexpected characters");
      }
    } while (!cont.empty());
    return pods;
  }

  // 201/200 = eviction accepted; 404 = gone; 429 = refused for now (PDB). Anything else is an error.
  Result<int> Evict(const PodRef& pod) const {
    Json body{
        {"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", pod.name}, {"namespace", pod.ns}}}};
    auto r = Call("POST", "/api/v1/namespaces/" + pod.ns + "/pods/" + pod.name + "/eviction", kJson, body.dump());
    if (!r.ok()) return r.status();
    if (Ok2xx(r->status) || r->status == 404 || r->status == 429) return r->status;
    return HttpError("evicting pod " + pod.Key(), *r);
  }
};

KubernetesActuator::KubernetesActuator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KubernetesActuator::~KubernetesActuator() = default;

Result<std::unique_ptr<KubernetesActuator>> KubernetesActuator::Create(KubeConfig config, KubeOptions options) {
  if (Status s = ValidateKubeConfig(config, options.allow_plain_http); !s.ok()) return s;
  if (options.identity.empty() || !IsValidLabelValue(options.identity)) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: identity must be a label value (letters, digits, -_.)");
  }
  if (!Impl::CheckName("namespace", options.event_namespace).ok()) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: event namespace is not a valid name");
  }
  if (options.taint_key.empty() || options.taint_key.size() > 253 || options.taint_key.find(' ') != std::string::npos) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: taint key is not a valid key");
  }
  if (options.request_timeout_ms <= 0 || options.drain_timeout_ms <= 0 || options.evict_backoff_initial_ms <= 0 ||
      options.evict_backoff_max_ms < options.evict_backoff_initial_ms || options.drain_poll_ms <= 0 ||
      options.conflict_retries < 0) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: timeouts and back-off must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  impl->options = std::move(options);
  return std::unique_ptr<KubernetesActuator>(new KubernetesActuator(std::move(impl)));
}

Result<CordonOutcome> KubernetesActuator::Cordon(const std::string& node, const std::string& decision) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  CordonOutcome outcome = CordonOutcome::kCordoned;
  const std::string& me = impl_->options.identity;
  const std::string at = Rfc3339(impl_->clock().NowNs());
  Status s = impl_->GuardedPatch(node, "cordoning", [&](const Json& current) -> Result<std::optional<Json>> {
    if (Unschedulable(current)) {
      outcome = Annotation(current, kCordonedByAnnotation) == me ? CordonOutcome::kAlreadyOurs
                                                                 : CordonOutcome::kCordonedByOther;
      return std::optional<Json>();
    }
    outcome = CordonOutcome::kCordoned;
    Json annotations{{kCordonedByAnnotation, me}, {kCordonedAtAnnotation, at}};
    // A stale decision mark from an earlier cordon must not survive into this one.
    annotations[kDecisionAnnotation] = decision.empty() ? Json() : Json(OneLine(decision, kMaxMessageBytes));
    return std::optional<Json>(Json{{"metadata", {{"annotations", annotations}}}, {"spec", {{"unschedulable", true}}}});
  });
  if (!s.ok()) return s;
  return outcome;
}

Status KubernetesActuator::Uncordon(const std::string& node) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  const std::string& me = impl_->options.identity;
  return impl_->GuardedPatch(node, "uncordoning", [&](const Json& current) -> Result<std::optional<Json>> {
    const std::string mark = Annotation(current, kCordonedByAnnotation);
    if (mark != me) {
      return Status(StatusCode::kPermissionDenied,
                    "kubernetes: node " + node + " was not cordoned by " + me +
                        (mark.empty() ? "" : " (cordoned by '" + OneLine(mark, 63) + "')") + "; leaving it as it is");
    }
    // null deletes the key in both merge-patch flavours.
    return std::optional<Json>(
        Json{{"metadata",
              {{"annotations",
                {{kCordonedByAnnotation, nullptr}, {kCordonedAtAnnotation, nullptr}, {kDecisionAnnotation, nullptr}}}}},
             {"spec", {{"unschedulable", false}}}});
  });
}

Status KubernetesActuator::Taint(const std::string& node, const std::string& value, const std::string& effect) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
    return Status(StatusCode::kInvalidArgument,
                  "kubernetes: taint effect must be NoSchedule, PreferNoSchedule or NoExecute");
  }
  if (!IsValidLabelValue(value)) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: taint value '" + OneLine(value, 80) +
                                                    "' is not a label value (63 of letters, digits, -_.)");
  }
  const std::string& key = impl_->options.taint_key;
  const int64_t now = impl_->clock().NowNs();
  return impl_->GuardedPatch(node, "tainting", [&](const Json& current) -> Result<std::optional<Json>> {
    Json kept = Json::array();
    bool present = false;
    for (const Json& t : Taints(current)) {
      const bool ours = t.is_object() && t.value("key", "") == key && t.value("effect", "") == effect;
      if (ours && t.value("value", "") == value) present = true;
      if (!ours) kept.push_back(t);
    }
    if (present) return std::optional<Json>();
    Json taint{{"key", key}, {"value", value}, {"effect", effect}};
    if (effect == "NoExecute") taint["timeAdded"] = Rfc3339(now);
    kept.push_back(std::move(taint));
    // spec.taints has no merge key: the list is replaced whole, hence the resourceVersion guard.
    return std::optional<Json>(Json{{"spec", {{"taints", kept}}}});
  });
}

Status KubernetesActuator::Untaint(const std::string& node) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  const std::string& key = impl_->options.taint_key;
  return impl_->GuardedPatch(node, "untainting", [&](const Json& current) -> Result<std::optional<Json>> {
    Json kept = Json::array();
    bool removed = false;
    for (const Json& t : Taints(current)) {
      if (t.is_object() && t.value("key", "") == key) {
        removed = true;
      } else {
        kept.push_back(t);
      }
    }
    if (!removed) return std::optional<Json>();
    return std::optional<Json>(Json{{"spec", {{"taints", kept}}}});
  });
}

Status KubernetesActuator::SetCondition(const std::string& node, const NodeConditionUpdate& condition) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  if (condition.type.empty() || CamelReason(condition.type) != condition.type) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: condition type must be CamelCase letters and digits");
  }
  auto current = impl_->GetNode(node);
  if (!current.ok()) return current.status();
  const std::string status = condition.active ? "True" : "False";
  const std::string now = Rfc3339(impl_->clock().NowNs());
  // lastTransitionTime moves only when the status flips (what `kubectl describe` shows as "since").
  std::string transition = now;
  const Json& st = current->contains("status") ? (*current)["status"] : Json::object();
  if (st.is_object() && st.contains("conditions") && st["conditions"].is_array()) {
    for (const Json& c : st["conditions"]) {
      if (c.is_object() && c.value("type", "") == condition.type && c.value("status", "") == status) {
        transition = c.value("lastTransitionTime", now);
      }
    }
  }
  Json c{{"type", condition.type},
         {"status", status},
         {"reason", CamelReason(condition.reason.empty() ? condition.type : condition.reason)},
         {"message", OneLine(condition.message, kMaxMessageBytes)},
         {"lastHeartbeatTime", now},
         {"lastTransitionTime", transition}};
  // conditions merge by "type" in a strategic-merge patch: the other conditions stay.
  Json patch{{"status", {{"conditions", Json::array({c})}}}};
  auto r = impl_->Call("PATCH", "/api/v1/nodes/" + node + "/status", kStrategicMerge, patch.dump());
  if (!r.ok()) return r.status();
  if (!Ok2xx(r->status)) return HttpError("setting condition " + condition.type + " on " + node, *r);
  return Status::Ok();
}

Status KubernetesActuator::PostEvent(const std::string& node, const KubeEvent& event) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  const int64_t now_ns = impl_->clock().NowNs();
  const std::string now = Rfc3339(now_ns);
  const std::string& ns = impl_->options.event_namespace;
  // kubectl names events NODE.<hex ns>; the hash of the content keeps two different events of
  // the same instant apart while a retry of the same event gets the same name (409 = done).
  const std::string name = node.substr(0, 253 - 26) + "." + Hex(static_cast<uint64_t>(now_ns)) +
                           Hex(Fnv1a(event.reason + "\n" + event.message + (event.warning ? "W" : "N")));
  Json body{{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"involvedObject", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", node}}},
            {"reason", CamelReason(event.reason)},
            {"message", OneLine(event.message, kMaxMessageBytes)},
            {"type", event.warning ? "Warning" : "Normal"},
            {"source", {{"component", impl_->options.component}, {"host", node}}},
            {"reportingComponent", impl_->options.component},
            {"reportingInstance", node},
            {"firstTimestamp", now},
            {"lastTimestamp", now},
            {"count", 1}};
  auto r = impl_->Call("POST", "/api/v1/namespaces/" + ns + "/events", kJson, body.dump());
  if (!r.ok()) return r.status();
  // 409 AlreadyExists: this very event was posted by an earlier try.
  if (Ok2xx(r->status) || r->status == 409) return Status::Ok();
  return HttpError("posting an event about " + node, *r);
}

Result<DrainReport> KubernetesActuator::Drain(const std::string& node, const std::string& decision) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  DrainReport report;
  auto cordon = Cordon(node, decision);
  if (!cordon.ok()) return cordon.status();
  report.cordon = *cordon;
  const KubeOptions& opt = impl_->options;
  const Clock& clock = impl_->clock();
  const int64_t deadline = clock.MonotonicNs() + opt.drain_timeout_ms * kNsPerMs;
  std::map<std::string, EvictState> states;  // by namespace/name/uid
  std::map<std::string, bool> reported_skip;
  while (true) {
    auto pods = impl_->ListPods(node);
    if (!pods.ok()) return pods.status();
    std::vector<std::string> remaining;
    int64_t next_due = clock.MonotonicNs() + opt.drain_poll_ms * kNsPerMs;
    for (const Json& pod : *pods) {
      const Json& meta = pod.contains("metadata") ? pod["metadata"] : Json::object();
      PodRef ref{meta.value("namespace", ""), meta.value("name", ""), meta.value("uid", "")};
      if (!IsValidKubeName(ref.ns) || !IsValidKubeName(ref.name)) {
        return Status(StatusCode::kCorrupt, "kubernetes: pod list names a pod with an invalid name");
      }
      if (const std::string why = SkipReason(pod); !why.empty()) {
        if (!reported_skip[ref.Key()]) report.skipped.push_back(ref.Key() + " (" + why + ")");
        reported_skip[ref.Key()] = true;
        continue;
      }
      EvictState& st = states[ref.Key() + "/" + ref.uid];
      remaining.push_back(ref.Key() + (st.refusals > 0 ? " (eviction refused " + std::to_string(st.refusals) +
                                                             " time(s): PodDisruptionBudget)"
                                       : st.evicted ? " (terminating)"
                                                    : ""));
      if (st.evicted) continue;  // waiting for it to terminate
      const int64_t now = clock.MonotonicNs();
      if (now < st.next_attempt_ns) {
        next_due = std::min(next_due, st.next_attempt_ns);
        continue;
      }
      auto code = impl_->Evict(ref);
      if (!code.ok()) return code.status();
      if (*code == 404) {
        report.gone.push_back(ref.Key());
        st.evicted = true;
      } else if (*code == 429) {
        ++report.pdb_refusals;
        ++st.refusals;
        st.backoff_ns = st.backoff_ns == 0 ? opt.evict_backoff_initial_ms * kNsPerMs
                                           : std::min(st.backoff_ns * 2, opt.evict_backoff_max_ms * kNsPerMs);
        st.next_attempt_ns = clock.MonotonicNs() + st.backoff_ns;
        next_due = std::min(next_due, st.next_attempt_ns);
      } else {
        report.evicted.push_back(ref.Key());
        st.evicted = true;
      }
    }
    if (remaining.empty()) return report;
    const int64_t now = clock.MonotonicNs();
    if (now >= deadline) {
      std::string list;
      for (size_t i = 0; i < remaining.size() && i < 10; ++i) list += (i ? ", " : "") + remaining[i];
      if (remaining.size() > 10) list += ", ...";
      return Status(StatusCode::kTimeout, "kubernetes: draining " + node + " timed out after " +
                                              std::to_string(opt.drain_timeout_ms / 1000) + " s with " +
                                              std::to_string(remaining.size()) + " pod(s) left: " + list +
                                              " (no pod was forced)");
    }
    impl_->Sleep(std::max<int64_t>(kNsPerMs, std::min(next_due, deadline) - now));
  }
}

namespace {

KubeNodeState StateOf(const Json& node) {
  KubeNodeState st;
  if (node.contains("metadata") && node["metadata"].is_object()) st.name = node["metadata"].value("name", "");
  st.unschedulable = Unschedulable(node);
  st.cordoned_by = Annotation(node, kCordonedByAnnotation);
  st.decision = Annotation(node, kDecisionAnnotation);
  if (const auto at = ParseIso8601(Annotation(node, kCordonedAtAnnotation))) st.cordoned_at_ns = *at;
  return st;
}

// 100 pages of 500: ten times the largest cluster Kubernetes supports (5,000 nodes).
constexpr int kMaxListPages = 100;

bool IsContinueToken(const std::string& cont) {
  return std::all_of(cont.begin(), cont.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '~';
  });
}

}  // namespace

const KubeOptions& KubernetesActuator::options() const { return impl_->options; }

Result<KubeNodeState> KubernetesActuator::GetNodeState(const std::string& node) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  auto current = impl_->GetNode(node);
  if (!current.ok()) return current.status();
  KubeNodeState st = StateOf(*current);
  st.name = node;
  return st;
}

Result<std::vector<KubeNodeState>> KubernetesActuator::ListNodes() {
  std::vector<KubeNodeState> nodes;
  std::string cont;
  // Bounded: a server that keeps handing out continue tokens cannot keep us here forever.
  for (int page = 0; page < kMaxListPages; ++page) {
    std::string path = "/api/v1/nodes?limit=500";
    if (!cont.empty()) path += "&continue=" + cont;
    auto r = impl_->Call("GET", path, "", "");
    if (!r.ok()) return r.status();
    if (!Ok2xx(r->status)) return HttpError("listing nodes", *r);
    Json j = Json::parse(r->body, nullptr, false);
    if (!j.is_object() || !j.contains("items") || !j["items"].is_array()) {
      return Status(StatusCode::kCorrupt, "kubernetes: node list is not a NodeList");
    }
    for (const Json& item : j["items"]) {
      if (!item.is_object()) return Status(StatusCode::kCorrupt, "kubernetes: node list holds a non-object");
      KubeNodeState st = StateOf(item);
      if (!IsValidKubeName(st.name)) return Status(StatusCode::kCorrupt, "kubernetes: node list names an invalid node");
      nodes.push_back(std::move(st));
    }
    cont = j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("continue") &&
                   j["metadata"]["continue"].is_string()
               ? j["metadata"]["continue"].get<std::string>()
               : "";
    if (!IsContinueToken(cont)) {
      return Status(StatusCode::kCorrupt, "kubernetes: node list continue token has unexpected characters");
    }
    if (cont.empty()) return nodes;
  }
  return Status(StatusCode::kCorrupt,
                "kubernetes: node list did not end after " + std::to_string(kMaxListPages) + " pages");
}

Result<std::vector<std::string>> KubernetesActuator::EvictablePods(const std::string& node) {
  if (Status s = Impl::CheckName("node", node); !s.ok()) return s;
  auto pods = impl_->ListPods(node);
  if (!pods.ok()) return pods.status();
  std::vector<std::string> out;
  for (const Json& pod : *pods) {
    if (!SkipReason(pod).empty()) continue;
    const Json& meta = pod.contains("metadata") && pod["metadata"].is_object() ? pod["metadata"] : Json::object();
    out.push_back(meta.value("namespace", "") + "/" + meta.value("name", ""));
  }
  return out;
}

}  // namespace faultline::actions
