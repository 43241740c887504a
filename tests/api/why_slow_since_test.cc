// `faultline why-slow --since 2m` and GET /api/v1/why-slow?since=2m read the same window of
// the same store: a duration counts back from the node's newest stored observation in both
// (docs/api.md), so an old store is answered as it was; --wall-clock counts from now.
#include <gtest/gtest.h>

#include "api_fixture.h"
#include "faultline_process.h"
#include "run_faultline.h"

namespace faultline::api_test {
namespace {

class ApiWhySlowSince : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(FAULTLINE_BINARY_DIR) + "/faultline")) {
      GTEST_SKIP() << "faultline CLI not built";
    }
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok());
    (void)FillIncident(**store);  // 2025-11-29, long before the wall clock
  }
  testing_cli::RunResult Cli(const std::string& args) {
    return testing_cli::Faultline("why-slow --node " + kNode + " --store " + path_ + " " + args);
  }
  TempDir dir_;
  std::string path_ = dir_.File("store.db");
};

TEST_F(ApiWhySlowSince, ADurationMeansTheSameWindowInTheCliAndTheApi) {
  FaultlineProcess serve({"serve", "--store", path_, "--listen", "127.0.0.1:0"}, dir_.File("serve.log"));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  httplib::Client client("127.0.0.1", serve.port());
  auto api = client.Get("/api/v1/why-slow?since=2m");
  ASSERT_TRUE(api);
  ASSERT_EQ(api->status, 200) << api->body;
  const auto cli = Cli("--since 2m --json");
  ASSERT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  const Json from_api = Json::parse(api->body);
  EXPECT_NE(from_api["status"], "unknown") << api->body;  // the store's last two minutes hold the incident
  EXPECT_EQ(from_api, Json::parse(cli.out));
  EXPECT_EQ(serve.Stop(), 0);
}

TEST_F(ApiWhySlowSince, TheTextSaysWhatADurationCountsFrom) {
  const auto r = Cli("--since 2m");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("durations count back from the node's newest stored observation, 2025-11-29T10:01:01"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu_fell_off_bus"), std::string::npos) << r.out;
}

TEST_F(ApiWhySlowSince, WallClockCountsFromNowAndFindsNothingInAnOldStore) {
  const auto r = Cli("--since 2m --wall-clock");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no data for node " + kNode), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("durations count back"), std::string::npos) << r.out;
}

TEST_F(ApiWhySlowSince, SinceAfterUntilIsRefusedAsTheApiRefusesIt) {
  const auto r = Cli("--since 1m --until 5m");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--since: since is after until"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace faultline::api_test
