// The amdgpu sysfs reader over a fake tree (sim/fake_amdsmi/fake_amdgpu_sysfs.h) and over
// damaged files: a bad file is that file's error, the card's other files still count.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <set>

#include "amd_test_env.h"
#include "sim/fake_amdsmi/fake_amdgpu_sysfs.h"
#include "sources/amdsmi/amd_collector.h"

namespace faultline::amdsmi {
namespace {

using fake_amdsmi::FakeAmdgpuCard;
using testing::AmdTestEnv;

FakeAmdgpuCard Card(int i) {
  FakeAmdgpuCard c;
  char bdf[16];
  std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 0x0c + 0x10 * i);
  c.bdf = bdf;
  c.ras = {{"umc", {0, 3}}, {"gfx", {0, 0}}, {"xgmi_wafl", {0, 0}}};
  return c;
}

const Observation* Find(const std::vector<Observation>& obs, int gpu, ObsKind kind, const char* location = nullptr) {
  for (const Observation& o : obs) {
    if (o.component.Id() != "gpu/" + std::to_string(gpu) || o.kind != kind) continue;
    if (location != nullptr && (!o.attrs.count("location") || o.attrs.at("location") != location)) continue;
    if (location == nullptr && o.attrs.count("location")) continue;
    return &o;
  }
  return nullptr;
}

TEST(AmdgpuSysfs, ReadsEveryCardWithoutTheLibrary) {
  AmdTestEnv env;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), i, Card(i)).ok());
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuThreshold(env.root(), -1).ok());
  AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = env.root(), .node = "n1"});
  AmdSample s = c.Sample();
  EXPECT_EQ(s.via, "sysfs");
  EXPECT_EQ(s.gpu_count, 8);
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().message;
  const Observation* ce = Find(s.observations, 2, ObsKind::kEccSbe, "dram");
  ASSERT_NE(ce, nullptr);
  EXPECT_EQ(*ce->value, 3);
  EXPECT_EQ(ce->source, Source::kSysfs);
  EXPECT_EQ(ce->component.keys.at("bdf"), "0000:2c:00.0");
  const Observation* pages = Find(s.observations, 0, ObsKind::kRetiredPages);
  ASSERT_NE(pages, nullptr);
  EXPECT_EQ(pages->attrs.at("limit"), std::to_string((192LL << 30) / (100LL << 20)));  // auto: VRAM / 100 MB
  const Observation* hot = nullptr;
  for (const Observation& o : s.observations) {
    if (o.component.Id() == "gpu/0" && o.kind == ObsKind::kTemperature && o.attrs.at("sensor") == "gpu") hot = &o;
  }
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(*hot->value, 55);
  EXPECT_EQ(hot->attrs.at("slowdown"), "105");
}

TEST(AmdgpuSysfs, ThresholdParameter) {
  AmdTestEnv env;
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 0, Card(0)).ok());
  for (auto [param, want] : {std::pair<int64_t, const char*>{128, "128"}, {0, nullptr}, {-2, nullptr}}) {
    ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuThreshold(env.root(), param).ok());
    AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = env.root()});
    const AmdSample sample = c.Sample();
    const Observation* pages = Find(sample.observations, 0, ObsKind::kRetiredPages);
    ASSERT_NE(pages, nullptr);
    if (want) {
      EXPECT_EQ(pages->attrs.at("limit"), want);
    } else {
      EXPECT_FALSE(pages->attrs.count("limit")) << param;  // no retirement / threshold ignored: none stated
    }
  }
}

TEST(AmdgpuSysfs, DamagedFilesAreErrorsOfThatFileOnly) {
  AmdTestEnv env;
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 0, Card(0)).ok());
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 1, Card(1)).ok());
  const std::string dev = "sys/devices/amdgpu-fake/0000:0c:00.0/";
  env.WriteFile(dev + "ras/umc_err_count", "ue: 1\n");                               // truncated
  env.WriteFile(dev + "ras/gfx_err_count", std::string(8192, 'x'));                  // oversized
  env.WriteFile(dev + "ras/gpu_vram_bad_pages", "0x1 : 0x1000 : Q\n");               // unknown flag
  env.WriteFile(dev + "pcie_replay_count", "lots\n");                                // non-numeric
  env.WriteFile(dev + "ras/xgmi_wafl_err_count", "Query currently inaccessible\n");  // busy
  AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = env.root()});
  AmdSample s = c.Sample();
  EXPECT_EQ(s.gpu_count, 2);
  std::string all;
  for (const AmdError& e : s.errors) all += e.message + "\n";
  EXPECT_NE(all.find("umc_err_count"), std::string::npos) << all;
  EXPECT_NE(all.find("gfx_err_count"), std::string::npos) << all;
  EXPECT_NE(all.find("gpu_vram_bad_pages"), std::string::npos) << all;
  EXPECT_NE(all.find("pcie_replay_count"), std::string::npos) << all;
  EXPECT_EQ(all.find("xgmi_wafl"), std::string::npos) << "a busy query is a note, not an error";
  bool noted = false;
  for (const std::string& n : s.notes) noted = noted || n.find("inaccessible") != std::string::npos;
  EXPECT_TRUE(noted);
  // The damaged card still reports what it could; the other card is whole.
  EXPECT_NE(Find(s.observations, 0, ObsKind::kTemperature), nullptr);
  EXPECT_EQ(Find(s.observations, 0, ObsKind::kEccSbe, "dram"), nullptr);
  EXPECT_NE(Find(s.observations, 1, ObsKind::kEccSbe, "dram"), nullptr);
  EXPECT_NE(Find(s.observations, 1, ObsKind::kRetiredPages), nullptr);
}

TEST(AmdgpuSysfs, SkipsOtherVendorsConnectorsAndNoise) {
  AmdTestEnv env;
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 0, Card(0)).ok());
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 1, Card(1)).ok());
  env.WriteFile("sys/devices/amdgpu-fake/0000:1c:00.0/vendor", "0x10de\n");  // an NVIDIA card
  std::filesystem::create_directories(env.root() + "/sys/class/drm/card0-DP-1");
  std::filesystem::create_directories(env.root() + "/sys/class/drm/renderD128");
  std::filesystem::create_directories(env.root() + "/sys/class/drm/cardX");
  AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = env.root()});
  AmdSample s = c.Sample();
  EXPECT_EQ(s.gpu_count, 1);
}

// Issue 25: 4,900 card entries in a --root tree took 351 MB; the entries read are capped.
TEST(AmdgpuSysfs, ThousandsOfCardEntriesAreCappedWithAnError) {
  AmdTestEnv env;
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 0, Card(0)).ok());
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 1, Card(1)).ok());
  const size_t entries = kMaxAmdCards + 200;
  for (size_t i = 2; i < entries; ++i) {
    std::filesystem::create_directories(env.root() + "/sys/class/drm/card" + std::to_string(i) + "/device");
  }
  RootFs root(env.root());
  FaultInjectingFs fs(root);
  std::vector<AmdError> errors;
  std::vector<std::string> notes;
  std::vector<AmdGpuReading> gpus = ReadAmdgpuSysfs(fs, errors, notes);
  EXPECT_EQ(gpus.size(), 2u);  // card0 and card1 come first in name order
  std::set<std::string> cards_read;
  for (const std::string& path : fs.reads()) {
    const size_t at = path.find("/drm/card");
    if (at != std::string::npos) cards_read.insert(path.substr(at, path.find('/', at + 5) - at));
  }
  EXPECT_LE(cards_read.size(), kMaxAmdCards);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("more than " + std::to_string(kMaxAmdCards) + " card entries"), std::string::npos)
      << errors[0].message;
}

// Issue 25: a FIFO where a RAS counter should be hung `collect amd` in open().
TEST(AmdgpuSysfs, AFifoIsAnErrorOfThatFileNotAHang) {
  AmdTestEnv env;
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 0, Card(0)).ok());
  const std::string fifo = env.root() + "/sys/devices/amdgpu-fake/0000:0c:00.0/ras/umc_err_count";
  ASSERT_TRUE(std::filesystem::remove(fifo));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = env.root()});
  auto sampling = std::async(std::launch::async, [&c] { return c.Sample(); });
  if (sampling.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "Sample() blocked on a FIFO";
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // let the stuck reader go
    if (w >= 0) ::close(w);
  }
  AmdSample s = sampling.get();
  EXPECT_EQ(s.gpu_count, 1);
  std::string all;
  for (const AmdError& e : s.errors) all += e.message + "\n";
  EXPECT_NE(all.find("umc_err_count: not a regular file"), std::string::npos) << all;
}

TEST(AmdgpuSysfs, NoTreeIsNoGpuNotACrash) {
  AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = "/nonexistent/faultline"});
  AmdSample s = c.Sample();
  EXPECT_EQ(s.gpu_count, 0);
  EXPECT_TRUE(s.observations.empty());
}

TEST(AmdgpuSysfs, CardThatVanishesIsLost) {
  AmdTestEnv env;
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 0, Card(0)).ok());
  ASSERT_TRUE(fake_amdsmi::WriteFakeAmdgpuCard(env.root(), 1, Card(1)).ok());
  AmdCollector c(nullptr, AmdOptions{.use_library = false, .sysfs_root = env.root()});
  EXPECT_EQ(c.Sample().gpu_count, 2);
  std::filesystem::remove_all(env.root() + "/sys/class/drm/card1");
  AmdSample s = c.Sample();
  EXPECT_EQ(s.gpu_count, 1);
  const Observation* lost = Find(s.observations, 1, ObsKind::kGpuLost);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->attrs.at("error"), "GPU_IS_LOST");
  EXPECT_EQ(lost->component.keys.at("bdf"), "0000:1c:00.0");
}

}  // namespace
}  // namespace faultline::amdsmi
