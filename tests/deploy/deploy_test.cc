// The files in deploy/ are checked for the fields that matter: a unit or manifest that
// loses its hardening, its kernel-log access or its node name fails here, not on a node.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

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

  const YAML::Node sc = c["securityContext"];
  EXPECT_FALSE(sc["privileged"].as<bool>());
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>());
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>());
  ASSERT_EQ(sc["capabilities"]["drop"].size(), 1u);
  EXPECT_EQ(sc["capabilities"]["drop"][0].as<std::string>(), "ALL");
  ASSERT_EQ(sc["capabilities"]["add"].size(), 1u);
  EXPECT_EQ(sc["capabilities"]["add"][0].as<std::string>(), "SYSLOG");
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
