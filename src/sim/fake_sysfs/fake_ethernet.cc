#include "sim/fake_sysfs/fake_ethernet.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace faultline {
namespace {

namespace fs = std::filesystem;

std::string RateText(int64_t mbps) {
  const int64_t gbps = mbps / 1000;
  // The lane form the kernel prints for such a rate (IB speed names; RoCE ports use them too).
  const char* form = gbps >= 400 ? "4X NDR" : gbps >= 200 ? "4X HDR" : gbps >= 100 ? "4X EDR" : "1X";
  return std::to_string(gbps) + " Gb/sec (" + form + ")\n";
}

}  // namespace

Status FakeEthernet::Write(const std::string& path, const std::string& content) const {
  const std::string full = root_ + path;
  std::error_code ec;
  fs::create_directories(fs::path(full).parent_path(), ec);
  if (ec) return Status(StatusCode::kIoError, full + ": " + ec.message());
  const std::string tmp = full + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return Status(StatusCode::kIoError, "cannot write " + tmp);
  }
  fs::rename(tmp, full, ec);
  if (ec) return Status(StatusCode::kIoError, full + ": " + ec.message());
  return Status::Ok();
}

Result<FakeEthernet> FakeEthernet::Create(const FakeSysfsTree& tree, const std::vector<std::string>& devices,
                                          const std::vector<std::string>& netdevs, int64_t speed_mbps) {
  if (devices.size() != netdevs.size()) return Status(StatusCode::kInvalidArgument, "one netdev per device");
  FakeEthernet e(tree.root());
  for (size_t i = 0; i < devices.size(); ++i) {
    const FakePcieDevice* pci = nullptr;
    for (const FakePcieDevice& d : tree.devices()) {
      if (d.ib_device == devices[i]) pci = &d;
    }
    if (pci == nullptr) return Status(StatusCode::kNotFound, "no RDMA device " + devices[i] + " in the tree");
    e.nics_.push_back({devices[i], netdevs[i], pci->dir});
    const std::string port = e.PortDir(i), net = e.NetDir(i);
    for (const auto& [path, content] :
         std::initializer_list<std::pair<std::string, std::string>>{{port + "/link_layer", "Ethernet\n"},
                                                                    {port + "/gid_attrs/ndevs/0", netdevs[i] + "\n"},
                                                                    {net + "/type", "1\n"},
                                                                    {net + "/statistics/rx_crc_errors", "0\n"},
                                                                    {net + "/statistics/rx_frame_errors", "0\n"},
                                                                    {net + "/statistics/rx_missed_errors", "0\n"}}) {
      if (Status s = e.Write(path, content); !s.ok()) return s;
    }
    // The mlx5 RoCE hw_counters the source reads (SIGNALS-ethernet-amd A2), at zero.
    for (const char* c :
         {"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored", "out_of_sequence",
          "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "duplicate_request", "roce_adp_retrans",
          "roce_adp_retrans_to", "roce_slow_restart", "out_of_buffer", "rx_write_requests", "lifespan"}) {
      if (Status s = e.SetHwCounter(i, c, std::string(c) == "lifespan" ? 10 : 0); !s.ok()) return s;
    }
    std::error_code ec;
    const std::string link = e.root_ + net + "/device";
    fs::remove(link, ec);
    fs::create_directory_symlink("../../.." + pci->dir.substr(4), link, ec);  // /sys/class/net/<if>/../../.. = /sys
    if (ec) return Status(StatusCode::kIoError, link + ": " + ec.message());
    if (Status s = e.SetOperstate(i, "up"); !s.ok()) return s;
    if (Status s = e.SetSpeed(i, speed_mbps); !s.ok()) return s;
    if (Status s = e.SetCarrierChanges(i, 0); !s.ok()) return s;
    if (Status s = e.SetEthtool(i, {}); !s.ok()) return s;
  }
  return e;
}

Status FakeEthernet::SetOperstate(size_t nic, const std::string& operstate) {
  if (Status s = Write(NetDir(nic) + "/operstate", operstate + "\n"); !s.ok()) return s;
  return Write(NetDir(nic) + "/carrier", operstate == "up" ? "1\n" : "0\n");
}

Status FakeEthernet::SetSpeed(size_t nic, int64_t mbps) {
  if (Status s = Write(NetDir(nic) + "/speed", std::to_string(mbps) + "\n"); !s.ok()) return s;
  return Write(PortDir(nic) + "/rate", RateText(mbps));
}

Status FakeEthernet::SetCarrierChanges(size_t nic, uint64_t changes) {
  if (Status s = Write(NetDir(nic) + "/carrier_changes", std::to_string(changes) + "\n"); !s.ok()) return s;
  return Write(NetDir(nic) + "/carrier_down_count", std::to_string(changes / 2) + "\n");
}

Status FakeEthernet::SetStatistic(size_t nic, const std::string& name, uint64_t value) {
  return Write(NetDir(nic) + "/statistics/" + name, std::to_string(value) + "\n");
}

Status FakeEthernet::SetHwCounter(size_t nic, const std::string& name, uint64_t value) {
  return Write(PortDir(nic) + "/hw_counters/" + name, std::to_string(value) + "\n");
}

Status FakeEthernet::SetEthtool(size_t nic, const std::map<std::string, uint64_t>& stats) {
  std::string text = "NIC statistics:\n";
  for (const auto& [name, value] : stats) text += "     " + name + ": " + std::to_string(value) + "\n";
  if (stats.empty()) text += "     rx_packets_phy: 0\n";
  return Write(NetDir(nic) + "/ethtool_stats", text);
}

}  // namespace faultline
