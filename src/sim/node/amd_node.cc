#include "sim/node/amd_node.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/fake_amdsmi/fake_amdgpu_sysfs.h"
#include "sim/node/node_model.h"

namespace faultline::sim {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kHwThermal = 0x40, kHwPowerBrake = 0x80;  // NVML bits the model sets
constexpr double kHotspotOffsetC = 18;
constexpr int64_t kHotspotCriticalC = 105, kHbmCriticalC = 95;  // whole degrees, as AMD SMI answers

std::string Prefix(const NodeLayout& l, int gpu) {
  return "amdgpu " + l.gpu_bdfs.at(static_cast<size_t>(gpu)) + ": amdgpu: ";
}

std::string AmdUuid(int gpu) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "5f1c74a1-0000-1000-80e9-0000000000%02x", gpu);
  return buf;
}

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

uint64_t XgmiCe(const SimGpu& g) {
  uint64_t n = 0;
  for (const SimLink& l : g.links) n += l.crc_flit;
  return n;
}

}  // namespace

Status CheckAmdFault(NodeFaultKind kind, bool amd_node) {
  const bool amd_only = kind == NodeFaultKind::kBadPageThreshold || kind == NodeFaultKind::kRingTimeout;
  const bool nvidia_only = kind == NodeFaultKind::kGspTimeout || kind == NodeFaultKind::kDriverMismatch ||
                           kind == NodeFaultKind::kNvswitchFatal || kind == NodeFaultKind::kNvlinkDown;
  if (amd_only && !amd_node) return Status(StatusCode::kCorrupt, "needs node.gpu_vendor: amd");
  if (nvidia_only && amd_node) return Status(StatusCode::kCorrupt, "is NVIDIA-only (not on node.gpu_vendor: amd)");
  return Status::Ok();
}

bool AmdStartFault(const NodeFault& f, double t, NodeState& state, const NodeLayout& layout, const KmsgSink& kmsg) {
  SimGpu* gpu = f.gpu >= 0 && static_cast<size_t>(f.gpu) < state.gpus.size() ? &state.gpus[f.gpu] : nullptr;
  const int event = 1 + static_cast<int>(t) % 97;  // newer kernels number RAS events: "{n}"
  auto ras = [&](const char* kind, const char* block, uint64_t n) {
    kmsg(t, 3,
         Prefix(layout, f.gpu) + "{" + std::to_string(event) + "}socket: 0, die: 0, " + std::to_string(n) + " new " +
             kind + " hardware errors detected in " + block + " block");
  };
  switch (f.kind) {
    case NodeFaultKind::kDbe:
      if (!gpu) return true;
      ++gpu->dbe_volatile, ++gpu->dbe_aggregate, ++gpu->retired_dbe;
      ras("uncorrectable", "umc", 1);
      kmsg(t + 0.002, 6, Prefix(layout, f.gpu) + "Saved 1 pages to EEPROM table.");
      state.job_running = false;
      return true;
    case NodeFaultKind::kBadPageThreshold: {
      if (!gpu) return true;
      const auto pages = static_cast<uint32_t>(f.value >= 1 ? f.value : kAmdBadPageThreshold + 1);
      ++gpu->dbe_volatile, ++gpu->dbe_aggregate;
      gpu->retired_dbe += pages;
      ras("uncorrectable", "umc", 1);
      kmsg(t + 0.002, 6, Prefix(layout, f.gpu) + "Saved " + std::to_string(pages) + " pages to EEPROM table.");
      kmsg(t + 0.003, 3,
           Prefix(layout, f.gpu) + "RAS records:" + std::to_string(gpu->retired_dbe) +
               " exceed threshold:" + std::to_string(kAmdBadPageThreshold));
      kmsg(t + 0.004, 3,
           Prefix(layout, f.gpu) + "Please consult AMD Service Action Guide (SAG) for appropriate service procedures");
      state.job_running = false;
      return true;
    }
    case NodeFaultKind::kRemapFailure:  // a bad page that could not be reserved (F)
      if (!gpu) return true;
      ++gpu->dbe_volatile, ++gpu->dbe_aggregate;
      gpu->remap_failure = true;
      ras("uncorrectable", "umc", 1);
      state.job_running = false;
      return true;
    case NodeFaultKind::kSramUncorrectable:
      if (!gpu) return true;
      ++gpu->sram_uncorrected, ++gpu->dbe_volatile, ++gpu->dbe_aggregate;
      ras("uncorrectable", "gfx", 1);
      kmsg(t + 0.01, 4, Prefix(layout, f.gpu) + "GPU reset begin!");
      kmsg(t + 0.02, 6, Prefix(layout, f.gpu) + "MODE1 reset");
      kmsg(t + 1.5, 6, Prefix(layout, f.gpu) + "GPU reset succeeded, trying to resume");
      state.job_running = false;
      return true;
    case NodeFaultKind::kFallOffBus:
      if (!gpu) return true;
      kmsg(t, 3, "amdgpu " + layout.gpu_bdfs[f.gpu] + ": device lost from bus!");
      kmsg(t + 0.001, 3,
           "amdgpu " + layout.gpu_bdfs[f.gpu] +
               ": SMU: bus error for message: TransferTableSmu2Dram(18) response:0xFFFFFFFF");
      gpu->lost = true;
      state.gpu_pcie[f.gpu].width = 0;
      state.job_running = false;
      return true;
    case NodeFaultKind::kUserXid: {  // a program's bad addresses: GPU VM page faults naming it
      const std::string pid = std::to_string(52000 + static_cast<int>(t));
      for (int i = 0; i < std::max(1, f.count); ++i) {
        kmsg(t + i * f.every_s, 3,
             Prefix(layout, f.gpu) +
                 "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32769, for process python3 pid " + pid +
                 " thread python3 pid " + pid + ")");
      }
      return true;
    }
    case NodeFaultKind::kRingTimeout: {
      const std::string process = f.text.empty() ? "python3" : f.text;
      const std::string pid = std::to_string(47000 + static_cast<int>(t));
      kmsg(t, 3, Prefix(layout, f.gpu) + "ring gfx_0.0.0 timeout, signaled seq=2662395, emitted seq=2662397");
      kmsg(t + 0.001, 3,
           Prefix(layout, f.gpu) + "Process " + process + " pid " + pid + " thread " + process + " pid " + pid);
      kmsg(t + 0.01, 4, Prefix(layout, f.gpu) + "GPU reset begin!");
      kmsg(t + 0.02, 6, Prefix(layout, f.gpu) + "MODE2 reset");
      kmsg(t + 1.2, 6, Prefix(layout, f.gpu) + "GPU reset succeeded, trying to resume");
      state.job_running = false;
      return true;
    }
    default:
      return false;
  }
}

std::vector<std::pair<double, std::string>> AmdBootLines(const NodeLayout& layout) {
  std::vector<std::pair<double, std::string>> out;
  out.emplace_back(12.9, "[drm] amdgpu kernel modesetting enabled.");
  for (size_t i = 0; i < layout.gpu_bdfs.size(); ++i) {
    const double t = 20.0 + 0.01 * static_cast<double>(i);
    const std::string p = "amdgpu " + layout.gpu_bdfs[i] + ": amdgpu: ";
    out.emplace_back(t, p + "MEM ECC is active.");
    out.emplace_back(t + 0.001, p + "SRAM ECC is active.");
    out.emplace_back(t + 0.002, p + "RAS INFO: ras initialized successfully, hardware ability[7fff] ras_mask[7fff]");
  }
  return out;
}

Result<std::unique_ptr<AmdPublisher>> AmdPublisher::Create(const std::string& dir, const std::string& sysfs_root) {
  std::unique_ptr<AmdPublisher> p(new AmdPublisher(dir + "/amdsmi-state.json", sysfs_root));
  if (Status s = fake_amdsmi::WriteFakeAmdgpuThreshold(sysfs_root, -1); !s.ok()) return s;
  return p;
}

AmdPublisher::~AmdPublisher() = default;

Status AmdPublisher::Publish(const NodeState& s, const NodeLayout& l) {
  Json gpus = Json::array();
  Status first;
  last_cards_.resize(s.gpus.size());
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const SimGpu& g = s.gpus[i];
    const auto hotspot = static_cast<int64_t>(std::max(0.0, g.temp_gpu + kHotspotOffsetC));
    const auto mem = static_cast<int64_t>(std::max(0.0, g.temp_mem));
    const uint64_t umc_ue = g.dbe_volatile - std::min(g.dbe_volatile, g.sram_uncorrected);
    Json j;
    j["bdf"] = l.gpu_bdfs.at(i);
    j["uuid"] = AmdUuid(static_cast<int>(i));
    j["ecc"] = {{"umc", {{"ce", g.sbe_volatile}, {"ue", umc_ue}}},
                {"gfx", {{"ue", g.sram_uncorrected}}},
                {"sdma", Json::object()},
                {"mmhub", Json::object()},
                {"xgmi_wafl", {{"ce", XgmiCe(g)}}}};
    j["bad_pages"] = {
        {"reserved", g.retired_dbe}, {"pending", g.retired_pending ? 1 : 0}, {"unreservable", g.remap_failure ? 1 : 0}};
    j["temperature"] = {
        {"hotspot", hotspot}, {"hotspot_critical", kHotspotCriticalC}, {"hotspot_emergency", kHotspotCriticalC + 10},
        {"memory", mem},      {"memory_critical", kHbmCriticalC},      {"edge", std::max<int64_t>(0, hotspot - 23)}};
    j["power"] = {{"socket_w", static_cast<uint32_t>(g.power_w)}, {"limit_w", 750}};
    j["violation"] = {
        {"socket_thermal", (g.reasons & kHwThermal) != 0},
        {"hbm_thermal", (g.reasons & kHwThermal) != 0 && g.temp_mem >= static_cast<double>(kHbmCriticalC)},
        {"prochot", (g.reasons & kHwPowerBrake) != 0},
        {"ppt", false},
        {"vr_thermal", false}};
    j["xgmi_status"] = XgmiCe(g) > 0 ? 1 : 0;
    j["pcie_replay"] = g.pcie_replay;
    if (g.lost) j["lost"] = true;
    // The same GPU as the amdgpu sysfs files show it.
    fake_amdsmi::FakeAmdgpuCard card;
    card.bdf = l.gpu_bdfs.at(i);
    card.ras = {{"umc", {umc_ue, g.sbe_volatile}},
                {"gfx", {g.sram_uncorrected, 0}},
                {"sdma", {}},
                {"mmhub", {}},
                {"xgmi_wafl", {0, XgmiCe(g)}}};
    card.bad_reserved = g.retired_dbe;
    card.bad_pending = g.retired_pending ? 1 : 0;
    card.bad_unreservable = g.remap_failure ? 1 : 0;
    card.pcie_replay = g.pcie_replay;
    card.vram_bytes = kAmdVramBytes;
    card.temp_junction_mc = hotspot * 1000;
    card.temp_junction_crit_mc = kHotspotCriticalC * 1000;
    card.temp_mem_mc = mem * 1000;
    card.temp_mem_crit_mc = kHbmCriticalC * 1000;
    card.temp_edge_mc = std::max<int64_t>(0, hotspot - 23) * 1000;
    card.power_uw = static_cast<int64_t>(g.power_w) * 1000000;
    const std::string key = j.dump();
    if (key != last_cards_[i] && !g.lost) {
      Status st = fake_amdsmi::WriteFakeAmdgpuCard(sysfs_root_, static_cast<int>(i), card);
      if (first.ok() && !st.ok()) first = st;
    }
    last_cards_[i] = key;
    gpus.push_back(std::move(j));
  }
  const std::string text = Json{{"gpus", std::move(gpus)}}.dump();
  if (text == last_state_) return first;
  last_state_ = text;
  ++writes_;
  Status st = WriteAtomically(state_path_, text);
  return first.ok() ? st : first;
}

}  // namespace faultline::sim
