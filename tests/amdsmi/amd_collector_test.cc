// The AMD SMI path through the real dlopen of the fake libamd_smi.so: library absent, a
// library without AMD SMI, init failures, every per-GPU call failing, an older ROCm
// (optional calls missing), a GPU that stops enumerating, counters moving; and hostile
// answers through an injected table.
#include "sources/amdsmi/amd_collector.h"

#include <gtest/gtest.h>

#include <cstring>

#include "amd_test_env.h"

namespace faultline::amdsmi {
namespace {

using testing::AmdTestEnv;
using testing::Json;
using testing::Node;

const Observation* Find(const AmdSample& s, int gpu, ObsKind kind, const char* location = nullptr) {
  for (const Observation& o : s.observations) {
    if (o.component.Id() != "gpu/" + std::to_string(gpu) || o.kind != kind) continue;
    const bool has = o.attrs.count("location") != 0;
    if (location == nullptr ? has : (!has || o.attrs.at("location") != location)) continue;
    return &o;
  }
  return nullptr;
}

std::unique_ptr<AmdCollector> Open(const std::string& lib = FAKE_AMDSMI_LIB, const std::string& root = "/nonexistent") {
  AmdOptions o;
  o.library_path = lib;
  o.sysfs_root = root;
  o.node = "n1";
  return AmdCollector::Open(o);
}

TEST(AmdCollector, EightGpusEveryField) {
  AmdTestEnv env;
  Json state = Node(8);
  state["gpus"][3]["ecc"]["umc"] = {{"ce", 7}, {"ue", 1}, {"de", 2}};
  state["gpus"][3]["ecc"]["gfx"] = {{"ue", 4}};
  state["gpus"][3]["ecc"]["xgmi_wafl"] = {{"ce", 900}, {"ue", 1}};
  state["gpus"][3]["bad_pages"] = {{"reserved", 5}, {"pending", 1}, {"unreservable", 1}};
  state["gpus"][3]["violation"] = {{"socket_thermal", true}, {"ppt", true}};
  state["gpus"][3]["xgmi_status"] = 2;
  state["gpus"][3]["pcie_replay"] = 42;
  env.Write(state);
  auto c = Open();
  EXPECT_TRUE(c->library_status().empty()) << c->library_status();
  AmdSample s = c->Sample();
  EXPECT_EQ(s.via, "amdsmi");
  EXPECT_EQ(s.gpu_count, 8);
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().message;
  const Observation* id = Find(s, 3, ObsKind::kGpuIdentity);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->attrs.at("bdf"), "0000:3c:00.0");
  EXPECT_EQ(id->attrs.at("uuid"), "5f1c74a1-0000-1000-80e9-000000000003");
  EXPECT_EQ(*Find(s, 3, ObsKind::kEccDbe, "dram")->value, 3);  // ue + deferred
  EXPECT_EQ(*Find(s, 3, ObsKind::kEccSbe, "dram")->value, 7);
  EXPECT_EQ(*Find(s, 3, ObsKind::kEccDbe, "sram")->value, 4);
  EXPECT_EQ(Find(s, 3, ObsKind::kEccDbe, "sram")->attrs.at("blocks"), "gfx");
  EXPECT_EQ(*Find(s, 3, ObsKind::kEccDbe)->value, 3 + 4 + 1);  // total over every block
  EXPECT_EQ(*Find(s, 3, ObsKind::kRetiredPages)->value, 7);
  EXPECT_EQ(*Find(s, 3, ObsKind::kRetiredPagesPending)->value, 1);
  EXPECT_EQ(*Find(s, 3, ObsKind::kRowRemapFailure)->value, 1);
  EXPECT_EQ(*Find(s, 3, ObsKind::kClockThrottle)->value, 0x4c);
  EXPECT_EQ(Find(s, 3, ObsKind::kClockThrottle)->attrs.at("amd_reasons"), "socket_thermal,ppt");
  EXPECT_EQ(*Find(s, 3, ObsKind::kNvlinkCrcData)->value, 900);
  EXPECT_EQ(*Find(s, 3, ObsKind::kNvlinkRecovery)->value, 1);
  EXPECT_EQ(*Find(s, 3, ObsKind::kPcieReplay)->value, 42);
  EXPECT_EQ(*Find(s, 3, ObsKind::kOther)->value, 2);  // XGMI error status
  EXPECT_EQ(*Find(s, 3, ObsKind::kPower)->value, 600);
  EXPECT_EQ(*Find(s, 3, ObsKind::kPowerLimit)->value, 750);
  EXPECT_EQ(*Find(s, 0, ObsKind::kNvlinkCrcData)->value, 0);
}

TEST(AmdCollector, LibraryAbsentFallsBackToSysfsWithANote) {
  AmdTestEnv env;
  auto c = Open("/nonexistent/libamd_smi.so");
  EXPECT_NE(c->library_status().find("cannot load"), std::string::npos);
  AmdSample s = c->Sample();
  EXPECT_EQ(s.via, "sysfs");
  EXPECT_EQ(s.gpu_count, 0);
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes[0].find("reading sysfs instead"), std::string::npos);
  EXPECT_TRUE(c->Sample().notes.empty());  // said once
}

TEST(AmdCollector, LibraryWithoutAmdSmiSymbols) {
  AmdTestEnv env;
  auto lib = AmdsmiLibrary::Open("libm.so.6");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("does not export amdsmi_init"), std::string::npos) << lib.status().message();
}

TEST(AmdCollector, InitFailures) {
  {
    AmdTestEnv env;
    unsetenv("FAKE_AMDSMI_STATE");  // no driver
    auto lib = AmdsmiLibrary::Open(FAKE_AMDSMI_LIB);
    ASSERT_FALSE(lib.ok());
    EXPECT_NE(lib.status().message().find("DRIVER_NOT_LOADED"), std::string::npos);
  }
  {
    AmdTestEnv env;
    env.Write(Json{{"errors", {{"amdsmi_init", "NO_PERM"}}}, {"gpus", Json::array()}});
    auto lib = AmdsmiLibrary::Open(FAKE_AMDSMI_LIB);
    ASSERT_FALSE(lib.ok());
    EXPECT_EQ(lib.status().code(), StatusCode::kPermissionDenied);
  }
  {
    AmdTestEnv env;
    env.WriteText("{not json");
    auto lib = AmdsmiLibrary::Open(FAKE_AMDSMI_LIB);
    ASSERT_FALSE(lib.ok());
    EXPECT_NE(lib.status().message().find("UNKNOWN_ERROR"), std::string::npos);
  }
}

TEST(AmdCollector, EveryPerGpuCallFailingIsAnErrorTheRestIsRead) {
  const char* calls[] = {"amdsmi_get_gpu_device_bdf",        "amdsmi_get_gpu_device_uuid",
                         "amdsmi_get_gpu_total_ecc_count",   "amdsmi_get_gpu_ecc_enabled",
                         "amdsmi_get_gpu_ecc_count",         "amdsmi_get_gpu_bad_page_info",
                         "amdsmi_get_temp_metric",           "amdsmi_get_power_info",
                         "amdsmi_get_violation_status",      "amdsmi_gpu_xgmi_error_status",
                         "amdsmi_get_gpu_pci_replay_counter"};
  for (const char* call : calls) {
    for (const char* code : {"BUSY", "NO_PERM", "UNKNOWN_ERROR", "NOT_SUPPORTED"}) {
      AmdTestEnv env;
      Json state = Node(2);
      state["gpus"][1]["errors"] = {{call, code}};
      env.Write(state);
      auto c = Open();
      AmdSample s = c->Sample();
      const bool silent = std::strcmp(code, "NOT_SUPPORTED") == 0;
      int mine = 0;
      for (const AmdError& e : s.errors) {
        EXPECT_EQ(e.call, call);
        EXPECT_NE(e.message.find(code), std::string::npos) << e.message;
        ++mine;
      }
      EXPECT_EQ(mine, silent ? 0 : 1) << call << " " << code;  // once per call and code, whatever the blocks
      // GPU 0 is untouched; GPU 1 still has its temperatures unless that was the failing call.
      EXPECT_NE(Find(s, 0, ObsKind::kTemperature), nullptr) << call;
      if (std::strcmp(call, "amdsmi_get_temp_metric") != 0) {
        EXPECT_NE(Find(s, 1, ObsKind::kTemperature), nullptr) << call;
      }
    }
  }
}

TEST(AmdCollector, EnumerationFailures) {
  AmdTestEnv env;
  env.Write(Node(2));
  auto c = Open();
  ASSERT_EQ(c->Sample().gpu_count, 2);
  Json state = Node(2);
  state["errors"] = {{"amdsmi_get_socket_handles", "BUSY"}};
  env.Write(state);
  AmdSample s = c->Sample();
  EXPECT_EQ(s.gpu_count, 0);
  ASSERT_FALSE(s.errors.empty());
  EXPECT_EQ(s.errors[0].gpu, -1);
  state = Node(2);
  state["gpus"][0]["errors"] = {{"amdsmi_get_processor_handles", "UNKNOWN_ERROR"}};
  env.Write(state);
  s = c->Sample();
  EXPECT_EQ(s.gpu_count, 1);
}

TEST(AmdCollector, OlderRocmWithoutOptionalCalls) {
  AmdTestEnv env;
  env.Write(Node(1));
  auto c = Open(FAKE_AMDSMI_LEGACY_LIB);
  AmdSample s = c->Sample();
  EXPECT_EQ(s.gpu_count, 1);
  std::string notes;
  for (const std::string& n : s.notes) notes += n + "\n";
  EXPECT_NE(notes.find("amdsmi_get_violation_status"), std::string::npos) << notes;
  EXPECT_NE(notes.find("amdsmi_get_gpu_bad_page_info"), std::string::npos) << notes;
  EXPECT_EQ(Find(s, 0, ObsKind::kClockThrottle), nullptr);
  EXPECT_EQ(Find(s, 0, ObsKind::kRetiredPages), nullptr);
  EXPECT_NE(Find(s, 0, ObsKind::kEccSbe, "dram"), nullptr);
}

TEST(AmdCollector, GpuThatStopsEnumeratingIsLostAndIndicesStayStable) {
  AmdTestEnv env;
  env.Write(Node(4));
  auto c = Open();
  ASSERT_EQ(c->Sample().gpu_count, 4);
  Json state = Node(4);
  state["gpus"][1]["lost"] = true;
  env.Write(state);
  AmdSample s = c->Sample();
  EXPECT_EQ(s.gpu_count, 3);
  const Observation* lost = Find(s, 1, ObsKind::kGpuLost);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->component.keys.at("bdf"), "0000:1c:00.0");
  EXPECT_EQ(Find(s, 2, ObsKind::kGpuIdentity)->attrs.at("bdf"), "0000:2c:00.0");  // not renumbered
  env.Write(Node(4));
  s = c->Sample();
  EXPECT_EQ(Find(s, 1, ObsKind::kGpuLost), nullptr);
  EXPECT_NE(Find(s, 1, ObsKind::kGpuIdentity), nullptr);
}

TEST(AmdCollector, CountersMoveBetweenSamplesAndABadRewriteKeepsTheOldState) {
  AmdTestEnv env;
  env.Write(Node(1));
  auto c = Open();
  AmdSample s = c->Sample();
  EXPECT_EQ(*Find(s, 0, ObsKind::kEccSbe, "dram")->value, 2);
  Json state = Node(1);
  state["gpus"][0]["ecc"]["umc"]["ce"] = 50;
  env.Write(state);
  s = c->Sample();
  EXPECT_EQ(*Find(s, 0, ObsKind::kEccSbe, "dram")->value, 50);
  env.WriteText("{\"gpus\": [{\"bogus\": 1}]}");
  s = c->Sample();
  EXPECT_EQ(*Find(s, 0, ObsKind::kEccSbe, "dram")->value, 50);
}

// A hostile or broken library through an injected table.
struct Hostile {
  static AmdsmiStatus Sockets(uint32_t* n, AmdsmiSocketHandle* out) {
    if (out == nullptr) {
      *n = 1000000;  // far more than exist
    } else {
      for (uint32_t i = 0; i < *n; ++i) out[i] = reinterpret_cast<AmdsmiSocketHandle>(uintptr_t{1});
    }
    return kSuccess;
  }
  static AmdsmiStatus Processors(AmdsmiSocketHandle, uint32_t* n, AmdsmiProcessorHandle* out) {
    if (out != nullptr) out[0] = reinterpret_cast<AmdsmiProcessorHandle>(uintptr_t{2});
    *n = out == nullptr ? 1 : 1;
    return kSuccess;
  }
  static AmdsmiStatus Uuid(AmdsmiProcessorHandle, unsigned int* len, char* buf) {
    std::memset(buf, 'A', *len);  // no terminator
    return kSuccess;
  }
  static AmdsmiStatus BadPages(AmdsmiProcessorHandle, uint32_t* n, AmdsmiRetiredPageRecord* out) {
    if (out == nullptr) {
      *n = 0xFFFFFFFF;
      return kSuccess;
    }
    for (uint32_t i = 0; i < *n; ++i) out[i].status = 77;  // unknown status: counted as retired
    *n = 0xFFFFFFFF;                                       // claims more than it wrote
    return kSuccess;
  }
  static AmdsmiStatus Temp(AmdsmiProcessorHandle, uint32_t, uint32_t metric, int64_t* v) {
    *v = metric == kTempCurrent ? 71500 : 105000;  // millidegrees (an older release)
    return kSuccess;
  }
};

TEST(AmdCollector, HostileLibraryAnswersAreBounded) {
  AmdsmiApi api;
  api.get_socket_handles = Hostile::Sockets;
  api.get_processor_handles = Hostile::Processors;
  api.get_uuid = Hostile::Uuid;
  api.get_bad_page_info = Hostile::BadPages;
  api.get_temp_metric = Hostile::Temp;
  AmdCollector c(&api, AmdOptions{.sysfs_root = "/nonexistent"});
  AmdSample s = c.Sample();
  EXPECT_EQ(s.gpu_count, static_cast<int>(kMaxSockets));
  const Observation* id = Find(s, 0, ObsKind::kGpuIdentity);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->attrs.at("uuid").size(), kUuidBufferSize);
  EXPECT_EQ(*Find(s, 0, ObsKind::kRetiredPages)->value, kMaxBadPages);
  const Observation* t = Find(s, 0, ObsKind::kTemperature);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(*t->value, 71.5);
  EXPECT_EQ(t->attrs.at("slowdown"), "105");
}

TEST(AmdStatusNames, RoundTrip) {
  for (AmdsmiStatus s :
       {kSuccess, kNotSupported, kNoPerm, kBusy, kNotFound, kNotInit, kDriverNotLoaded, kNoData, kUnknownError}) {
    AmdsmiStatus back = 12345;
    ASSERT_TRUE(ParseAmdsmiStatusName(AmdsmiStatusName(s), &back));
    EXPECT_EQ(back, s);
    ASSERT_TRUE(ParseAmdsmiStatusName("AMDSMI_STATUS_" + AmdsmiStatusName(s), &back));
  }
  EXPECT_EQ(AmdsmiStatusName(777), "STATUS_777");
  AmdsmiStatus x;
  EXPECT_FALSE(ParseAmdsmiStatusName("NOPE", &x));
}

TEST(AmdAbi, ValuesPinnedToTheReference) {
  EXPECT_EQ(kNotSupported, 2u);
  EXPECT_EQ(kNoPerm, 10u);
  EXPECT_EQ(kBusy, 30u);
  EXPECT_EQ(kDriverNotLoaded, 34u);
  EXPECT_EQ(kBlockUmc, 0x1u);
  EXPECT_EQ(kBlockXgmiWafl, 0x80u);
  EXPECT_EQ(kBlockMpio, 0x40000u);
  EXPECT_EQ(kPagePending, 1u);
  EXPECT_EQ(kPageUnreservable, 2u);
  EXPECT_EQ(kXgmiMultipleErrors, 2u);
  EXPECT_EQ(kInitAmdGpus, 2u);
  const AmdsmiBdf b = AmdsmiBdf::Make(0, 0xc5, 0, 1);
  EXPECT_EQ(b.bus(), 0xc5u);
  EXPECT_EQ(b.function(), 1u);
}

}  // namespace
}  // namespace faultline::amdsmi
