// rma_bundle / facility_ticket decisions through the Actuator interface (bundle_actuator.h):
// the file written per decision, Observe on complete, missing and damaged files, the
// refusals, and the file names made from hostile decision keys.
#include "actions/bundle_actuator.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "actions/tar.h"
#include "core/time.h"
#include "store/store.h"

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = int64_t{1'767'300'000} * kNsPerSec;
constexpr char kNode[] = "gpu-node-7";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void Spit(const fs::path& p, const std::string& data) { std::ofstream(p, std::ios::binary | std::ios::trunc) << data; }

Diagnosis HbmDiagnosis() {
  Diagnosis d;
  d.fault_class = FaultClass::kHbmUncorrectable;
  d.layer = Layer::kGpu;
  d.component = {ComponentType::kGpu, "3", {{"index", "3"}, {"serial", "1322021000457"}, {"bdf", "0000:3b:00.0"}}};
  d.action = Action::kRma;
  d.severity = Severity::kFatal;
  d.first_ns = kT0;
  d.last_ns = kT0 + 60 * kNsPerSec;
  d.summary = "GPU 3: uncorrectable HBM error";
  return d;
}

Diagnosis CoolantDiagnosis() {
  Diagnosis d;
  d.fault_class = FaultClass::kCoolantLeak;
  d.layer = Layer::kOob;
  d.component = {ComponentType::kCoolant, "loop1", {{"rack", "R14"}}};
  d.action = Action::kFacilityTicket;
  d.severity = Severity::kCritical;
  d.first_ns = kT0;
  d.last_ns = kT0 + 60 * kNsPerSec;
  d.summary = "coolant leak detected on loop1";
  return d;
}

class BundleActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("bundle_actuator_" + std::to_string(getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto s = Store::Open((dir_ / "faultline.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    options_.dir = (dir_ / "out" / "bundles").string();
    options_.clock = &clock_;
  }

  Decision Put(const Diagnosis& diag, ActionClass c) {
    auto id = store_->PutDiagnosis(kNode, diag, diag.last_ns);
    EXPECT_TRUE(id.ok());
    Decision d;
    d.key = std::string(kNode) + "|" + std::string(ToString(c)) + "|" + std::string(ToString(diag.fault_class)) + "|" +
            diag.component.Id() + "|" + std::to_string(diag.first_ns);
    d.node = d.target_node = kNode;
    d.action_class = c;
    d.diagnosis_id = id.ok() ? *id : 0;
    d.diagnosis = diag;
    return d;
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
  BundleActuatorOptions options_;
  FakeClock clock_{kT0 + 3600 * kNsPerSec, 0};
};

TEST_F(BundleActuatorTest, RmaDecisionWritesOneCompleteBundleNamedByTheKey) {
  BundleActuator bundles(*store_, options_);
  EXPECT_TRUE(bundles.Handles(ActionClass::kRmaBundle));
  EXPECT_TRUE(bundles.Handles(ActionClass::kFacilityTicket));
  EXPECT_FALSE(bundles.Handles(ActionClass::kDrain));
  const Decision d = Put(HbmDiagnosis(), ActionClass::kRmaBundle);
  EXPECT_EQ(*bundles.Observe(d), Observed::kNotInEffect);
  ASSERT_TRUE(bundles.Apply(d).ok());
  const fs::path path = bundles.PathFor(d);
  EXPECT_EQ(path.parent_path(), fs::path(options_.dir));
  EXPECT_EQ(path.filename().string(), BundleFileName(d));
  EXPECT_EQ(path.filename().string().rfind("gpu-node-7_rma_bundle_hbm_uncorrectable_gpu_3_", 0), 0u);
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(options_.dir).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(*bundles.Observe(d), Observed::kInEffect);
  // The system's tar opens it and finds the vendor's summary naming the part.
  const fs::path x = dir_ / "x";
  fs::create_directories(x);
  ASSERT_EQ(std::system(("tar -xzf '" + path.string() + "' -C '" + x.string() + "'").c_str()), 0);
  EXPECT_NE(Slurp(x / "summary.md").find("1322021000457"), std::string::npos);

  // Applied again (retry, restart): the file is not rewritten.
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  clock_.Advance(600 * kNsPerSec);
  ASSERT_TRUE(bundles.Apply(d).ok());
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(std::distance(fs::directory_iterator(options_.dir), fs::directory_iterator()), 1);
}

TEST_F(BundleActuatorTest, FacilityTicketForALeakAndNoGpuRmaForIt) {
  BundleActuator bundles(*store_, options_);
  const Decision ticket = Put(CoolantDiagnosis(), ActionClass::kFacilityTicket);
  ASSERT_TRUE(bundles.Apply(ticket).ok());
  EXPECT_EQ(*bundles.Observe(ticket), Observed::kInEffect);
  Decision rma = ticket;
  rma.action_class = ActionClass::kRmaBundle;
  rma.key = "gpu-node-7|rma_bundle|coolant_leak|coolant/loop1|" + std::to_string(kT0);
  Status refused = bundles.Apply(rma);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
  EXPECT_FALSE(fs::exists(bundles.PathFor(rma)));
  EXPECT_EQ(*bundles.Observe(rma), Observed::kNotInEffect);

  Decision missing = Put(HbmDiagnosis(), ActionClass::kRmaBundle);
  missing.diagnosis_id = 999'999;
  EXPECT_EQ(bundles.Apply(missing).code(), StatusCode::kNotFound);
  EXPECT_EQ(bundles.Apply(Put(HbmDiagnosis(), ActionClass::kWebhook)).code(), StatusCode::kUnsupported);
}

// The plan returns a PSU that failed with its input normal: the decision is the warrant, so the
// bundle names the PSU (the fault class alone would have sent it to facilities).
TEST_F(BundleActuatorTest, ThePlansPsuRmaIsWrittenForThePsu) {
  BundleActuator bundles(*store_, options_);
  Diagnosis psu;
  psu.fault_class = FaultClass::kPowerSupply;
  psu.layer = Layer::kOob;
  psu.component = {ComponentType::kPsu, "PSU2", {{"serial", "PSU-SN-04418"}}};
  psu.action = Action::kRma;
  psu.severity = Severity::kCritical;
  psu.first_ns = kT0;
  psu.last_ns = kT0 + 60 * kNsPerSec;
  psu.summary = "PSU2 predictive failure";
  Decision d = Put(psu, ActionClass::kRmaBundle);
  d.rule = "physical_part_rma";
  ASSERT_TRUE(bundles.Apply(d).ok());
  const fs::path x = dir_ / "x";
  fs::create_directories(x);
  ASSERT_EQ(std::system(("tar -xzf '" + bundles.PathFor(d) + "' -C '" + x.string() + "'").c_str()), 0);
  const std::string md = Slurp(x / "summary.md");
  EXPECT_NE(md.find("# RMA evidence: Power supply psu/PSU2"), std::string::npos) << md;
  EXPECT_NE(md.find("| Serial number | PSU-SN-04418 |"), std::string::npos);
  EXPECT_NE(md.find("(rule physical_part_rma)"), std::string::npos);
  EXPECT_NE(md.find("| Firmware version | not recorded |"), std::string::npos);
}

TEST_F(BundleActuatorTest, ADamagedBundleIsNotInEffectAndIsReplaced) {
  BundleActuator bundles(*store_, options_);
  const Decision d = Put(HbmDiagnosis(), ActionClass::kRmaBundle);
  ASSERT_TRUE(bundles.Apply(d).ok());
  const std::string good = Slurp(bundles.PathFor(d));
  for (const std::string& bad : {good.substr(0, good.size() / 2), good.substr(0, good.size() - 4), std::string(),
                                 std::string("PK\x03\x04 not a gzip"), good + "trailing"}) {
    Spit(bundles.PathFor(d), bad);
    EXPECT_EQ(*bundles.Observe(d), Observed::kNotInEffect) << bad.size();
    ASSERT_TRUE(bundles.Apply(d).ok());
    EXPECT_EQ(*bundles.Observe(d), Observed::kInEffect);
  }
}

TEST(CheckTarGz, AcceptsOnlyACompleteGzippedTar) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("targz_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto tar = MakeTar({{"a.txt", "hello"}}, 1'767'300'000);
  ASSERT_TRUE(tar.ok());
  auto gz = Gzip(*tar);
  ASSERT_TRUE(gz.ok());
  Spit(dir / "ok.tar.gz", *gz);
  EXPECT_TRUE(CheckTarGz((dir / "ok.tar.gz").string()).ok());
  EXPECT_EQ(CheckTarGz((dir / "absent.tar.gz").string()).code(), StatusCode::kNotFound);
  EXPECT_EQ(CheckTarGz(dir.string()).code(), StatusCode::kNotFound);  // a directory is no bundle

  const std::pair<std::string, std::string> cases[] = {
      {"cut.tar.gz", gz->substr(0, gz->size() - 9)},
      {"flipped.tar.gz",
       [&] {
         std::string s = *gz;
         s[s.size() - 6] ^= 0x5a;  // the CRC-32 of the trailer
         return s;
       }()},
      {"notar.tar.gz", *Gzip("just some text, not 512-byte blocks")},
      {"noend.tar.gz", *Gzip(tar->substr(0, 512 * 2))},  // header + data, no end-of-archive blocks
      {"twice.tar.gz", *gz + *gz},
  };
  for (const auto& [name, data] : cases) {
    Spit(dir / name, data);
    Status s = CheckTarGz((dir / name).string());
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << name << ": " << s.ToString();
  }
  // A bomb: more unpacked than allowed.
  Spit(dir / "big.tar.gz", *Gzip(std::string(1 << 20, '\0')));
  EXPECT_TRUE(CheckTarGz((dir / "big.tar.gz").string()).ok());
  EXPECT_EQ(CheckTarGz((dir / "big.tar.gz").string(), 64 << 10).code(), StatusCode::kCorrupt);
}

TEST(BundleFileName, HostileKeysMakeSafeDistinctBoundedNames) {
  std::set<std::string> names;
  const std::vector<std::string> keys = {
      "gpu-node-7|rma_bundle|hbm_uncorrectable|gpu/3|1767300000000000000",
      "gpu-node-7_rma_bundle_hbm_uncorrectable_gpu_3_1767300000000000000",  // reads alike once made safe
      "../../etc/cron.d/x",
      "",
      ".",
      "..",
      ".hidden",
      std::string(300, 'a'),
      std::string(300, 'a') + "b",  // same first 160 bytes
      std::string("nul\0byte", 8),
      "space and \xc3\xa9\n newline",
  };
  for (const std::string& key : keys) {
    Decision d;
    d.key = key;
    const std::string name = BundleFileName(d);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_LE(name.size(), 200u);
    EXPECT_NE(name.front(), '.');
    EXPECT_EQ(name.find('/'), std::string::npos);
    EXPECT_EQ(name.find('\0'), std::string::npos);
    EXPECT_EQ(name.substr(name.size() - 7), ".tar.gz");
    for (char c : name) {
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') << name;
    }
    Decision again;
    again.key = key;
    EXPECT_EQ(BundleFileName(again), name);  // stable: the same decision finds its file
  }
}

}  // namespace
}  // namespace faultline::actions
