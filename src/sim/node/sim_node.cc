#include "sim/node/sim_node.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/time.h"
#include "sim/node/bmc_tree.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status(StatusCode::kIoError, tmp + ": cannot write");
    out << text;
    if (!out.flush()) return Status(StatusCode::kIoError, tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status(StatusCode::kIoError, path + ": rename failed");
  return Status::Ok();
}

Status Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out) return Status(StatusCode::kIoError, path + ": cannot append");
  out << text;
  if (!out.flush()) return Status(StatusCode::kIoError, path + ": append failed");
  return Status::Ok();
}

// The NVML "PCI bus id" form of a sysfs BDF: 8-digit domain.
std::string NvmlBusId(const std::string& bdf) { return "0000" + bdf; }

}  // namespace

// What the state file tells the fake NVML library about one GPU, as the integers NVML
// reports (whole degrees, milliwatts, MHz): the file is made from this alone, so when no
// GPU's view moved the file would not change, and it is neither rebuilt nor rewritten.
// The model's temperatures drift a little at every tick; what NVML shows moves far less.
struct SimNode::NvmlGpuView {
  uint32_t temp_gpu = 0, temp_mem = 0, power_mw = 0, clock_sm = 0, clock_mem = 0;
  uint64_t reasons = 0;
  uint64_t sbe_volatile = 0, sbe_aggregate = 0, dbe_volatile = 0, dbe_aggregate = 0, sram_uncorrected = 0;
  uint32_t remap_correctable = 0, remap_uncorrectable = 0;
  bool remap_pending = false, remap_failure = false;
  uint32_t retired_sbe = 0, retired_dbe = 0;
  bool retired_pending = false;
  uint64_t pcie_replay = 0;
  int pcie_gen = 0, pcie_width = 0;
  std::array<SimLink, kNvlinksPerGpu> links;
  bool lost = false;

  explicit NvmlGpuView(const SimGpu& g)
      : temp_gpu(static_cast<uint32_t>(std::max(0.0, g.temp_gpu))),
        temp_mem(static_cast<uint32_t>(std::max(0.0, g.temp_mem))),
        power_mw(static_cast<uint32_t>(g.power_w * 1000)),
        clock_sm(static_cast<uint32_t>(g.clock_sm)),
        clock_mem(static_cast<uint32_t>(g.clock_mem)),
        reasons(g.reasons),
        sbe_volatile(g.sbe_volatile),
        sbe_aggregate(g.sbe_aggregate),
        dbe_volatile(g.dbe_volatile),
        dbe_aggregate(g.dbe_aggregate),
        sram_uncorrected(g.sram_uncorrected),
        remap_correctable(g.remap_correctable),
        remap_uncorrectable(g.remap_uncorrectable),
        remap_pending(g.remap_pending),
        remap_failure(g.remap_failure),
        retired_sbe(g.retired_sbe),
        retired_dbe(g.retired_dbe),
        retired_pending(g.retired_pending),
        pcie_replay(g.pcie_replay),
        pcie_gen(g.pcie_gen),
        pcie_width(g.pcie_width),
        links(g.links),
        lost(g.lost) {}
  bool operator==(const NvmlGpuView& o) const {
    return std::tie(temp_gpu, temp_mem, power_mw, clock_sm, clock_mem, reasons, sbe_volatile, sbe_aggregate,
                    dbe_volatile, dbe_aggregate, sram_uncorrected, remap_correctable, remap_uncorrectable,
                    remap_pending, remap_failure, retired_sbe, retired_dbe, retired_pending, pcie_replay, pcie_gen,
                    pcie_width, lost) ==
               std::tie(o.temp_gpu, o.temp_mem, o.power_mw, o.clock_sm, o.clock_mem, o.reasons, o.sbe_volatile,
                        o.sbe_aggregate, o.dbe_volatile, o.dbe_aggregate, o.sram_uncorrected, o.remap_correctable,
                        o.remap_uncorrectable, o.remap_pending, o.remap_failure, o.retired_sbe, o.retired_dbe,
                        o.retired_pending, o.pcie_replay, o.pcie_gen, o.pcie_width, o.lost) &&
           std::equal(links.begin(), links.end(), o.links.begin(), o.links.end(),
                      [](const SimLink& a, const SimLink& b) {
                        return a.active == b.active && a.crc_flit == b.crc_flit && a.crc_data == b.crc_data &&
                               a.replay == b.replay && a.recovery == b.recovery;
                      });
  }
};

namespace {

Json GpuJson(const SimNode::NvmlGpuView& g, int index, const NodeLayout& layout, bool row_remap) {
  Json j;
  j["name"] = "NVIDIA H200";
  j["uuid"] = layout.GpuUuid(index);
  j["serial"] = layout.GpuSerial(index);
  j["pci_bus_id"] = NvmlBusId(layout.gpu_bdfs.at(static_cast<size_t>(index)));
  j["ecc"] = {{"volatile", {{"corrected", g.sbe_volatile}, {"uncorrected", g.dbe_volatile}}},
              {"aggregate", {{"corrected", g.sbe_aggregate}, {"uncorrected", g.dbe_aggregate}}}};
  j["ecc_locations"] = {
      {"volatile",
       {{"corrected", {{"dram", g.sbe_volatile}, {"sram", 0}}},
        {"uncorrected", {{"dram", g.dbe_volatile - g.sram_uncorrected}, {"sram", g.sram_uncorrected}}}}}};
  if (row_remap) {
    j["remapped_rows"] = {{"correctable", g.remap_correctable},
                          {"uncorrectable", g.remap_uncorrectable},
                          {"pending", g.remap_pending},
                          {"failure", g.remap_failure}};
  } else {
    j["retired_pages"] = {{"sbe", g.retired_sbe}, {"dbe", g.retired_dbe}, {"pending", g.retired_pending}};
  }
  j["temperature"] = {{"gpu", g.temp_gpu}, {"memory", g.temp_mem}, {"slowdown", 87}, {"shutdown", 92}};
  j["power"] = {{"usage_mw", g.power_mw}, {"limit_mw", 700000}};
  j["clocks"] = {{"sm", g.clock_sm}, {"mem", g.clock_mem}};
  j["clock_event_reasons"] = g.reasons;
  j["pcie"] = {
      {"replay", g.pcie_replay}, {"gen", g.pcie_gen}, {"max_gen", 5}, {"width", g.pcie_width}, {"max_width", 16}};
  Json links = Json::array();
  for (const SimLink& l : g.links) {
    links.push_back({{"active", l.active},
                     {"crc_flit", l.crc_flit},
                     {"crc_data", l.crc_data},
                     {"replay", l.replay},
                     {"recovery", l.recovery}});
  }
  j["nvlink"] = std::move(links);
  if (g.lost) j["lost"] = "GPU_IS_LOST";
  return j;
}

}  // namespace

SimNode::SimNode(const NodeScenario& scenario, SimNodeOptions options)
    : options_(std::move(options)), scenario_(scenario) {}

SimNode::~SimNode() {
  if (bmc_) bmc_->Stop();
}

Result<std::unique_ptr<SimNode>> SimNode::Create(const NodeScenario& scenario, const SimNodeOptions& options) {
  if (options.workdir.empty()) return Status(StatusCode::kInvalidArgument, "simulator: no work directory");
  std::unique_ptr<SimNode> node(new SimNode(scenario, options));
  if (Status s = node->Init(); !s.ok()) return s;
  return node;
}

std::string SimNode::amdsmi_state_path() const { return amd_ ? amd_->state_path() : ""; }

std::string SimNode::bmc_url() const { return bmc_ ? bmc_->base_url() : ""; }
std::string SimNode::bmc_ca_file() const { return bmc_ ? bmc_->ca_cert_path() : ""; }

Result<std::string> SimNode::BmcResource(const std::string& uri) const {
  if (!bmc_) return Status(StatusCode::kNotFound, "the simulated node has no BMC");
  return bmc_->ResourceJson(uri);
}

std::string SimNode::PcieParentOf(const std::string& bdf) const {
  const FakePcieDevice* d = tree_->Find(bdf);
  return d ? d->parent : "";
}

void SimNode::Note(const Status& s) {
  if (!s.ok() && stats_.errors.size() < 100) stats_.errors.push_back(s.ToString());
}

Status SimNode::Init() {
  std::error_code ec;
  const std::string dir = options_.workdir;
  fs::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kIoError, dir + ": " + ec.message());
  kmsg_path_ = dir + "/kmsg.log";
  nvml_path_ = dir + "/nvml-state.json";
  workload_path_ = dir + "/workload.log";
  sysfs_root_ = dir + "/sysfs";
  password_path_ = dir + "/bmc-password";
  bmc_dir_ = dir + "/bmc";
  for (const std::string& p : {kmsg_path_, workload_path_}) {
    if (Status s = WriteAtomically(p, ""); !s.ok()) return s;
  }
  fs::remove_all(sysfs_root_, ec);
  // An MI300X node's GPUs talk over XGMI: no NVSwitches on its PCIe tree.
  auto tree = FakeSysfsTree::Create(
      sysfs_root_, FakeSysfsOptions{.gpus = scenario_.node.gpus, .nvswitches = scenario_.node.amd() ? 0 : 4});
  if (!tree.ok()) return tree.status();
  tree_ = std::make_unique<FakeSysfsTree>(std::move(tree).value());

  NodeLayout layout;
  layout.gpu_bdfs = tree_->Bdfs("gpu");
  layout.nvswitch_bdfs = tree_->Bdfs("nvswitch");
  for (const FakePcieDevice& d : tree_->devices()) {
    if (d.role != "nic") continue;
    const int n = std::stoi(d.ib_device.substr(5));
    if (n < FakeSysfsOptions{}.ib_hcas) {
      layout.hca_bdfs.push_back(d.bdf);
      layout.hca_names.push_back(d.ib_device);
    } else {
      layout.nic_bdfs.push_back(d.bdf);
    }
  }
  if (scenario_.node.roce()) {
    std::vector<std::string> netdevs;
    for (size_t i = 0; i < layout.hca_names.size(); ++i) netdevs.push_back(RoceNetdev(i));
    auto eth = FakeEthernet::Create(*tree_, layout.hca_names, netdevs);
    if (!eth.ok()) return eth.status();
    eth_ = std::make_unique<FakeEthernet>(std::move(eth).value());
  }
  if (scenario_.node.amd()) {
    auto amd = AmdPublisher::Create(dir, sysfs_root_);
    if (!amd.ok()) return amd.status();
    amd_ = std::move(amd).value();
  }
  model_ = std::make_unique<NodeModel>(scenario_, std::move(layout));
  sysfs_gpu_ = model_->state().gpu_pcie;
  sysfs_nic_ = model_->state().nic_pcie;
  sysfs_ib_ = model_->state().ib;

  if (scenario_.node.bmc) {
    fs::remove_all(bmc_dir_, ec);
    if (Status s = WriteBmcTree(bmc_dir_, model_->state(), scenario_.node.psu_capacity_w, options_.time.Utc(0));
        !s.ok())
      return s;
    MockBmcOptions o;
    o.mockup_dir = bmc_dir_;
    o.worker_threads = 4;
    auto bmc = MockBmc::Start(o);
    if (!bmc.ok()) return bmc.status();
    bmc_ = std::move(bmc).value();
    if (Status s = WriteAtomically(password_path_, o.password + "\n"); !s.ok()) return s;
    ::chmod(password_path_.c_str(), 0600);
  }
  if (Status s = WriteBootLog(); !s.ok()) return s;
  return AdvanceTo(0);
}

// What a node's kernel log says at boot: the driver and each GPU's identity (which lets
// the kernel-log layer join bus addresses to UUIDs and serials).
Status SimNode::WriteBootLog() {
  const NodeLayout& l = model_->layout();
  std::string out;
  auto line = [&](int level, double uptime_s, const std::string& text) {
    char head[64];
    std::snprintf(head, sizeof(head), "%d,%llu,%lld,-;", level, static_cast<unsigned long long>(kmsg_seq_++),
                  static_cast<long long>(uptime_s * 1e6));
    out += head + text + "\n";
  };
  const double boot_s = static_cast<double>(options_.time.boot_ns) / 1e9;
  if (amd_) {
    for (const auto& [uptime, text] : AmdBootLines(l)) line(6, uptime, text);
  } else {
    line(6, 12.9, "nvidia: module license 'NVIDIA' taints kernel.");
    line(6, 13.5, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024");
    for (size_t i = 0; i < l.gpu_bdfs.size(); ++i) {
      const std::string bdf = l.gpu_bdfs[i].substr(0, l.gpu_bdfs[i].rfind('.'));
      line(6, 20.0 + 0.01 * static_cast<double>(i), "NVRM: GPU at PCI:" + bdf + ": " + l.GpuUuid(static_cast<int>(i)));
      line(6, 20.0 + 0.01 * static_cast<double>(i) + 0.001,
           "NVRM: GPU Board Serial Number: " + l.GpuSerial(static_cast<int>(i)));
    }
  }
  line(6, std::max(30.0, boot_s - 1), "systemd[1]: Started faultline-sim-node.service.");
  stats_.kmsg_lines += kmsg_seq_;
  return Append(kmsg_path_, out);
}

Status SimNode::AdvanceTo(double t, SimPublish what) {
  model_->AdvanceTo(t, options_.tick_s);
  for (SimKmsg& k : model_->TakeKmsg()) pending_kmsg_.push_back(std::move(k));
  for (SimSel& s : model_->TakeSel()) pending_sel_.push_back(std::move(s));
  Status first;
  // An AMD node's publisher writes its GPU state only when it changed (and the amdgpu
  // sysfs files with it): always asked.
  const Status nvml = what.nvml || amd_ ? PublishNvml() : Status::Ok();
  for (Status s : {PublishKmsg(), nvml, PublishSysfs(), PublishBmc(what.bmc_sensors), PublishWorkload()}) {
    Note(s);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status SimNode::PublishKmsg() {
  const double now = model_->state().t;
  std::stable_sort(pending_kmsg_.begin(), pending_kmsg_.end(),
                   [](const SimKmsg& a, const SimKmsg& b) { return a.t < b.t; });
  std::string out;
  size_t done = 0;
  for (; done < pending_kmsg_.size() && pending_kmsg_[done].t <= now; ++done) {
    const SimKmsg& k = pending_kmsg_[done];
    char head[64];
    const auto usec = static_cast<long long>(options_.time.Boot(k.t) / 1000);
    std::snprintf(head, sizeof(head), "%d,%llu,%lld,-;", k.level, static_cast<unsigned long long>(kmsg_seq_++), usec);
    out += head + k.text + "\n";
  }
  pending_kmsg_.erase(pending_kmsg_.begin(), pending_kmsg_.begin() + static_cast<std::ptrdiff_t>(done));
  if (out.empty()) return Status::Ok();
  stats_.kmsg_lines += done;
  return Append(kmsg_path_, out);
}

Status SimNode::PublishNvml() {
  const NodeState& s = model_->state();
  if (amd_) {
    // An AMD node: its GPUs through the fake AMD SMI and amdgpu sysfs; NVML sees none.
    if (!nvml_published_) {
      nvml_published_ = true;
      if (Status st = WriteAtomically(nvml_path_, R"({"gpus":[]})"); !st.ok()) return st;
    }
    const uint64_t before = amd_->writes();
    Status st = amd_->Publish(s, model_->layout());
    stats_.nvml_writes += amd_->writes() - before;
    return st;
  }
  std::vector<NvmlGpuView> views;
  views.reserve(s.gpus.size());
  for (const SimGpu& g : s.gpus) views.emplace_back(g);
  if (nvml_published_ && views == last_nvml_views_ && s.nvml_init_fails == last_nvml_init_fails_) {
    return Status::Ok();
  }
  Json gpus = Json::array();
  for (size_t i = 0; i < views.size(); ++i) {
    gpus.push_back(GpuJson(views[i], static_cast<int>(i), model_->layout(), scenario_.node.row_remap));
  }
  Json state = {{"gpus", std::move(gpus)}};
  if (s.nvml_init_fails) state["errors"] = {{"nvmlInit_v2", 18}};  // NVML_ERROR_LIB_RM_VERSION_MISMATCH
  nvml_published_ = true;
  last_nvml_views_ = std::move(views);
  last_nvml_init_fails_ = s.nvml_init_fails;
  std::string text = state.dump();
  if (text == last_nvml_) return Status::Ok();
  last_nvml_ = std::move(text);
  ++stats_.nvml_writes;
  return WriteAtomically(nvml_path_, last_nvml_);
}

Status SimNode::PublishSysfs() {
  const NodeState& s = model_->state();
  const NodeLayout& l = model_->layout();
  Status first;
  auto note = [&first](Status st) {
    if (first.ok() && !st.ok()) first = st;
  };
  auto sync_link = [&](const std::string& bdf, const SimPcieLink& want, SimPcieLink& have) {
    if (want.speed_gts != have.speed_gts || want.width != have.width) {
      note(tree_->SetLink(bdf, want.speed_gts, want.width));
    }
    if (want.aer_corrected > have.aer_corrected) {
      note(tree_->AddAer(bdf, "correctable", "BadTLP", want.aer_corrected - have.aer_corrected));
    }
    if (want.port_aer_corrected > have.port_aer_corrected) {
      if (const FakePcieDevice* d = tree_->Find(bdf); d && !d->parent.empty()) {
        note(tree_->AddAer(d->parent, "correctable", "BadDLLP", want.port_aer_corrected - have.port_aer_corrected));
      }
    }
    have = want;
  };
  for (size_t i = 0; i < s.gpu_pcie.size(); ++i) sync_link(l.gpu_bdfs[i], s.gpu_pcie[i], sysfs_gpu_[i]);
  for (size_t i = 0; i < s.nic_pcie.size() && i < l.nic_bdfs.size(); ++i) {
    SimPcieLink want = s.nic_pcie[i];
    want.speed_gts = sysfs_nic_[i].speed_gts;  // NICs keep their trained link
    want.width = sysfs_nic_[i].width;
    sync_link(l.nic_bdfs[i], want, sysfs_nic_[i]);
  }
  for (size_t i = 0; i < s.ib.size(); ++i) {
    const SimIbPort& want = s.ib[i];
    SimIbPort& have = sysfs_ib_[i];
    const std::string& dev = l.hca_names[i];
    if (want.state != have.state || want.phys_state != have.phys_state) {
      note(tree_->SetIbState(dev, want.state, want.phys_state));
    }
    if (want.symbol_error != have.symbol_error) note(tree_->SetIbCounter(dev, "symbol_error", want.symbol_error));
    if (want.rcv_error != have.rcv_error) note(tree_->SetIbCounter(dev, "port_rcv_errors", want.rcv_error));
    if (want.link_downed != have.link_downed) note(tree_->SetIbCounter(dev, "link_downed", want.link_downed));
    have = want;
  }
  if (eth_) note(PublishRoce(*eth_, s.roce, sysfs_roce_));
  return first;
}

Status SimNode::PublishBmc(bool sensors) {
  if (!bmc_) {
    pending_sel_.clear();
    return Status::Ok();
  }
  const Status published = sensors ? PublishBmcSensors() : Status::Ok();
  const Status sel = PublishSel();
  return published.ok() ? sel : published;
}

Status SimNode::PublishBmcSensors() {
  const NodeState& s = model_->state();
  Status first;
  auto note = [&first](Status st) {
    if (first.ok() && !st.ok()) first = st;
  };
  note(bmc_->SetValue("/redfish/v1/Managers/BMC", "/DateTime", Json(FormatIso8601(options_.time.Utc(s.t))).dump()));
  BmcResources r = RenderBmcResources(s, scenario_.node.psu_capacity_w);
  auto set_all = [&](const std::string& uri, const Json& doc, std::string& last) {
    std::string text = doc.dump();
    if (text == last) return;
    last = std::move(text);
    for (const auto& item : doc.items()) note(bmc_->SetValue(uri, "/" + item.key(), item.value().dump()));
  };
  set_all(kBmcPowerUri, r.power, last_power_);
  set_all(kBmcThermalUri, r.thermal, last_thermal_);
  const std::string coolant = r.coolant.dump() + r.leak.dump() + r.pumps.dump();
  if (coolant != last_coolant_) {
    last_coolant_ = coolant;
    note(bmc_->SetValue(kBmcCoolantUri, "/Members", r.coolant.dump()));
    note(bmc_->SetValue(kBmcLeakUri, "/Members", r.leak.dump()));
    note(bmc_->SetValue(kBmcPumpsUri, "/Members", r.pumps.dump()));
  }
  return first;
}

// The SEL entries whose time has come, appended in time order (ids follow that order).
Status SimNode::PublishSel() {
  const NodeState& s = model_->state();
  Status first;
  auto note = [&first](Status st) {
    if (first.ok() && !st.ok()) first = st;
  };
  std::stable_sort(pending_sel_.begin(), pending_sel_.end(),
                   [](const SimSel& a, const SimSel& b) { return a.t < b.t; });
  size_t done = 0;
  for (; done < pending_sel_.size() && pending_sel_[done].t <= s.t; ++done) {
    const SimSel& e = pending_sel_[done];
    const std::string when = FormatIso8601(options_.time.Utc(e.t));
    auto id = bmc_->AppendMember(kBmcSelUri, SelEntryJson(e, when).dump());
    if (!id.ok()) {
      note(id.status());
      continue;
    }
    ++stats_.sel_entries;
    BmcEvent ev;
    ev.message_id = e.message_id;
    ev.message = e.message;
    ev.severity = e.severity;
    ev.timestamp = when;
    ev.origin = e.origin;
    if (!e.message_id.empty()) bmc_->PushEvent(ev);
  }
  pending_sel_.erase(pending_sel_.begin(), pending_sel_.begin() + static_cast<std::ptrdiff_t>(done));
  return first;
}

Status SimNode::PublishWorkload() {
  std::string out;
  for (const NodeModel::StepReport& st : model_->TakeSteps()) {
    char line[256];
    std::snprintf(line, sizeof(line), "job=%s step=%llu step_time_s=%.4f time=%.3f\n", scenario_.workload.job.c_str(),
                  static_cast<unsigned long long>(st.step), st.step_time_s,
                  static_cast<double>(options_.time.Utc(st.t)) / 1e9);
    out += line;
    ++stats_.step_reports;
  }
  if (out.empty()) return Status::Ok();
  return Append(workload_path_, out);
}

}  // namespace faultline::sim
