// The concrete agent sources: thin adapters from each layer module to AgentSource.
// Each takes the cursor value a previous run saved (from the store) so it resumes
// where the last committed Append ended.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "daemon/config.h"
#include "daemon/source.h"
#include "parse/topology.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

// A kernel log file tailed line by line (rotation and truncation survive); cursor
// ("kmsg", "file:<path>") = "inode:offset".
std::unique_ptr<AgentSource> MakeKmsgFileSource(const std::string& path, const std::string& node, const Clock& clock,
                                                std::optional<std::string> cursor);
// /dev/kmsg (or any character device speaking its record format); cursor
// ("kmsg", "last_seq"). The device is opened at the first poll (and reopened after
// an error), so a missing device is "unavailable", not fatal.
std::unique_ptr<AgentSource> MakeKmsgDeviceSource(const std::string& path, const std::string& node, const Clock& clock,
                                                  std::optional<std::string> cursor);
// NVML (the real library or the fake one via library_path / $FAULTLINE_NVML_LIB),
// loaded at the first poll and again after a failure.
std::unique_ptr<AgentSource> MakeNvmlSource(const NvmlSection& options, const std::string& node, const Clock& clock);
// sysfs PCIe/InfiniBand under `options.root`; `topology` may be null and must outlive it.
std::unique_ptr<AgentSource> MakeSysfsSource(const SysfsSection& options, const std::string& node, const Clock& clock,
                                             const Topology* topology);
// RoCE / Ethernet under `root` (RDMA hw_counters on their own slower schedule, interfaces,
// ethtool statistics: the ioctl under "/", the tree's ethtool_stats files elsewhere).
// AMD Instinct GPUs (daemon/amd_source.cc): AMD SMI, else the amdgpu sysfs files under `root`.
std::unique_ptr<AgentSource> MakeAmdSource(const AmdSection& options, const std::string& root, const std::string& node,
                                           const Clock& clock);
std::unique_ptr<AgentSource> MakeEthernetSource(const EthernetSection& options, const std::string& root,
                                                const std::string& node, const Clock& clock, const Topology* topology);
// One dcgm-exporter /metrics scrape per poll.
std::unique_ptr<AgentSource> MakeDcgmExporterSource(const DcgmExporterSection& options, const std::string& node,
                                                    const Clock& clock);
// A Redfish BMC: login at the first poll, one bounded sweep per poll, session deleted
// at Shutdown. Log cursors ("redfish", "log:<path>") = last numeric entry id. With
// `events` on and a ServerSentEventUri advertised, it also follows the SSE stream on its
// own thread; events received are handed over at the next poll.
std::unique_ptr<AgentSource> MakeRedfishSource(const RedfishSection& options, const std::string& node,
                                               const Clock& clock, const std::vector<Cursor>& cursors);
// Workload report lines appended to a file; cursor as WorkloadFileSource.
std::unique_ptr<AgentSource> MakeWorkloadFileSource(const std::string& path, const std::string& node,
                                                    const Clock& clock, std::optional<std::string> cursor);
// Workload reports POSTed to http://<listen>/v1/workload (WorkloadHttpServer: loopback
// by default, bearer token from token_file/token_env required elsewhere); the server
// runs on its own threads from the first poll until Shutdown, each poll drains what arrived.
std::unique_ptr<AgentSource> MakeWorkloadHttpSource(const WorkloadSection& section, const std::string& node,
                                                    const Clock& clock);

// Every source the config enables, with cursors read from `store`. A source whose
// setup already fails (bad topology file, unreadable credentials) is an error.
Result<std::vector<std::unique_ptr<AgentSource>>> MakeConfiguredSources(const AgentConfig& config,
                                                                        const std::string& node, const Clock& clock,
                                                                        Store& store,
                                                                        std::unique_ptr<Topology>& topology);

}  // namespace faultline::daemon
