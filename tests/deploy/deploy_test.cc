// The files in deploy/ are checked for the fields that matter: a unit or manifest that
// loses its hardening, its kernel-log access or its node name fails here, not on a node.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/config.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

fs::path Deploy() { return fs::path(FAULTLINE_SOURCE_DIR) / "deploy"; }

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// key -> every value it is given in the unit (systemd allows repeats).
std::multimap<std::string, std::string> UnitKeys(const std::string& text) {
  std::multimap<std::string, std::string> keys;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) keys.emplace(line.substr(0, eq), line.substr(eq + 1));
  }
  return keys;
}

std::string One(const std::multimap<std::string, std::string>& keys, const std::string& key) {
  auto it = keys.find(key);
  return it == keys.end() ? "" : it->second;
}

TEST(DeploySystemd, UnitIsHardenedButCanReadTheKernelLog) {
  const auto keys = UnitKeys(ReadFile(Deploy() / "systemd/faultline-agent.service"));
  EXPECT_EQ(One(keys, "ProtectSystem"), "strict");
  EXPECT_EQ(One(keys, "NoNewPrivileges"), "yes");
  EXPECT_EQ(One(keys, "StateDirectory"), "faultline");  // /var/lib/faultline, the only writable path
  EXPECT_EQ(One(keys, "CapabilityBoundingSet"), "CAP_SYSLOG");
  EXPECT_EQ(One(keys, "AmbientCapabilities"), "CAP_SYSLOG");
  // Either would cut the agent off from a layer it reads.
  EXPECT_EQ(keys.count("ProtectKernelLogs"), 0u) << "hides /dev/kmsg";
  EXPECT_EQ(keys.count("PrivateDevices"), 0u) << "hides /dev/nvidia*";
  EXPECT_NE(One(keys, "ExecStart").find("faultline agent --config /etc/faultline/agent.toml"), std::string::npos);
  EXPECT_FALSE(One(keys, "MemoryMax").empty());
}

// systemd's own check, on a copy whose ExecStart names the binary this build made.
TEST(DeploySystemd, SystemdAnalyzeVerifyAcceptsTheUnit) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0) GTEST_SKIP() << "systemd-analyze not installed";
  const fs::path binary = fs::path(FAULTLINE_BINARY_DIR) / "faultline";
  if (!fs::exists(binary)) GTEST_SKIP() << "faultline CLI not built";
  std::string unit = ReadFile(Deploy() / "systemd/faultline-agent.service");
  const std::string from = "ExecStart=/usr/local/bin/faultline";
  ASSERT_NE(unit.find(from), std::string::npos);
  unit.replace(unit.find(from), from.size(), "ExecStart=" + binary.string());
  const fs::path dir = fs::temp_directory_path() / ("faultline_deploy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path copy = dir / "faultline-agent.service";
  std::ofstream(copy) << unit;
  const std::string out = (dir / "verify.out").string();
  const int rc = std::system(("systemd-analyze verify " + copy.string() + " >" + out + " 2>&1").c_str());
  const std::string said = ReadFile(out);
  fs::remove_all(dir);
  EXPECT_EQ(rc, 0) << said;
  // verify exits 0 on some unknown-key warnings: none is allowed.
  EXPECT_EQ(said.find("Unknown key"), std::string::npos) << said;
  EXPECT_EQ(said.find("faultline-agent.service:"), std::string::npos) << said;
}

YAML::Node FindKind(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const YAML::Node& d : docs) {
    if (d["kind"] && d["kind"].as<std::string>() == kind) return d;
  }
  return YAML::Node();
}

TEST(DeployKubernetes, DaemonSetMountsKernelLogAndSysReadOnlyAndPassesTheNodeName) {
  const auto docs = YAML::LoadAllFromFile((Deploy() / "kubernetes/daemonset.yaml").string());
  const YAML::Node ds = FindKind(docs, "DaemonSet");
  ASSERT_TRUE(ds) << "no DaemonSet";
  const YAML::Node pod = ds["spec"]["template"]["spec"];
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node c = pod["containers"][0];
  std::map<std::string, YAML::Node> volumes;
  for (const YAML::Node& v : pod["volumes"]) volumes[v["name"].as<std::string>()] = v;
  std::map<std::string, YAML::Node> mounts;
  for (const YAML::Node& m : c["volumeMounts"]) mounts[m["mountPath"].as<std::string>()] = m;

  ASSERT_TRUE(mounts.count("/dev/kmsg"));
  EXPECT_TRUE(mounts["/dev/kmsg"]["readOnly"].as<bool>());
  const YAML::Node kmsg = volumes[mounts["/dev/kmsg"]["name"].as<std::string>()];
  EXPECT_EQ(kmsg["hostPath"]["path"].as<std::string>(), "/dev/kmsg");
  EXPECT_EQ(kmsg["hostPath"]["type"].as<std::string>(), "CharDevice");

  ASSERT_TRUE(mounts.count("/host/sys"));
  EXPECT_TRUE(mounts["/host/sys"]["readOnly"].as<bool>());
  EXPECT_EQ(volumes[mounts["/host/sys"]["name"].as<std::string>()]["hostPath"]["path"].as<std::string>(), "/sys");
  ASSERT_TRUE(mounts.count("/var/lib/faultline"));  // the store survives a pod restart

  // The node name the agent stores and cordons under is the Kubernetes node's.
  std::vector<std::string> args;
  for (const YAML::Node& a : c["args"]) args.push_back(a.as<std::string>());
  auto node_flag = std::find(args.begin(), args.end(), "--node");
  ASSERT_NE(node_flag, args.end());
  ASSERT_NE(node_flag + 1, args.end());
  EXPECT_EQ(*(node_flag + 1), "$(NODE_NAME)");
  bool node_env = false;
  for (const YAML::Node& e : c["env"]) {
    if (e["name"].as<std::string>() == "NODE_NAME") {
      node_env = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>() == "spec.nodeName";
    }
  }
  EXPECT_TRUE(node_env);

  // A pod opens a host device only when privileged (the runtime's device cgroup refuses
  // /dev/kmsg otherwise, whatever its capabilities); the root file system stays read-only.
  // The API server rejects allowPrivilegeEscalation: false beside privileged: true.
  const YAML::Node sc = c["securityContext"];
  EXPECT_TRUE(sc["privileged"].as<bool>());
  EXPECT_FALSE(sc["allowPrivilegeEscalation"]) << "invalid with privileged: true";
  EXPECT_FALSE(sc["capabilities"]) << "ignored when privileged: it would only mislead";
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>());
  // NVML and nvidia-smi (GPU reset) come from the host's driver through the NVIDIA runtime.
  EXPECT_EQ(pod["runtimeClassName"].as<std::string>(), "nvidia");
  // It must keep running on the node it cordons and taints.
  bool tolerates_all = false;
  for (const YAML::Node& t : pod["tolerations"]) tolerates_all |= t["operator"].as<std::string>() == "Exists";
  EXPECT_TRUE(tolerates_all);
}

TEST(DeployKubernetes, RbacAllowsOnlyCordonConditionsEvictionsAndEvents) {
  const auto rbac = YAML::LoadAllFromFile((Deploy() / "kubernetes/rbac.yaml").string());
  const auto ds = FindKind(YAML::LoadAllFromFile((Deploy() / "kubernetes/daemonset.yaml").string()), "DaemonSet");
  const YAML::Node sa = FindKind(rbac, "ServiceAccount");
  ASSERT_TRUE(sa);
  EXPECT_EQ(sa["metadata"]["name"].as<std::string>(),
            ds["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>());
  EXPECT_EQ(sa["metadata"]["namespace"].as<std::string>(), ds["metadata"]["namespace"].as<std::string>());
  const YAML::Node role = FindKind(rbac, "ClusterRole");
  ASSERT_TRUE(role);
  std::set<std::string> granted;  // "resource:verb"
  for (const YAML::Node& rule : role["rules"]) {
    for (const YAML::Node& res : rule["resources"]) {
      for (const YAML::Node& verb : rule["verbs"]) granted.insert(res.as<std::string>() + ":" + verb.as<std::string>());
    }
  }
  for (const char* needed : {"nodes:patch", "nodes/status:patch", "pods:list", "pods/eviction:create",
                                    "events:create"}) {
    EXPECT_TRUE(granted.count(needed)) << needed;
  }
  for (const std::string& g : granted) {
    EXPECT_EQ(g.find('*'), std::string::npos) << g;
    EXPECT_EQ(g.find(":delete"), std::string::npos) << g << ": evictions, never deletes";
    EXPECT_EQ(g.find("secrets"), std::string::npos) << g;
  }
  const YAML::Node binding = FindKind(rbac, "ClusterRoleBinding");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), role["metadata"]["name"].as<std::string>());
}

std::map<std::string, std::string> EnvFieldRefs(const YAML::Node& container) {
  std::map<std::string, std::string> refs;
  for (const YAML::Node& e : container["env"]) {
    if (e["valueFrom"] && e["valueFrom"]["fieldRef"]) {
      refs[e["name"].as<std::string>()] = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
    }
  }
  return refs;
}

// The agent's [server] as the DaemonSet runs it: on the pod IP at the config's port, with
// the token the Secret volume mounts; Prometheus finds that port by annotation or through
// the ServiceMonitor, and sends the same Secret's token.
TEST(DeployKubernetes, MetricsAreServedOnThePodIpWhereTheScrapeLooks) {
  auto config = daemon::LoadAgentConfig((Deploy() / "config/kubernetes-node.toml").string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_FALSE(config->server.listen.empty()) << "[server] off: nothing to scrape";
  const std::string port = config->server.listen.substr(config->server.listen.rfind(':') + 1);
  ASSERT_FALSE(config->server.token_file.empty()) << "off loopback the API needs a token";

  const YAML::Node ds = FindKind(YAML::LoadAllFromFile((Deploy() / "kubernetes/daemonset.yaml").string()), "DaemonSet");
  const YAML::Node tmpl = ds["spec"]["template"];
  const YAML::Node c = tmpl["spec"]["containers"][0];
  std::vector<std::string> args;
  for (const YAML::Node& a : c["args"]) args.push_back(a.as<std::string>());
  auto host_flag = std::find(args.begin(), args.end(), "--listen-host");
  ASSERT_NE(host_flag, args.end());
  ASSERT_NE(host_flag + 1, args.end());
  EXPECT_EQ(*(host_flag + 1), "$(POD_IP)");
  EXPECT_EQ(EnvFieldRefs(c)["POD_IP"], "status.podIP");

  const YAML::Node annotations = tmpl["metadata"]["annotations"];
  EXPECT_EQ(annotations["prometheus.io/scrape"].as<std::string>(), "true");
  EXPECT_EQ(annotations["prometheus.io/port"].as<std::string>(), port);
  EXPECT_EQ(annotations["prometheus.io/path"].as<std::string>(), "/metrics");
  std::string container_port;
  for (const YAML::Node& p : c["ports"]) {
    if (p["name"].as<std::string>() == "metrics") container_port = p["containerPort"].as<std::string>();
  }
  EXPECT_EQ(container_port, port);

  // The token file is the Secret volume's, owner-only as the agent requires.
  std::string secret;
  for (const YAML::Node& m : c["volumeMounts"]) {
    if (fs::path(config->server.token_file).parent_path() != fs::path(m["mountPath"].as<std::string>())) continue;
    for (const YAML::Node& v : tmpl["spec"]["volumes"]) {
      if (v["name"].as<std::string>() != m["name"].as<std::string>() || !v["secret"]) continue;
      secret = v["secret"]["secretName"].as<std::string>();
      EXPECT_EQ(v["secret"]["defaultMode"].as<int>() & 077, 0) << "group/other may read the token";
    }
  }
  ASSERT_FALSE(secret.empty()) << config->server.token_file << " is on no Secret volume";
  const std::string key = fs::path(config->server.token_file).filename().string();

  // The Prometheus Operator's way: a headless Service on that port, and a ServiceMonitor
  // sending the same Secret's key.
  const auto mon = YAML::LoadAllFromFile((Deploy() / "kubernetes/servicemonitor.yaml").string());
  const YAML::Node svc = FindKind(mon, "Service");
  const YAML::Node sm = FindKind(mon, "ServiceMonitor");
  ASSERT_TRUE(svc && sm);
  EXPECT_EQ(svc["spec"]["selector"]["app.kubernetes.io/name"].as<std::string>(),
            tmpl["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>());
  EXPECT_EQ(svc["spec"]["ports"][0]["port"].as<std::string>(), port);
  EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"].as<std::string>(), "metrics");
  const YAML::Node endpoint = sm["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["port"].as<std::string>(), svc["spec"]["ports"][0]["name"].as<std::string>());
  EXPECT_EQ(endpoint["path"].as<std::string>(), "/metrics");
  EXPECT_EQ(endpoint["authorization"]["credentials"]["name"].as<std::string>(), secret);
  EXPECT_EQ(endpoint["authorization"]["credentials"]["key"].as<std::string>(), key);
  for (const YAML::Node& n : {svc, sm}) {
    EXPECT_EQ(n["metadata"]["namespace"].as<std::string>(), ds["metadata"]["namespace"].as<std::string>());
  }
}

// What the config asks the policy to do can be done from the pod as shipped.
TEST(DeployKubernetes, ConfigActsThroughTheApiServerAndEnablesNothingThePodCannotDo) {
  auto config = daemon::LoadAgentConfig((Deploy() / "config/kubernetes-node.toml").string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->policy.platform, "kubernetes");
  EXPECT_TRUE(config->policy.kubeconfig.empty()) << "the pod's service account (rbac.yaml), not a file";
  // No systemd in the image: `systemctl reboot` cannot run there.
  EXPECT_FALSE(config->policy.Enabled(actions::ActionClass::kRebootNode));
  // Everything the policy writes is on the state volume.
  for (const std::string& dir : {config->policy.state_dir, config->policy.bundle_dir}) {
    EXPECT_EQ(fs::path(dir).parent_path(), fs::path("/var/lib/faultline")) << dir;
  }
}

TEST(DeployConfig, BothShippedConfigsServeTheApiAndMetrics) {
  for (const char* name : {"kubernetes-node.toml", "slurm-node.toml"}) {
    auto config = daemon::LoadAgentConfig((Deploy() / "config" / name).string());
    ASSERT_TRUE(config.ok()) << name << ": " << config.status().ToString();
    EXPECT_FALSE(config->server.listen.empty()) << name;
  }
  // On a Slurm node the config itself is the address: loopback, so no token is needed.
  auto slurm = daemon::LoadAgentConfig((Deploy() / "config/slurm-node.toml").string());
  ASSERT_TRUE(slurm.ok());
  EXPECT_EQ(slurm->server.listen.rfind("127.0.0.1:", 0), 0u) << slurm->server.listen;
}

TEST(DeployConfig, EveryExampleConfigLoads) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(Deploy() / "config")) {
    if (entry.path().extension() != ".toml") continue;
    ++seen;
    auto config = daemon::LoadAgentConfig(entry.path().string());
    EXPECT_TRUE(config.ok()) << entry.path() << ": " << config.status().ToString();
  }
  EXPECT_GE(seen, 2);
}

TEST(DeployConfig, KubernetesConfigReadsTheSysfsTheDaemonSetMounts) {
  auto config = daemon::LoadAgentConfig((Deploy() / "config/kubernetes-node.toml").string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(fs::path(config->sysfs.root) / "sys", fs::path("/host/sys"));
  EXPECT_EQ(config->kmsg.path, "/dev/kmsg");
  // The DaemonSet's state volume is where the store goes.
  EXPECT_EQ(fs::path(config->agent.store_path).parent_path(), fs::path("/var/lib/faultline"));
}

}  // namespace
}  // namespace faultline
