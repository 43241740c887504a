// deploy/kubernetes/rbac.yaml against what the agent really sends. The actuators are built
// the way the agent builds them (policy::BuildActuators, in-cluster service account) and
// driven through every Kubernetes operation they have (cordon, drain with evictions, node
// conditions, events, the fleet view, a resolve) against the fake API server. Each recorded
// request becomes (verb, API group, resource[/subresource], namespace) and must be allowed
// by a rule bound to the DaemonSet's service account; each verb the role grants must be
// used by at least one request, so the role holds nothing the agent never needs.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "core/time.h"
#include "fake_kube_api.h"
#include "policy/actuators.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing_kube::FakeKubeApi;
using testing_kube::RecordedRequest;

constexpr char kToken[] = "rbac-sa-token-5c1e";
constexpr char kNode[] = "gpu-node-1";

fs::path Deploy() { return fs::path(FAULTLINE_SOURCE_DIR) / "deploy/kubernetes"; }

// One request as RBAC sees it. `resource` carries the subresource ("pods/eviction").
struct ApiCall {
  std::string verb;
  std::string group;  // "" = core
  std::string resource;
  std::string ns;  // "" = cluster scope
  std::string ToString() const {
    return verb + " " + (group.empty() ? "core" : group) + "/" + resource + (ns.empty() ? "" : " in " + ns);
  }
  bool operator<(const ApiCall& o) const {
    return std::tie(verb, group, resource, ns) < std::tie(o.verb, o.group, o.resource, o.ns);
  }
};

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string p; std::getline(in, p, '/');) {
    if (!p.empty()) parts.push_back(p);
  }
  return parts;
}

// The verb the API server's authorizer checks for a method on a path (Kubernetes
// "Request verbs": a GET without an object name is list, or watch with watch=true).
std::string VerbFor(const std::string& method, bool named, const std::string& query) {
  if (method == "GET") {
    if (named) return "get";
    return query.find("watch=true") != std::string::npos || query.find("watch=1") != std::string::npos ? "watch"
                                                                                                       : "list";
  }
  if (method == "POST") return "create";
  if (method == "PATCH") return "patch";
  if (method == "PUT") return "update";
  if (method == "DELETE") return named ? "delete" : "deletecollection";
  return "unknown:" + method;
}

// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] and /apis/GROUP/VERSION/... ; "" group for
// the core API. A path outside the resource API comes back with verb "non-resource".
ApiCall Classify(const RecordedRequest& r) {
  const std::vector<std::string> p = Split(r.path);
  size_t i = 0;
  ApiCall call;
  if (p.size() >= 2 && p[0] == "api") {
    i = 2;
  } else if (p.size() >= 3 && p[0] == "apis") {
    call.group = p[1];
    i = 3;
  } else {
    return {"non-resource", "", r.path, ""};
  }
  // "namespaces/NS/<resource>" scopes a namespaced resource; "namespaces/NS" alone is the
  // Namespace object itself.
  if (p.size() > i + 2 && p[i] == "namespaces") {
    call.ns = p[i + 1];
    i += 2;
  }
  if (i >= p.size()) return {"non-resource", "", r.path, ""};
  call.resource = p[i];
  const bool named = p.size() > i + 1;
  if (p.size() > i + 2) call.resource += "/" + p[i + 2];
  call.verb = VerbFor(r.method, named, r.query);
  return call;
}

// One RBAC rule and where it applies ("" = every namespace: a ClusterRole through a
// ClusterRoleBinding).
struct Grant {
  std::set<std::string> groups;
  std::set<std::string> resources;
  std::set<std::string> verbs;
  std::string ns;
  std::string origin;  // "ClusterRole/faultline-agent rule 3"
};

std::set<std::string> Strings(const YAML::Node& list) {
  std::set<std::string> out;
  for (const YAML::Node& v : list) out.insert(v.as<std::string>());
  return out;
}

const YAML::Node* FindRole(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name) {
  for (const YAML::Node& d : docs) {
    if (d["kind"] && d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>() == name) return &d;
  }
  return nullptr;
}

bool BindsAccount(const YAML::Node& binding, const std::string& account, const std::string& account_ns) {
  for (const YAML::Node& s : binding["subjects"]) {
    if (s["kind"].as<std::string>() == "ServiceAccount" && s["name"].as<std::string>() == account &&
        s["namespace"].as<std::string>() == account_ns) {
      return true;
    }
  }
  return false;
}

// Every rule the manifests grant the service account `account` in `account_ns`.
std::vector<Grant> GrantsFor(const std::vector<YAML::Node>& docs, const std::string& account,
                             const std::string& account_ns) {
  std::vector<Grant> grants;
  for (const YAML::Node& b : docs) {
    const std::string kind = b["kind"] ? b["kind"].as<std::string>() : "";
    if ((kind != "ClusterRoleBinding" && kind != "RoleBinding") || !BindsAccount(b, account, account_ns)) continue;
    const std::string role_kind = b["roleRef"]["kind"].as<std::string>();
    const std::string role_name = b["roleRef"]["name"].as<std::string>();
    const YAML::Node* role = FindRole(docs, role_kind, role_name);
    if (role == nullptr) continue;  // a binding to a role not shipped grants nothing testable
    const std::string ns = kind == "RoleBinding" ? b["metadata"]["namespace"].as<std::string>() : "";
    int index = 0;
    for (const YAML::Node& rule : (*role)["rules"]) {
      grants.push_back({Strings(rule["apiGroups"]), Strings(rule["resources"]), Strings(rule["verbs"]), ns,
                        role_kind + "/" + role_name + " rule " + std::to_string(index++)});
    }
  }
  return grants;
}

bool Allows(const Grant& g, const ApiCall& c) {
  return g.groups.count(c.group) && g.resources.count(c.resource) && g.verbs.count(c.verb) &&
         (g.ns.empty() || g.ns == c.ns);
}

// Calls no rule allows.
std::vector<std::string> Forbidden(const std::vector<Grant>& grants, const std::set<ApiCall>& calls) {
  std::vector<std::string> out;
  for (const ApiCall& c : calls) {
    bool allowed = false;
    for (const Grant& g : grants) allowed = allowed || Allows(g, c);
    if (!allowed) out.push_back(c.ToString());
  }
  return out;
}

// group/resource:verb triples granted that no call used (wildcards count as unused: the
// agent never needs one).
std::vector<std::string> Unused(const std::vector<Grant>& grants, const std::set<ApiCall>& calls) {
  std::vector<std::string> out;
  for (const Grant& g : grants) {
    for (const std::string& group : g.groups) {
      for (const std::string& resource : g.resources) {
        for (const std::string& verb : g.verbs) {
          bool used = false;
          for (const ApiCall& c : calls) {
            used = used ||
                   (c.group == group && c.resource == resource && c.verb == verb && (g.ns.empty() || g.ns == c.ns));
          }
          if (!used) out.push_back(g.origin + ": " + (group.empty() ? "core" : group) + "/" + resource + ":" + verb);
        }
      }
    }
  }
  return out;
}

std::string ServiceAccountOfDaemonSet() {
  for (const YAML::Node& d : YAML::LoadAllFromFile((Deploy() / "daemonset.yaml").string())) {
    if (d["kind"] && d["kind"].as<std::string>() == "DaemonSet") {
      return d["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>();
    }
  }
  return "";
}

std::string NamespaceOfDaemonSet() {
  for (const YAML::Node& d : YAML::LoadAllFromFile((Deploy() / "daemonset.yaml").string())) {
    if (d["kind"] && d["kind"].as<std::string>() == "DaemonSet") return d["metadata"]["namespace"].as<std::string>();
  }
  return "";
}

actions::Decision MakeDecision(actions::ActionClass c) {
  actions::Decision d;
  d.key = std::string(kNode) + "|" + std::string(actions::ToString(c)) + "|hbm_uncorrectable|gpu/3|1767225600000000000";
  d.node = kNode;
  d.target_node = kNode;
  d.action_class = c;
  d.diagnosis_id = 7;
  d.diagnosis.fault_class = FaultClass::kHbmUncorrectable;
  d.diagnosis.layer = Layer::kGpu;
  d.diagnosis.component = ComponentRef{ComponentType::kGpu, "3", {}};
  d.diagnosis.summary = "uncorrectable ECC in HBM";
  d.rule = "recommended_action";
  return d;
}

class RbacCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("rbac_calls_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sa");
    api_ = FakeKubeApi::Start(true, kToken, dir_.string());
    ASSERT_NE(api_, nullptr);
    api_->AddNode(kNode);
    api_->AddNode("gpu-node-2");
    api_->AddPod({"ml", "trainer-0", kNode, "StatefulSet"});
    api_->AddPod({"ml", "notebook", kNode, ""});
    api_->AddPod({"kube-system", "dcgm-exporter", kNode, "DaemonSet"});
    // The service account the kubelet mounts into the pod: token and the cluster's CA.
    std::ofstream(dir_ / "sa/token") << kToken << "\n";
    fs::copy_file(api_->ca_file(), dir_ / "sa/ca.crt");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The actuator set as `faultline agent` builds it for platform = "kubernetes" in the pod.
  std::unique_ptr<policy::ActuatorSet> BuildAsTheAgent() {
    policy::PolicyConfig config;
    config.platform = "kubernetes";
    config.enable = {actions::ActionClass::kCordon, actions::ActionClass::kDrain};
    const std::string port = api_->url().substr(api_->url().rfind(':') + 1);
    policy::ActuatorDeps deps;
    deps.env = [port](const std::string& name) -> std::optional<std::string> {
      if (name == "KUBERNETES_SERVICE_HOST") return std::string("127.0.0.1");
      if (name == "KUBERNETES_SERVICE_PORT") return port;
      return std::nullopt;
    };
    deps.service_account_dir = (dir_ / "sa").string();
    auto set = policy::BuildActuators(config, deps);
    EXPECT_TRUE(set.ok()) << set.status().ToString();
    return set.ok() ? std::move(set).value() : nullptr;
  }

  static actions::Actuator* For(const policy::ActuatorSet& set, actions::ActionClass c) {
    for (actions::Actuator* a : set.actuators()) {
      if (a->Handles(c)) return a;
    }
    return nullptr;
  }

  // Every Kubernetes operation the agent has: the fleet view, a cordon decision (cordon,
  // taint, condition, event), a drain decision (list pods, evictions) and its resolve.
  void DriveEveryOperation(policy::ActuatorSet& set) {
    ASSERT_NE(set.fleet(), nullptr);
    ASSERT_NE(set.reverter(), nullptr);
    ASSERT_TRUE(set.fleet()->Read().ok());
    actions::Actuator* cordon = For(set, actions::ActionClass::kCordon);
    actions::Actuator* drain = For(set, actions::ActionClass::kDrain);
    ASSERT_NE(cordon, nullptr);
    ASSERT_NE(drain, nullptr);
    const actions::Decision c = MakeDecision(actions::ActionClass::kCordon);
    ASSERT_TRUE(cordon->Observe(c).ok());
    ASSERT_TRUE(cordon->Apply(c).ok());
    ASSERT_TRUE(set.reverter()->Revert(c).ok());
    const actions::Decision d = MakeDecision(actions::ActionClass::kDrain);
    ASSERT_TRUE(drain->Apply(d).ok());
    ASSERT_TRUE(drain->Finish(d).ok());
    auto observed = drain->Observe(d);
    ASSERT_TRUE(observed.ok());
    EXPECT_EQ(*observed, actions::Observed::kInEffect);
    ASSERT_TRUE(set.reverter()->Revert(d).ok());
  }

  std::set<ApiCall> RecordedCalls() const {
    std::set<ApiCall> calls;
    for (const RecordedRequest& r : api_->Requests()) calls.insert(Classify(r));
    return calls;
  }

  fs::path dir_;
  std::unique_ptr<FakeKubeApi> api_;
};

TEST_F(RbacCallsTest, EveryRequestTheAgentMakesIsAllowedAndEveryGrantIsUsed) {
  auto set = BuildAsTheAgent();
  ASSERT_NE(set, nullptr);
  DriveEveryOperation(*set);
  EXPECT_TRUE(api_->Violations().empty()) << api_->Violations().front();
  EXPECT_FALSE(api_->HasPod("ml", "trainer-0"));  // the drain went through the Eviction API

  const std::set<ApiCall> calls = RecordedCalls();
  // What the code does today; a new kind of request shows up here and must be granted.
  std::set<std::string> seen;
  for (const ApiCall& c : calls) seen.insert(c.ToString());
  EXPECT_EQ(seen, (std::set<std::string>{"get core/nodes", "list core/nodes", "patch core/nodes",
                                         "patch core/nodes/status", "list core/pods", "create core/pods/eviction in ml",
                                         "create core/events in default"}));

  const auto rbac = YAML::LoadAllFromFile((Deploy() / "rbac.yaml").string());
  const std::vector<Grant> grants = GrantsFor(rbac, ServiceAccountOfDaemonSet(), NamespaceOfDaemonSet());
  ASSERT_FALSE(grants.empty()) << "rbac.yaml binds nothing to the DaemonSet's service account";
  for (const std::string& f : Forbidden(grants, calls)) ADD_FAILURE() << "not allowed by rbac.yaml: " << f;
  for (const std::string& u : Unused(grants, calls)) ADD_FAILURE() << "granted but never used: " << u;
}

// The checker itself: a role missing a verb the agent uses, or granting one it does not,
// is reported (so the test above cannot pass on a checker that sees nothing).
TEST(RbacChecker, ReportsAMissingAndAnUnusedGrant) {
  const auto docs = YAML::LoadAll(R"(
kind: ClusterRole
metadata: {name: r}
rules:
  - {apiGroups: [""], resources: [nodes], verbs: [get, patch]}
  - {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create]}
---
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: sa, namespace: ns}]
---
kind: RoleBinding
metadata: {name: other, namespace: ns}
roleRef: {kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: someone-else, namespace: ns}]
)");
  const std::vector<Grant> grants = GrantsFor(docs, "sa", "ns");
  ASSERT_EQ(grants.size(), 2u);
  const std::set<ApiCall> calls{
      Classify({"GET", "/api/v1/nodes/n1", "", "", "", "", 200}),
      Classify({"GET", "/api/v1/nodes", "limit=500", "", "", "", 200}),
      Classify({"POST", "/api/v1/namespaces/default/events", "", "", "", "", 201}),
  };
  EXPECT_EQ(Forbidden(grants, calls), std::vector<std::string>{"list core/nodes"});
  EXPECT_EQ(Unused(grants, calls), (std::vector<std::string>{"ClusterRole/r rule 0: core/nodes:patch",
                                                             "ClusterRole/r rule 1: events.k8s.io/events:create"}));
}

TEST(RbacChecker, ClassifiesPathsAsTheAuthorizerDoes) {
  EXPECT_EQ(Classify({"POST", "/api/v1/namespaces/ml/pods/p/eviction", "", "", "", "", 201}).ToString(),
            "create core/pods/eviction in ml");
  EXPECT_EQ(Classify({"PATCH", "/api/v1/nodes/n/status", "", "", "", "", 200}).ToString(), "patch core/nodes/status");
  EXPECT_EQ(Classify({"GET", "/api/v1/pods", "fieldSelector=spec.nodeName=n", "", "", "", 200}).ToString(),
            "list core/pods");
  EXPECT_EQ(Classify({"GET", "/api/v1/nodes", "watch=true", "", "", "", 200}).ToString(), "watch core/nodes");
  EXPECT_EQ(Classify({"DELETE", "/apis/events.k8s.io/v1/namespaces/d/events/e", "", "", "", "", 200}).ToString(),
            "delete events.k8s.io/events in d");
  EXPECT_EQ(Classify({"GET", "/api/v1/namespaces/ml", "", "", "", "", 200}).ToString(), "get core/namespaces");
}

}  // namespace
}  // namespace faultline
