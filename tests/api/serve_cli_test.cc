// `faultline serve` as an operator runs it: the real binary over a stored incident, on a
// free loopback port, stopped by SIGTERM; its answers equal the CLI's --json.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "api_fixture.h"
#include "faultline_process.h"

namespace faultline::api_test {
namespace {


std::string RunFaultline(const std::string& args, int* exit_code = nullptr) {
  FILE* p = popen((std::string(FAULTLINE_BINARY_DIR) + "/faultline " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  if (exit_code != nullptr) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A running `faultline serve` over `store` on a free loopback port.
FaultlineProcess ServeProcess(const std::string& store, const std::string& log, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"serve", "--store", store, "--listen", "127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return FaultlineProcess(std::move(args), log);
}

TEST(ApiServeCli, ServesAStoredIncidentLikeTheCli) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    FillIncident(**store);
  }
  FaultlineProcess serve = ServeProcess(path, dir.File("serve.log"), {"--verbose"});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  httplib::Client client("127.0.0.1", serve.port());
  auto why = client.Get("/api/v1/why-slow?since=2025-11-29T09:59:00Z");
  ASSERT_TRUE(why);
  ASSERT_EQ(why->status, 200);
  int rc = -1;
  const std::string cli =
      RunFaultline("why-slow --json --node " + kNode + " --since 2025-11-29T09:59:00Z --store " + path, &rc);
  ASSERT_EQ(rc, 0) << cli;
  EXPECT_EQ(Json::parse(why->body), Json::parse(cli));
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("faultline_diagnosis_info{"), std::string::npos);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  // Without --token-file the mutating route is off.
  auto ack = client.Post("/api/v1/diagnoses/2/ack", "{}", "application/json");
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->status, 403);
  EXPECT_EQ(serve.Stop(), 0);
  EXPECT_NE(serve.Log().find("api: GET /metrics 200"), std::string::npos) << serve.Log();
}

// --kb: POST /api/v1/ask cites the knowledge base given on the command line; the temporary
// index is gone once serve stops.
TEST(ApiServeCli, AskCitesTheKnowledgeBaseGivenWithKb) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok());
    FillIncident(**store);
  }
  const std::string kb = dir.File("kb");
  std::filesystem::create_directories(kb + "/runbooks");
  std::ofstream(kb + "/runbooks/offbus.md")
      << "---\nkind: runbook\nclass: gpu_fell_off_bus\ncodes: xid:79\n---\n# Lost GPU on the bus\n\n"
         "## Steps for the bench\nPower-cycle the sled and check the riser seating twice.\n";
  const std::string index = dir.File("kb-index");
  FaultlineProcess serve = ServeProcess(path, dir.File("serve.log"), {"--kb", kb, "--kb-index", index});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  httplib::Client client("127.0.0.1", serve.port());
  auto r = client.Post("/api/v1/ask", R"({"question":"why did the GPU go away?"})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("runbook/offbus#steps-for-the-bench"), std::string::npos) << r->body;
  EXPECT_EQ(serve.Stop(), 0);
  EXPECT_TRUE(std::filesystem::is_directory(index)) << "--kb-index keeps the index";
}

TEST(ApiServeCli, ServesTheStoreAnAgentIsWriting) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  auto writer = Store::Open(path);
  ASSERT_TRUE(writer.ok());
  FillIncident(**writer);
  FaultlineProcess serve = ServeProcess(path, dir.File("serve.log"));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  httplib::Client client("127.0.0.1", serve.port());
  const int64_t before = Json::parse(client.Get("/api/v1/node")->body)["store"]["observations"];
  std::vector<Observation> more;
  for (int i = 0; i < 25; ++i) {
    more.push_back(Reading(ObsKind::kPower, Layer::kGpu, Source::kNvml, Gpu(i % 8), 500, kT0 + 200 * kSec + i, {}));
  }
  ASSERT_TRUE((*writer)->Append(more).ok());
  auto after = client.Get("/api/v1/node");
  ASSERT_TRUE(after);
  EXPECT_EQ(Json::parse(after->body)["store"]["observations"], before + 25);
  EXPECT_EQ(Json::parse(after->body)["now_ns"], kT0 + 200 * kSec + 24);  // the newest row written
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ApiServeCli, BadOptionsAndHelp) {
  TempDir dir;
  int rc = -1;
  const std::string help = RunFaultline("serve --help", &rc);
  EXPECT_EQ(rc, 0);
  for (const char* word : {"--store", "--listen", "--token-file", "--cert", "/metrics", "docs/api.md"}) {
    EXPECT_NE(help.find(word), std::string::npos) << word;
  }
  RunFaultline("serve --store " + dir.File("missing.db"), &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.File("missing.db")));  // never created
  {
    auto store = Store::Open(dir.File("s.db"));
    ASSERT_TRUE(store.ok());
    FillIncident(**store);
  }
  const std::string off = RunFaultline("serve --store " + dir.File("s.db") + " --listen 0.0.0.0:0", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(off.find("--token-file"), std::string::npos) << off;
  RunFaultline("serve --store " + dir.File("s.db") + " --token-file " + dir.File("no-token"), &rc);
  EXPECT_EQ(rc, 2);
  RunFaultline("serve --store " + dir.File("s.db") + " --metrics-window banana", &rc);
  EXPECT_EQ(rc, 2);
}

}  // namespace
}  // namespace faultline::api_test
