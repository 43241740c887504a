// deploy/container/Containerfile, checked offline. The image cannot be built here: its base
// images come from a registry this machine cannot reach, and its build stage compiles the
// whole project (about 40 minutes on two cores). What can be checked is:
//  - the stages: a debian:bookworm build stage running scripts/deps.sh, the production
//    build (FAULTLINE_WITH_SIM=OFF) and `cmake --install`; a debian:bookworm-slim runtime
//    stage without compilers or -dev packages;
//  - the runtime packages against the binary this build made: every library it links
//    directly comes from a listed package, every library `ldd` resolves comes from a listed
//    package or one of their dependencies (dpkg's own records on this Debian machine), and
//    nothing is listed that the binary does not need (ca-certificates aside);
//  - the DaemonSet runs this image with the paths it lays out.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/config.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

fs::path Source() { return fs::path(FAULTLINE_SOURCE_DIR); }
fs::path Binary() { return fs::path(FAULTLINE_BINARY_DIR) / "faultline"; }

// One stage of the Containerfile: its base image and its instructions, continuation lines
// joined.
struct Stage {
  std::string base;
  std::string name;
  std::vector<std::string> lines;  // "RUN ...", "COPY ...", ...
  std::string Joined() const {
    std::string all;
    for (const std::string& l : lines) all += l + "\n";
    return all;
  }
};

std::vector<Stage> ParseStages(const fs::path& file) {
  std::ifstream in(file);
  std::vector<Stage> stages;
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    const std::string full = pending + line;
    pending.clear();
    std::istringstream words(full);
    std::string op, base, as, name;
    words >> op;
    if (op == "FROM") {
      words >> base >> as >> name;
      stages.push_back({base, name, {}});
    } else if (!stages.empty()) {
      stages.back().lines.push_back(full);
    }
  }
  return stages;
}

// The packages named by `apt-get install` in a stage.
std::set<std::string> AptPackages(const Stage& stage) {
  std::set<std::string> packages;
  for (const std::string& line : stage.lines) {
    const size_t at = line.find("apt-get install");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at + std::string("apt-get install").size()));
    for (std::string w; words >> w && w != "&&";) {
      if (w[0] != '-') packages.insert(w);
    }
  }
  return packages;
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// soname -> resolved path, from `ldd`.
std::map<std::string, std::string> LddLibraries(const fs::path& binary) {
  std::map<std::string, std::string> libs;
  std::istringstream in(Shell("ldd " + binary.string()));
  static const std::regex kLine(R"(^\s*(\S+) => (\S+) \(0x)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kLine)) libs[m[1]] = m[2];
  }
  return libs;
}

std::set<std::string> NeededSonames(const fs::path& binary) {
  std::set<std::string> needed;
  std::istringstream in(Shell("objdump -p " + binary.string()));
  for (std::string word; in >> word;) {
    if (word == "NEEDED" && in >> word) needed.insert(word);
  }
  return needed;
}

// The Debian package that installed each of `paths`, in one dpkg call ("" where none did).
// usr-merged systems record /lib or /usr/lib: both spellings of the real path are asked.
std::map<std::string, std::string> PackagesOf(const std::vector<std::string>& paths) {
  std::map<std::string, std::string> spelling;  // each spelling asked -> the path it stands for
  std::string args;
  for (const std::string& path : paths) {
    std::error_code ec;
    const std::string real = fs::canonical(path, ec).string();
    const std::string other = real.rfind("/usr/", 0) == 0 ? real.substr(4) : "/usr" + real;
    for (const std::string& s : {real, other}) {
      spelling[s] = path;
      args += " '" + s + "'";
    }
  }
  std::map<std::string, std::string> owner;
  for (const std::string& path : paths) owner[path] = "";
  std::istringstream out(Shell("dpkg -S" + args + " 2>/dev/null"));
  for (std::string line; std::getline(out, line);) {
    const size_t sep = line.find(": ");  // "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6"
    if (sep == std::string::npos || !spelling.count(line.substr(sep + 2))) continue;
    owner[spelling[line.substr(sep + 2)]] = line.substr(0, line.find_first_of(":,"));
  }
  return owner;
}

// Every package `roots` pull in through Depends and Pre-Depends (all alternatives, no
// versions), as dpkg records them on this machine; one dpkg-query per level.
std::set<std::string> DependencyClosure(const std::set<std::string>& roots) {
  std::set<std::string> seen;
  std::set<std::string> level = roots;
  static const std::regex kName(R"(([a-z0-9][a-z0-9+.\-]+)(:[a-z0-9]+)?\s*(\([^)]*\))?)");
  while (!level.empty()) {
    std::string args;
    for (const std::string& p : level) {
      seen.insert(p);
      args += " '" + p + "'";
    }
    const std::string deps = Shell("dpkg-query -W -f='${Depends}, ${Pre-Depends}, '" + args + " 2>/dev/null");
    level.clear();
    for (std::sregex_iterator it(deps.begin(), deps.end(), kName), end; it != end; ++it) {
      if (!seen.count((*it)[1])) level.insert((*it)[1]);
    }
  }
  return seen;
}

const Stage* Runtime(const std::vector<Stage>& stages) { return stages.empty() ? nullptr : &stages.back(); }

class ContainerfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stages_ = ParseStages(Source() / "deploy/container/Containerfile");
    ASSERT_EQ(stages_.size(), 2u) << "a build stage and a runtime stage";
  }
  // The libraries' checks need the binary this build made and dpkg's records.
  void NeedBinaryAndDpkg() {
    if (!fs::exists(Binary())) GTEST_SKIP() << "faultline not built";
    if (!Shell("for t in dpkg-query objdump ldd; do command -v $t >/dev/null || echo $t; done").empty()) {
      GTEST_SKIP() << "no dpkg, objdump or ldd here";
    }
  }
  std::vector<Stage> stages_;
};

TEST_F(ContainerfileTest, BuildsTheProductionBinaryAndRunsOnBookwormSlim) {
  const Stage& build = stages_[0];
  const Stage& runtime = stages_[1];
  EXPECT_EQ(build.base, "debian:bookworm");
  EXPECT_EQ(runtime.base, "debian:bookworm-slim");
  const std::string b = build.Joined();
  EXPECT_NE(b.find("scripts/deps.sh"), std::string::npos);
  EXPECT_NE(b.find("-DFAULTLINE_WITH_SIM=OFF"), std::string::npos);
  EXPECT_NE(b.find("cmake --install"), std::string::npos);
  // The runtime stage takes the installed tree from the build stage and builds nothing.
  const std::string r = runtime.Joined();
  EXPECT_NE(r.find("COPY --from=" + build.name + " "), std::string::npos) << r;
  for (const char* tool : {"cmake", "deps.sh", "build-essential", "clang", "-dev"}) {
    EXPECT_EQ(r.find(tool), std::string::npos) << tool << " in the runtime stage";
  }
  // Every path the build stage copies exists in the repository.
  for (const std::string& line : build.lines) {
    std::istringstream words(line);
    std::string op, from, to;
    words >> op >> from >> to;
    if (op == "COPY") {
      EXPECT_TRUE(fs::exists(Source() / from)) << line;
    }
  }
}

TEST_F(ContainerfileTest, RuntimeStageInstallsThePackageOfEveryLibraryTheBinaryLinks) {
  NeedBinaryAndDpkg();
  const std::set<std::string> listed = AptPackages(*Runtime(stages_));
  ASSERT_FALSE(listed.empty());
  const std::map<std::string, std::string> ldd = LddLibraries(Binary());
  // The sanitizer build links its own modules as shared libraries (and the sanitizers'
  // runtimes): not the binary the image ships, which the normal build checks.
  for (const auto& [soname, path] : ldd) {
    if (path.rfind(FAULTLINE_BINARY_DIR, 0) == 0) GTEST_SKIP() << "modules linked as shared libraries: " << path;
  }
  std::vector<std::string> paths;
  for (const auto& [soname, path] : ldd) paths.push_back(path);
  const std::map<std::string, std::string> owner = PackagesOf(paths);
  std::set<std::string> direct;
  for (const std::string& soname : NeededSonames(Binary())) {
    ASSERT_TRUE(ldd.count(soname)) << soname << " not resolved by ldd";
    const std::string package = owner.at(ldd.at(soname));
    ASSERT_FALSE(package.empty()) << "no package owns " << ldd.at(soname);
    direct.insert(package);
    EXPECT_TRUE(listed.count(package)) << soname << " (" << package << ") is not installed in the runtime stage";
  }
  // Libraries of libraries come with their packages' dependencies.
  const std::set<std::string> closure = DependencyClosure(listed);
  for (const auto& [soname, path] : ldd) {
    const std::string& package = owner.at(path);
    EXPECT_TRUE(!package.empty() && closure.count(package))
        << soname << " (" << package << ") is pulled in by no listed package";
  }
  // Nothing the binary does not link, but the trust store.
  for (const std::string& p : listed) {
    EXPECT_TRUE(direct.count(p) || p == "ca-certificates") << p << " is listed but the binary does not link it";
  }
}

// The install prefix the build stage configures, from -DCMAKE_INSTALL_PREFIX=.
std::string InstallPrefix(const Stage& build) {
  std::smatch m;
  const std::string text = build.Joined();
  static const std::regex kPrefix(R"(-DCMAKE_INSTALL_PREFIX=(\S+))");
  return std::regex_search(text, m, kPrefix) ? m[1].str() : "";
}

std::vector<std::string> Exec(const Stage& stage, const std::string& op) {
  for (const std::string& line : stage.lines) {
    if (line.rfind(op + " ", 0) != 0) continue;
    std::vector<std::string> args;
    static const std::regex kQuoted("\"([^\"]*)\"");
    for (std::sregex_iterator it(line.begin(), line.end(), kQuoted), end; it != end; ++it) args.push_back((*it)[1]);
    return args;
  }
  return {};
}

// COPY lines of a stage: destination -> source.
std::map<std::string, std::string> Copies(const Stage& stage) {
  std::map<std::string, std::string> copies;
  for (const std::string& line : stage.lines) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() >= 3 && w[0] == "COPY") copies[w.back()] = w[w.size() - 2];
  }
  return copies;
}

YAML::Node AgentContainer() {
  for (const YAML::Node& d : YAML::LoadAllFromFile((Source() / "deploy/kubernetes/daemonset.yaml").string())) {
    if (d["kind"] && d["kind"].as<std::string>() == "DaemonSet") return d["spec"]["template"]["spec"]["containers"][0];
  }
  return YAML::Node();
}

// cmake/Install.cmake's layout for the build stage's prefix (/etc for /usr, GNU's rule) is
// what the runtime stage copies, and the DaemonSet runs the image with those paths.
TEST_F(ContainerfileTest, DaemonSetRunsTheImageWithThePathsItLaysOut) {
  const std::string prefix = InstallPrefix(stages_[0]);
  ASSERT_FALSE(prefix.empty());
  const Stage& runtime = stages_[1];
  const std::map<std::string, std::string> copies = Copies(runtime);
  const std::string bin = prefix + "/bin/faultline";
  const std::string kb = prefix + "/share/faultline/kb";
  ASSERT_TRUE(copies.count(bin) && copies.count(kb)) << runtime.Joined();
  EXPECT_EQ(copies.at(bin), "/staging" + bin);  // what `DESTDIR=/staging cmake --install` wrote
  EXPECT_EQ(copies.at(kb), "/staging" + kb);
  EXPECT_NE(stages_[0].Joined().find("DESTDIR=/staging cmake --install"), std::string::npos);

  // The binary is the entrypoint, so the DaemonSet's args start with the subcommand.
  EXPECT_EQ(Exec(runtime, "ENTRYPOINT"), std::vector<std::string>{bin});
  const std::vector<std::string> cmd = Exec(runtime, "CMD");
  ASSERT_EQ(cmd.size(), 3u);
  EXPECT_EQ(cmd[0], "agent");
  EXPECT_EQ(cmd[1], "--config");
  // The image's own config is the DaemonSet's, at the path the DaemonSet's ConfigMap covers.
  ASSERT_TRUE(copies.count(cmd[2])) << cmd[2] << " is not in the image";
  EXPECT_EQ(copies.at(cmd[2]), "/src/deploy/config/kubernetes-node.toml");
  EXPECT_EQ(cmd[2].rfind(prefix == "/usr" ? "/etc/faultline/" : prefix + "/etc/faultline/", 0), 0u) << cmd[2];

  const YAML::Node container = AgentContainer();
  ASSERT_TRUE(container);
  EXPECT_EQ(container["image"].as<std::string>(), "faultline:latest");  // the tag docs/deploy.md builds
  EXPECT_FALSE(container["command"]) << "the image's entrypoint runs the binary";
  std::vector<std::string> args;
  for (const YAML::Node& a : container["args"]) args.push_back(a.as<std::string>());
  ASSERT_GE(args.size(), 3u);
  EXPECT_EQ(args[0], "agent");
  EXPECT_EQ(args[1], "--config");
  EXPECT_EQ(args[2], cmd[2]);
  bool config_mounted = false;
  for (const YAML::Node& m : container["volumeMounts"]) {
    config_mounted = config_mounted || fs::path(m["mountPath"].as<std::string>()) == fs::path(cmd[2]).parent_path();
  }
  EXPECT_TRUE(config_mounted) << "the ConfigMap covers " << fs::path(cmd[2]).parent_path();
  // The store's volume is the image's.
  EXPECT_NE(runtime.Joined().find("VOLUME /var/lib/faultline"), std::string::npos);

  // The runbooks the incident notes cite are the kb the image holds.
  auto config = daemon::LoadAgentConfig((Source() / "deploy/config/kubernetes-node.toml").string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->assistant.kb_dir, kb);
}

}  // namespace
}  // namespace faultline
