// `faultline ask "question"`: a question about a node answered from the agent's store
// (docs/assistant.md "Ask"). Offline by default: the isolator's diagnosis plus the top
// runbook sections in a fixed template. With --llm-url and --llm-model, an
// OpenAI-compatible model investigates through read-only tools; its proposals are only
// requests, judged against the stored diagnoses and the policy's rules, never executed.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "api/provider.h"
#include "assistant/ask.h"
#include "assistant/llm_client.h"
#include "assistant/retriever.h"
#include "assistant/tools.h"
#include "cli/collect_util.h"
#include "cli/commands.h"
#include "cli/kb_open.h"
#include "core/clock.h"
#include "core/time.h"
#include "daemon/why_slow.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct AskArgs {
  std::string question;
  std::string store = "/var/lib/faultline/faultline.db";
  std::string node;
  std::string since;
  std::string until;
  std::string llm_url;
  std::string llm_model;
  std::string llm_key_file;
  std::string llm_ca;
  double llm_timeout_s = 120;
  size_t max_steps = 8;
  int64_t max_tokens = 32'000;
  double max_seconds = 300;
  std::string kb_dir;
  std::string kb_index;
  bool json = false;
  bool no_record = false;
};

bool ParseBound(const std::string& text, int64_t now_ns, int64_t& out) {
  if (text.empty()) return true;
  auto t = ParseTimeArg(text, now_ns);
  if (!t) return false;
  out = *t;
  return true;
}

int Run(const AskArgs& args) {
  SystemClock clock;
  const int64_t now = clock.NowNs();
  assistant::AskRequest request;
  request.question = args.question;
  if (!ParseBound(args.since, now, request.since_ns) || !ParseBound(args.until, now, request.until_ns)) {
    std::cerr << "faultline ask: --since/--until take ISO 8601 times or durations like 2h\n";
    return kExitUsage;
  }
  const bool use_llm = !args.llm_url.empty() || !args.llm_model.empty();
  if (use_llm && (args.llm_url.empty() || args.llm_model.empty())) {
    std::cerr << "faultline ask: --llm-url and --llm-model go together\n";
    return kExitUsage;
  }
  if (!std::filesystem::exists(args.store)) {
    std::cerr << "faultline ask: no store at " << args.store << "\n";
    return kExitUsage;
  }
  // A model's transcript is stored with the incident; otherwise the store is only read.
  const bool record = use_llm && !args.no_record;
  StoreOptions options;
  options.read_only = !record;
  auto store = Store::Open(args.store, options);
  if (!store.ok() && record && store.status().code() == StatusCode::kPermissionDenied) {
    options.read_only = true;
    store = Store::Open(args.store, options);
  }
  if (!store.ok()) {
    std::cerr << "faultline ask: " << store.status().ToString() << "\n";
    return kExitFailure;
  }

  Store& s = **store;
  // Without --node: this host when the store has it, else the node the store heard from
  // last (a store copied from another node, or what `sim --keep` left), as `serve` does.
  std::string node = args.node;
  if (node.empty()) {
    node = HostNameOr("");
    auto latest = s.LatestDiagnosis(node);
    if (!latest.ok() || !latest->has_value()) {
      if (auto newest = api::NewestNode(s); newest.ok()) node = *newest;
    }
  }
  const OpenedKnowledgeBase kb = OpenKnowledgeBase(args.kb_dir, args.kb_index, s);
  assistant::ToolContext ctx;
  ctx.store = &s;
  ctx.node = node;
  ctx.retriever = kb.get();
  ctx.now_ns = now;
  ctx.why_slow = [&s, node](int64_t since, int64_t until) -> Result<std::vector<Diagnosis>> {
    auto a = daemon::WhySlow(s, {.node = node, .since_ns = since, .until_ns = until});
    if (!a.ok()) return a.status();
    return a->diagnoses;
  };
  assistant::Toolbox tools(ctx);
  assistant::AskOptions ask;
  ask.max_steps = args.max_steps;
  ask.max_tokens = args.max_tokens;
  ask.max_wall_ns = static_cast<int64_t>(args.max_seconds * 1e9);

  assistant::AskAnswer answer;
  if (use_llm) {
    assistant::LlmConfig config{args.llm_url, args.llm_model, args.llm_key_file, args.llm_ca};
    config.timeout_ms = static_cast<int64_t>(args.llm_timeout_s * 1000);
    auto client = assistant::OpenAiChatClient::Create(config);
    if (!client.ok()) {
      std::cerr << "faultline ask: " << client.status().message() << "\n";
      return client.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    answer = assistant::AskWithModel(**client, tools, request, ask);
  } else {
    answer = assistant::AskOffline(tools, request, ask);
  }
  if (!kb.note().empty()) answer.notes.push_back(kb.note());

  std::string stored_note;
  if (record && !options.read_only) {
    auto id = assistant::StoreTranscript(s, node, request, answer, now);
    stored_note = id.ok() ? "transcript stored with the incident as action row " + std::to_string(*id)
                          : "transcript not stored: " + id.status().message();
  } else if (record) {
    stored_note = "transcript not stored: the store is read-only here";
  }
  if (!stored_note.empty()) answer.notes.push_back(stored_note);

  if (args.json) {
    Json j = assistant::AnswerJson(answer);
    j["node"] = node;
    std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    std::cout << assistant::RenderAnswer(answer);
    // Offline answers carry their notes in the template; these came after it.
    if (answer.mode == "offline") {
      if (!kb.note().empty()) std::cout << "\nNote: " << kb.note() << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

void AddAskCommand(CliApp& app) {
  auto args = std::make_shared<AskArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "ask",
      "Ask a question about a node, answered from the agent's store.\n"
      "Offline (the default): the isolator's diagnosis - what failed, where, the evidence with its\n"
      "store ids and raw lines, what was ruled out, what the policy would do - plus the top runbook\n"
      "sections from the knowledge base. Deterministic; nothing is written.\n"
      "With --llm-url and --llm-model: an OpenAI-compatible model (llama.cpp server, vLLM, Ollama or a\n"
      "hosted API) investigates through read-only tools (diagnoses, observations, runbook search,\n"
      "why-slow). Log, BMC and runbook text reach it only as quoted data. It may propose an action,\n"
      "which is only a request: accepted when a stored diagnosis recommends exactly that action for\n"
      "that component, and even then only the remediation policy acts. Its transcript is stored with\n"
      "the incident (--no-record: not). Bounded by --max-steps, --max-tokens and --max-seconds; when\n"
      "the model fails or runs out, the offline answer is given.\n"
      "Examples:\n"
      "  faultline ask --node gpu-7 \"why is this node slow?\"\n"
      "  faultline ask --node gpu-7 --since 2h \"what changed before the job died?\"\n"
      "  faultline ask --node gpu-7 --llm-url http://127.0.0.1:8080/v1 --llm-model local \\\n"
      "      \"is it safe to return this node to service?\"\n"
      "Exit code: 0 when answered, 1 when the store could not be read, 2 for bad options or no store.");
  cmd->add_option("question", args->question, "The question, in quotes")->required();
  cmd->add_option("--store", args->store, "Agent store (default /var/lib/faultline/faultline.db)");
  cmd->add_option("--node", args->node,
                  "Node name as the agent stored it (default: this host's name, else the store's newest node)");
  cmd->add_option("--since", args->since, "Window start (ISO 8601, or a duration like 2h = 2h ago); default open");
  cmd->add_option("--until", args->until, "Window end (ISO 8601 or duration ago); default open");
  cmd->add_option("--llm-url", args->llm_url,
                  "OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (llama.cpp server); off by default");
  cmd->add_option("--llm-model", args->llm_model, "Model name the server knows");
  cmd->add_option("--llm-key-file", args->llm_key_file,
                  "File whose first line is the API key (mode 0600; never printed); none for a local server");
  cmd->add_option("--llm-ca", args->llm_ca, "PEM bundle to trust for an https --llm-url (TLS is always verified)");
  cmd->add_option("--llm-timeout", args->llm_timeout_s, "Seconds per model request (default 120)");
  cmd->add_option("--max-steps", args->max_steps, "Model replies at most (default 8)")->check(CLI::Range(1, 100));
  cmd->add_option("--max-tokens", args->max_tokens, "Tokens at most, all replies together (default 32000)")
      ->check(CLI::Range(int64_t{100}, int64_t{10'000'000}));
  cmd->add_option("--max-seconds", args->max_seconds, "Wall time at most for the model (default 300)")
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--kb", args->kb_dir, "Knowledge base directory (default /usr/share/faultline/kb, else ./kb)");
  cmd->add_option("--kb-index", args->kb_index,
                  "Keep the knowledge base's index here (updated incrementally); default: a temporary one");
  cmd->add_flag("--json", args->json, "Print one JSON object: answer, evidence, runbooks, proposals, primary, ...");
  cmd->add_flag("--no-record", args->no_record, "Do not store the model's transcript in the store");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
