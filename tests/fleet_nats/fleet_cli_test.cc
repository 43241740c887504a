// `faultline fleet` as an operator runs it, against a real nats-server on loopback.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "fleet/wire.h"
#include "nats_server.h"
#include "sim/fleet/fleet_bench.h"
#include "sim/fleet/fleet_nats.h"

namespace faultline::fleet::nats {
namespace {

using testing::ConnectOrFail;
using testing::NatsServer;
using testing::OptionsFor;
using testing::TempDir;

constexpr int64_t kSec = 1'000'000'000;

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Ran RunFleet(const TempDir& dir, const std::string& args) {
  const std::string out = dir.File("out.txt");
  const std::string err = dir.File("err.txt");
  const std::string cmd = std::string(FAULTLINE_BINARY_DIR) + "/faultline fleet " + args + " > " + out + " 2> " + err;
  const int st = std::system(cmd.c_str());
  Ran r;
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

const char* kTopology = R"({"site": "lab", "nodes": [
  {"name": "n1", "rack": "r1", "pdu": "pdu-a"}, {"name": "n2", "rack": "r1", "pdu": "pdu-a"},
  {"name": "n3", "rack": "r1", "pdu": "pdu-a"}, {"name": "n4", "rack": "r2", "pdu": "pdu-b"}]})";

Envelope PowerDiagnosis(const std::string& node, int64_t t) {
  Envelope e;
  e.kind = RecordKind::kDiagnosis;
  e.place = {"lab", "r1", node};
  e.row_id = 1;
  e.msg_id = node + "/diagnosis/1";
  Diagnosis d;
  d.fault_class = FaultClass::kPowerSupply;
  d.layer = Layer::kOob;
  d.component = ComponentRef{ComponentType::kPsu, "2", {}};
  d.action = Action::kRma;
  d.confidence = 0.8;
  d.first_ns = t;
  d.last_ns = t + kSec;
  d.summary = "PSU 2 lost input";
  e.diagnosis = d;
  return e;
}

class FleetCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    if (::access((std::string(FAULTLINE_BINARY_DIR) + "/faultline").c_str(), X_OK) != 0) {
      GTEST_SKIP() << "faultline not built";
    }
    server_ = std::make_unique<NatsServer>(dir_.File("srv"), "s1");
    ASSERT_TRUE(server_->Start());
    std::ofstream(dir_.File("fleet.json")) << kTopology;
  }
  std::string Base() const {
    return "--nats " + server_->url() + " --topology " + dir_.File("fleet.json") +
           " --instance test --max-bytes 268435456";
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
};

TEST_F(FleetCliTest, OnceFindsTheSharedPduThenARerunRestoresAndRepeatsNothing) {
  // The stream as the first run creates it; the agents' diagnoses published before it.
  Ran first = RunFleet(dir_, Base() + " --once --json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(first.out.empty()) << first.out;
  auto c = ConnectOrFail(OptionsFor({server_->url()}));
  ASSERT_NE(c, nullptr);
  const int64_t now = static_cast<int64_t>(::time(nullptr)) * kSec;
  for (const char* node : {"n1", "n2", "n3"}) {
    Envelope e = PowerDiagnosis(node, now - 20 * kSec);
    ASSERT_TRUE(c->Publish(Subject(e.place, e.kind), Encode(e), e.msg_id).ok());
  }
  ASSERT_TRUE(c->Publish("faultline.lab.r1.n1.obs", "garbage", "garbage").ok());

  // With a webhook but no --act: the one shared cause is a dry run that names it (and
  // nothing is contacted).
  Ran second = RunFleet(dir_, Base() + " --once --json --webhook-url https://127.0.0.1:9/fleet-hook");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("dry run: would post webhook for pdu pdu/pdu-a (3 node(s)"), std::string::npos)
      << second.err;
  std::istringstream lines(second.out);
  std::string line;
  int diagnoses = 0;
  while (std::getline(lines, line)) {
    auto j = Json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    EXPECT_EQ(j.value("component", ""), "pdu/pdu-a");
    EXPECT_EQ(j.value("cause", ""), "pdu");
    ++diagnoses;
  }
  EXPECT_EQ(diagnoses, 1) << second.out;
  EXPECT_NE(second.err.find("1 malformed"), std::string::npos) << second.err;

  Ran third = RunFleet(dir_, Base() + " --once");
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_NE(third.err.find("state restored"), std::string::npos) << third.err;
  EXPECT_TRUE(third.out.empty()) << "nothing new after a restart: " << third.out;
}

// An operator's stream (1-hour max age) met by `faultline fleet` without a flag for it: kept,
// and the difference is printed as a warning (issue 25: settings silently reset).
TEST_F(FleetCliTest, AnExistingStreamKeepsItsSettingsAndTheDifferenceIsWarnedAbout) {
  auto c = ConnectOrFail(OptionsFor({server_->url()}));
  ASSERT_NE(c, nullptr);
  StreamConfig mine;
  mine.max_age_ns = 3600 * kSec;
  mine.max_bytes = 128 << 20;
  ASSERT_TRUE(c->EnsureStream(mine).ok());
  Ran run = RunFleet(dir_, Base() + " --once");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto st = c->GetStream("FAULTLINE");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->config.max_age_ns, 3600 * kSec) << "reset to the default";
  EXPECT_NE(run.err.find("warning: stream FAULTLINE: max age"), std::string::npos) << run.err;
  // --max-bytes was given: that one is changed, as asked.
  EXPECT_EQ(st->config.max_bytes, int64_t{268435456});
}

// `sim fleet --nats` then `faultline fleet --once` (issue 25: 0 diagnoses, and an exit after a
// few hundred messages): every published message is taken and the scenario's shared causes
// are found, though its data is days older than the wall clock.
TEST_F(FleetCliTest, OnceAfterASimulatedFleetTakesEveryMessageAndFindsItsCauses) {
  auto c = ConnectOrFail(OptionsFor({server_->url()}));
  ASSERT_NE(c, nullptr);
  StreamConfig small;
  small.max_bytes = 256 << 20;  // what the test server can reserve
  ASSERT_TRUE(c->EnsureStream(small).ok());
  sim::FleetBenchSpec spec;
  spec.nodes = 48;
  spec.duration_s = 900;
  const sim::FleetScenario sc = sim::GenerateBenchFleet(spec);
  ASSERT_FALSE(sc.truth.causes.empty());
  ASSERT_LT(sc.start_ns + int64_t{3600} * kSec, static_cast<int64_t>(::time(nullptr)) * kSec)
      << "the scenario's clock must lie well behind the wall clock for this test";
  sim::FleetNatsPublishOptions po;
  po.urls = server_->url();
  auto published = sim::PublishFleetScenario(sc, po);
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ASSERT_EQ(published->failed, 0u);
  std::ofstream(dir_.File("sim.json")) << sim::FleetTopologyJson(sc.topology);

  Ran run = RunFleet(dir_, "--nats " + server_->url() + " --topology " + dir_.File("sim.json") +
                               " --instance test --max-bytes 268435456 --once --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find(std::to_string(published->messages) + " ingested"), std::string::npos)
      << published->messages << " published; " << run.err;
  std::istringstream lines(run.out);
  std::string line;
  int shared = 0;
  while (std::getline(lines, line)) {
    auto j = Json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    shared += j.value("cause", "") != "straggler" ? 1 : 0;
  }
  EXPECT_GE(shared, 1) << run.err;
}

TEST_F(FleetCliTest, BadArgumentsAndAnAbsentServerHaveTheirExitCodes) {
  std::ofstream(dir_.File("bad.json")) << R"({"nodes": [{"name": "n1", "rak": "r1"}]})";
  Ran bad = RunFleet(dir_, "--nats " + server_->url() + " --topology " + dir_.File("bad.json") + " --once");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("rak"), std::string::npos) << bad.err;
  Ran missing = RunFleet(dir_, "--nats " + server_->url() + " --topology " + dir_.File("absent.json") + " --once");
  EXPECT_EQ(missing.exit_code, 2);
  Ran plain = RunFleet(dir_, Base() + " --once --webhook-url http://127.0.0.1:9/hook");
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_NE(plain.err.find("--webhook-url"), std::string::npos) << plain.err;
  std::ofstream(dir_.File("open.key")) << "s3cret-hmac\n";
  ::chmod(dir_.File("open.key").c_str(), 0644);
  Ran open_key = RunFleet(
      dir_, Base() + " --once --webhook-url https://127.0.0.1:9/hook --webhook-secret-file " + dir_.File("open.key"));
  EXPECT_EQ(open_key.exit_code, 2);
  EXPECT_EQ(open_key.err.find("s3cret-hmac"), std::string::npos) << "the secret is never printed";
  const int port = testing::FreeLoopbackPort();
  Ran down = RunFleet(
      dir_, "--nats nats://127.0.0.1:" + std::to_string(port) + " --topology " + dir_.File("fleet.json") + " --once");
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("unavailable"), std::string::npos) << down.err;
  Ran usage = RunFleet(dir_, "--topology " + dir_.File("fleet.json"));
  EXPECT_EQ(usage.exit_code, 2);
}

}  // namespace
}  // namespace faultline::fleet::nats
