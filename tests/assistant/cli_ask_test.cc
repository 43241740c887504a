// `faultline ask` through the real binary: offline over a store file filled by the agent's
// pipeline, --json, a scripted model over loopback (transcript stored, terminal escapes
// stripped), and bad options.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "assistant_fixtures.h"
#include "fake_llm_server.h"

namespace faultline::assistant {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixtures

struct Ran {
  int rc = -1;
  std::string out;
};

Ran RunFaultline(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " " + std::string(FAULTLINE_BINARY_DIR) + "/faultline " + args + " 2>&1";
  Ran r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class CliAsk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("faultline_cli_ask_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "faultline.db").string();
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    eval_ = FillStore(**store, IncidentKernelLines(), IncidentSel());
    ASSERT_TRUE(eval_.diagnosis_stored);
    ASSERT_TRUE((*store)->Close().ok());
    kb_ = std::string(FAULTLINE_SOURCE_DIR) + "/kb";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Base() const { return "ask --store " + path_ + " --node gpu-7 --kb " + kb_ + " "; }
  std::filesystem::path dir_;
  std::string path_;
  std::string kb_;
  daemon::EvaluateResult eval_;
};

TEST_F(CliAsk, OfflineAnswerFromTheStore) {
  // Its temporary knowledge-base index goes under TMPDIR and is removed afterwards.
  const std::filesystem::path tmp = dir_ / "tmp";
  std::filesystem::create_directories(tmp);
  Ran r = RunFaultline(Base() + "'why did this node fail?'", "TMPDIR=" + tmp.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
  EXPECT_NE(r.out.find("What failed: gpu_fell_off_bus"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Where: os layer, gpu/0000:3b:00.0"), std::string::npos);
  EXPECT_NE(r.out.find("[obs:"), std::string::npos);
  EXPECT_NE(r.out.find("Xid (PCI:0000:3b:00): 79"), std::string::npos);
  // The runbook sections when this build has the knowledge base; else it says so.
  const bool kb = r.out.find("[kb:runbook/gpu_fell_off_bus") != std::string::npos;
  const bool said = r.out.find("knowledge base") != std::string::npos;
  EXPECT_TRUE(kb || said) << r.out;
  // Offline answers write nothing.
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  RecordQuery q;
  auto actions = (*store)->ListActions(q);
  ASSERT_TRUE(actions.ok());
  EXPECT_TRUE(actions->rows.empty());
}

TEST_F(CliAsk, JsonAnswer) {
  Ran r = RunFaultline(Base() + "--json 'what failed?'");
  ASSERT_EQ(r.rc, 0) << r.out;
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["mode"], "offline");
  EXPECT_EQ(j["node"], "gpu-7");
  EXPECT_EQ(j["primary"]["fault_class"], "gpu_fell_off_bus");
  EXPECT_EQ(j["diagnosis_id"], eval_.diagnosis_id);
  EXPECT_FALSE(j["evidence"].empty());
  // A store with the node's diagnosis: node data, no general-guidance statement.
  EXPECT_EQ(j["node_data"], true);
  EXPECT_EQ(j["node_data_statement"], "");
  EXPECT_EQ(j["answer"].get<std::string>().find("No node data"), std::string::npos);
}

// No --store and no store at the default path (a machine without the agent): the knowledge
// base answers, and says first that it knows nothing of the node.
TEST_F(CliAsk, DefaultStoreAbsentAnswersFromTheKnowledgeBaseAndSaysSo) {
  const std::filesystem::path default_store = "/var/lib/faultline/faultline.db";
  if (std::filesystem::exists(default_store)) GTEST_SKIP() << default_store << " exists on this machine";
  const std::string base = "ask --node gpu-7 --kb " + kb_ + " ";
  Ran r = RunFaultline(base + "'what confirms that a GPU fell off the bus?'");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("No node data (no store at /var/lib/faultline/faultline.db): this is general guidance from "
                        "the knowledge base, not a diagnosis of node gpu-7.\n",
                        0),
            0u)
      << r.out;
  for (const char* diagnosis_part : {"What failed", "Evidence:", "Ruled out", "What to do", "[obs:"}) {
    EXPECT_EQ(r.out.find(diagnosis_part), std::string::npos) << diagnosis_part << "\n" << r.out;
  }
  const bool kb = r.out.find("[kb:runbook/gpu_fell_off_bus") != std::string::npos;
  const bool said = r.out.find("knowledge base") != std::string::npos;
  EXPECT_TRUE(kb || said) << r.out;
  EXPECT_NE(r.out.find("faultline ask --store P"), std::string::npos) << r.out;  // how to get a diagnosis
  EXPECT_FALSE(std::filesystem::exists(default_store));                          // never created

  Ran j = RunFaultline(base + "--json 'what confirms that a GPU fell off the bus?'");
  ASSERT_EQ(j.rc, 0) << j.out;
  Json parsed = Json::parse(j.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.out;
  EXPECT_EQ(parsed["node_data"], false);
  EXPECT_EQ(parsed["node_data_statement"].get<std::string>().rfind("No node data (no store at ", 0), 0u);
  EXPECT_EQ(parsed["answer"].get<std::string>().rfind(parsed["node_data_statement"].get<std::string>(), 0), 0u);
  EXPECT_TRUE(parsed["primary"].is_null());
  EXPECT_TRUE(parsed["diagnosis_id"].is_null());
  EXPECT_TRUE(parsed["evidence"].empty());
  EXPECT_EQ(parsed["node"], "gpu-7");
}

// A --store that does not exist is a mistake to report, not a reason to answer without it.
TEST_F(CliAsk, GivenStoreMissingIsAnError) {
  Ran r = RunFaultline("ask --store " + (dir_ / "typo.db").string() + " --node gpu-7 --kb " + kb_ + " 'q'");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("no store at " + (dir_ / "typo.db").string()), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("No node data"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "typo.db"));
  // Also when it names the default path.
  if (!std::filesystem::exists("/var/lib/faultline/faultline.db")) {
    EXPECT_EQ(RunFaultline("ask --store /var/lib/faultline/faultline.db 'q'").rc, 2);
  }
}

// A store with no rows for the node (a fresh one, or the wrong --node): the knowledge base
// answers with the statement, also to a model, whose node tools then answer so.
TEST_F(CliAsk, StoreWithoutTheNodesRowsAnswersFromTheKnowledgeBase) {
  const std::string empty = (dir_ / "empty.db").string();
  {
    auto store = Store::Open(empty);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Close().ok());
  }
  Ran r = RunFaultline("ask --store " + empty + " --node gpu-7 --kb " + kb_ + " 'why did the GPU fall off the bus?'");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("No node data (the store has no rows for node gpu-7): this is general guidance", 0), 0u)
      << r.out;
  EXPECT_EQ(r.out.find("What failed"), std::string::npos) << r.out;
  // The incident store, asked about a node it never heard from.
  Ran other = RunFaultline("ask --store " + path_ + " --node gpu-8 --kb " + kb_ + " --json 'what failed?'");
  ASSERT_EQ(other.rc, 0) << other.out;
  Json j = Json::parse(other.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << other.out;
  EXPECT_EQ(j["node_data"], false);
  EXPECT_NE(j["node_data_statement"].get<std::string>().find("no rows for node gpu-8"), std::string::npos);
  EXPECT_TRUE(j["primary"].is_null());
  EXPECT_TRUE(j["evidence"].empty());

  FakeLlmServer server([](const Json&, size_t i) {
    if (i == 0) return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}}), 0};
    return ScriptedReply{200, TextReply("In general, a GPU that fell off the bus needs a drain and a reboot."), 0};
  });
  Ran m = RunFaultline("ask --store " + empty + " --node gpu-7 --kb " + kb_ + " --no-record --llm-url " +
                       server.BaseUrl() + " --llm-model scripted 'what failed?'");
  ASSERT_EQ(m.rc, 0) << m.out;
  EXPECT_EQ(m.out.rfind("No node data (the store has no rows for node gpu-7)", 0), 0u) << m.out;
  EXPECT_NE(m.out.find("In general, a GPU that fell off the bus"), std::string::npos) << m.out;
  auto bodies = server.Bodies();
  ASSERT_EQ(bodies.size(), 2u);
  const Json first = Json::parse(bodies[0]);
  EXPECT_NE(first["messages"][0]["content"].get<std::string>().find("no data about this node here"), std::string::npos);
  const Json second = Json::parse(bodies[1]);
  const Json tool = Json::parse(second["messages"].back()["content"].get<std::string>());
  EXPECT_EQ(tool["ok"], false);
  EXPECT_NE(tool["error"].get<std::string>().find("no node data"), std::string::npos) << tool;
}

TEST_F(CliAsk, WithAScriptedModelTheTranscriptIsStored) {
  FakeLlmServer server([](const Json&, size_t i) {
    if (i == 0) return ScriptedReply{200, ToolCallsReply({{"get_diagnoses", "{}"}}), 0};
    return ScriptedReply{200, TextReply("GPU 0000:3b:00.0 fell off the bus.\x1b[2J\x1b]0;owned\x07 Drain it."), 0};
  });
  Ran r = RunFaultline(Base() + "--llm-url " + server.BaseUrl() + " --llm-model scripted 'what failed?'");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("fell off the bus."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);  // terminal escapes stripped
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_NE(r.out.find("transcript stored with the incident"), std::string::npos) << r.out;
  EXPECT_EQ(server.Bodies().size(), 2u);
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  RecordQuery q;
  auto actions = (*store)->ListActions(q);
  ASSERT_TRUE(actions.ok());
  ASSERT_EQ(actions->rows.size(), 1u);
  EXPECT_EQ(actions->rows[0].value.attrs.at("kind"), "assistant_transcript");
  EXPECT_EQ(actions->rows[0].value.diagnosis_id, eval_.diagnosis_id);
  // --no-record leaves the store alone.
  ASSERT_TRUE((*store)->Close().ok());
  FakeLlmServer again([](const Json&, size_t) { return ScriptedReply{200, TextReply("ok"), 0}; });
  Ran r2 = RunFaultline(Base() + "--no-record --llm-url " + again.BaseUrl() + " --llm-model m 'q'");
  ASSERT_EQ(r2.rc, 0) << r2.out;
  auto reopened = Store::Open(path_);
  ASSERT_TRUE(reopened.ok());
  auto after = (*reopened)->ListActions(q);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->rows.size(), 1u);
}

// Issue 25: a key the model echoed was printed and stored with the transcript.
TEST_F(CliAsk, AKeyTheModelEchoesIsNeitherPrintedNorStored) {
  const std::string key = (dir_ / "key").string();
  std::ofstream(key) << "sk-cli-echo-31337\n";
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  FakeLlmServer server([](const Json&, size_t i) {
    if (i == 0) return ScriptedReply{200, ToolCallsReply({{"search_kb", R"({"query":"sk-cli-echo-31337"})"}}), 0};
    return ScriptedReply{200, TextReply("Done. Your key is sk-cli-echo-31337."), 0};
  });
  Ran r = RunFaultline(Base() + "--llm-url " + server.BaseUrl() + " --llm-model m --llm-key-file " + key + " 'q'");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("sk-cli-echo-31337"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Your key is [redacted]."), std::string::npos) << r.out;
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  auto actions = (*store)->ListActions(RecordQuery{});
  ASSERT_TRUE(actions.ok());
  ASSERT_EQ(actions->rows.size(), 1u);
  const auto& row = actions->rows[0].value;
  EXPECT_EQ(row.reason.find("sk-cli-echo-31337"), std::string::npos) << row.reason;
  for (const auto& [name, value] : row.attrs) EXPECT_EQ(value.find("sk-cli-echo-31337"), std::string::npos) << name;
  EXPECT_NE(row.attrs.at("transcript").find("[redacted]"), std::string::npos);
}

TEST_F(CliAsk, BadOptions) {
  EXPECT_EQ(RunFaultline(Base() + "--llm-url http://127.0.0.1:1/v1 'q'").rc, 2);  // no --llm-model
  EXPECT_EQ(RunFaultline(Base() + "--llm-url ftp://x --llm-model m 'q'").rc, 2);
  EXPECT_EQ(RunFaultline(Base() + "--since yesterdayish 'q'").rc, 2);
  EXPECT_EQ(RunFaultline("ask --store " + (dir_ / "absent.db").string() + " 'q'").rc, 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "absent.db"));
  EXPECT_EQ(RunFaultline("ask --store " + path_).rc, 2);  // no question
  Ran help = RunFaultline("ask --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--llm-url"), std::string::npos);
  EXPECT_NE(help.out.find("only a request"), std::string::npos);
}

}  // namespace
}  // namespace faultline::assistant
