// Builds the sources the config enables, each resuming from its stored cursor.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "daemon/sources.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

Result<std::optional<std::string>> StoredCursor(Store& store, const std::string& node, const std::string& source,
                                                const std::string& key) {
  return store.GetCursor(node, source, key);
}

bool IsCharDevice(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

Result<std::unique_ptr<Topology>> LoadTopology(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "sysfs.topology_file: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto topo = ParseTopology(text.str());
  if (!topo.ok()) return Status(topo.status().code(), "sysfs.topology_file: " + topo.status().message());
  return std::make_unique<Topology>(std::move(topo).value());
}

}  // namespace

Result<std::vector<std::unique_ptr<AgentSource>>> MakeConfiguredSources(const AgentConfig& config,
                                                                        const std::string& node, const Clock& clock,
                                                                        Store& store,
                                                                        std::unique_ptr<Topology>& topology) {
  std::vector<std::unique_ptr<AgentSource>> sources;
  if (config.kmsg.enabled) {
    const std::string& path = config.kmsg.path;
    // A path that is not (yet) a character device is a log file to tail.
    const bool device = IsCharDevice(path);
    auto cursor = StoredCursor(store, node, "kmsg", device ? "last_seq" : "file:" + path);
    if (!cursor.ok()) return cursor.status();
    sources.push_back(device ? MakeKmsgDeviceSource(path, node, clock, *cursor)
                             : MakeKmsgFileSource(path, node, clock, *cursor));
  }
  if (config.nvml.enabled) sources.push_back(MakeNvmlSource(config.nvml, node, clock));
  if (!config.dcgm_exporter.url.empty()) sources.push_back(MakeDcgmExporterSource(config.dcgm_exporter, node, clock));
  if (!config.redfish.url.empty()) {
    auto cursors = store.ListCursors(node, "redfish");
    if (!cursors.ok()) return cursors.status();
    sources.push_back(MakeRedfishSource(config.redfish, node, clock, *cursors));
  }
  if (config.sysfs.enabled) {
    if (!config.sysfs.topology_file.empty()) {
      auto topo = LoadTopology(config.sysfs.topology_file);
      if (!topo.ok()) return topo.status();
      topology = std::move(topo).value();
    }
    sources.push_back(MakeSysfsSource(config.sysfs, node, clock, topology.get()));
  }
  if (config.amd.enabled) {
    const std::string& root = config.amd.root.empty() ? config.sysfs.root : config.amd.root;
    sources.push_back(MakeAmdSource(config.amd, root, node, clock));
  }
  if (config.ethernet.enabled) {
    const std::string& root = config.ethernet.root.empty() ? config.sysfs.root : config.ethernet.root;
    sources.push_back(MakeEthernetSource(config.ethernet, root, node, clock, topology.get()));
  }
  if (!config.workload.file.empty()) {
    auto cursor = StoredCursor(store, node, "workload", "file:" + config.workload.file);
    if (!cursor.ok()) return cursor.status();
    sources.push_back(MakeWorkloadFileSource(config.workload.file, node, clock, *cursor));
  }
  if (!config.workload.listen.empty()) sources.push_back(MakeWorkloadHttpSource(config.workload, node, clock));
  return sources;
}

}  // namespace faultline::daemon
