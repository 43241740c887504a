// `faultline ask "question"`: a question about a node answered from the agent's store
// (docs/assistant.md "Ask"). Offline by default: the isolator's diagnosis plus the top
// runbook sections in a fixed template. Without the default store (or with a store holding
// nothing of the node) the answer is the knowledge base's general guidance, and says so
// first; a --store that names a missing file is an error, never that fallback. With
// --llm-url and --llm-model, an OpenAI-compatible model investigates through read-only
// tools; its proposals are only requests, judged against the stored diagnoses and the
// policy's rules, never executed.
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

constexpr char kDefaultStore[] = "/var/lib/faultline/faultline.db";

struct AskArgs {
  std::string question;
  std::string store = kDefaultStore;
  bool store_given = false;  // --store on the command line: its absence is an error
  std::string node;
  std::string since;
  std::string until;
  std::string llm_url;
  std::string llm_model;
  std::string llm_key_file;
  std::string llm_ca;
  bool llm_allow_http = false;
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
  // A named store that is not there is a typo or a wrong node, never a quiet kb-only answer;
  // only the default path may be absent (a machine without the agent).
  const bool have_store = std::filesystem::exists(args.store);
  if (!have_store && args.store_given) {
    std::cerr << "faultline ask: no store at " << args.store
              << " (leave --store out to ask the knowledge base alone when the agent's store is absent)\n";
    return kExitUsage;
  }
  // A model's transcript is stored with the incident; otherwise the store is only read.
  const bool record = use_llm && !args.no_record && have_store;
  StoreOptions options;
  options.read_only = !record;
  std::unique_ptr<Store> opened;
  if (have_store) {
    auto store = Store::Open(args.store, options);
    if (!store.ok() && record && store.status().code() == StatusCode::kPermissionDenied) {
      options.read_only = true;
      store = Store::Open(args.store, options);
    }
    if (!store.ok()) {
      std::cerr << "faultline ask: " << store.status().ToString() << "\n";
      return kExitFailure;
    }
    opened = std::move(store).value();
  }
  Store* s = opened.get();

  // Without --node: this host when the store has it, else the node the store heard from
  // last (a store copied from another node, or what `sim --keep` left), as `serve` does.
  std::string node = args.node;
  if (node.empty()) {
    node = HostNameOr("");
    if (s != nullptr) {
      auto latest = s->LatestDiagnosis(node);
      if (!latest.ok() || !latest->has_value()) {
        if (auto newest = api::NewestNode(*s); newest.ok()) node = *newest;
      }
    }
  }
  // The knowledge base also indexes the store's resolved incidents; without a store there
  // are none, and an empty in-memory store says exactly that.
  std::unique_ptr<Store> no_incidents;
  if (s == nullptr) {
    auto empty = Store::Open(":memory:");
    if (!empty.ok()) {
      std::cerr << "faultline ask: " << empty.status().ToString() << "\n";
      return kExitFailure;
    }
    no_incidents = std::move(empty).value();
  }
  const OpenedKnowledgeBase kb = OpenKnowledgeBase(args.kb_dir, args.kb_index, s != nullptr ? *s : *no_incidents);
  assistant::ToolContext ctx;
  ctx.store = s;  // null: the tools that read the node say "no store"
  ctx.node = node;
  ctx.retriever = kb.get();
  ctx.now_ns = now;
  if (s == nullptr) {
    ctx.no_store_reason = "no store at " + args.store;
  } else {
    ctx.why_slow = [s, node](int64_t since, int64_t until) -> Result<std::vector<Diagnosis>> {
      auto a = daemon::WhySlow(*s, {.node = node, .since_ns = since, .until_ns = until});
      if (!a.ok()) return a.status();
      return a->diagnoses;
    };
  }
  assistant::Toolbox tools(ctx);
  assistant::AskOptions ask;
  ask.max_steps = args.max_steps;
  ask.max_tokens = args.max_tokens;
  ask.max_wall_ns = static_cast<int64_t>(args.max_seconds * 1e9);

  assistant::AskAnswer answer;
  if (use_llm) {
    assistant::LlmConfig config{args.llm_url, args.llm_model, args.llm_key_file, args.llm_ca};
    config.timeout_ms = static_cast<int64_t>(args.llm_timeout_s * 1000);
    config.allow_http = args.llm_allow_http;
    auto client = assistant::OpenAiChatClient::Create(config);
    if (!client.ok()) {
      std::cerr << "faultline ask: " << client.status().message() << "\n";
      return client.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    answer = assistant::AskWithModel(**client, tools, request, ask);
  } else {
    answer = assistant::AskOffline(tools, request, ask);
  }
  // Notes that came after the answer was written (an offline text already holds its own).
  std::vector<std::string> late_notes;
  if (!kb.note().empty()) late_notes.push_back(kb.note());
  if (s == nullptr) {
    late_notes.push_back(
        "for a diagnosis of this node: faultline ask --store P (the agent's store), or faultline "
        "diagnose with the node's kernel log and snapshots");
  }
  for (const std::string& n : late_notes) answer.notes.push_back(n);

  std::string stored_note;
  if (record && !options.read_only) {
    auto id = assistant::StoreTranscript(*s, node, request, answer, now);
    stored_note = id.ok() ? "transcript stored with the incident as action row " + std::to_string(*id)
                          : "transcript not stored: " + id.status().message();
  } else if (record) {
    stored_note = "transcript not stored: the store is read-only here";
  } else if (use_llm && !args.no_record && s == nullptr) {
    stored_note = "transcript not stored: no store";
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
      for (const std::string& n : late_notes) std::cout << "\nNote: " << n << "\n";
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
      "No node data: when --store is left out and the default store does not exist, or the store\n"
      "holds no row of the node, the answer is the knowledge base's runbook sections for the\n"
      "question and says first that it is general guidance, not a diagnosis of this node (--json:\n"
      "node_data=false, node_data_statement). The model's node tools then answer \"no store\".\n"
      "Examples:\n"
      "  faultline ask --node gpu-7 \"why is this node slow?\"\n"
      "  faultline ask --node gpu-7 --since 2h \"what changed before the job died?\"\n"
      "  faultline ask --node gpu-7 --llm-url http://127.0.0.1:8080/v1 --llm-model local \\\n"
      "      \"is it safe to return this node to service?\"\n"
      "  faultline ask \"what does XID 79 mean?\"          # no store here: general guidance\n"
      "Exit code: 0 when answered (also with no node data), 1 when the store could not be read, 2 for bad\n"
      "options or a --store that does not exist.");
  cmd->add_option("question", args->question, "The question, in quotes")->required();
  CLI::Option* store_opt = cmd->add_option(
      "--store", args->store,
      "Agent store (default /var/lib/faultline/faultline.db; when that is absent: knowledge base only). "
      "A --store that does not exist is an error");
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
  cmd->add_flag("--llm-allow-http", args->llm_allow_http,
                "Allow a plain http --llm-url to a host that is not loopback (the key and data cross in clear)");
  cmd->add_option("--llm-timeout", args->llm_timeout_s, "Seconds per model request (default 120)");
  cmd->add_option("--max-steps", args->max_steps, "Model replies at most (default 8)")->check(CLI::Range(1, 100));
  cmd->add_option("--max-tokens", args->max_tokens, "Tokens at most, all replies together (default 32000)")
      ->check(CLI::Range(int64_t{100}, int64_t{10'000'000}));
  cmd->add_option("--max-seconds", args->max_seconds, "Wall time at most for the model (default 300)")
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--kb", args->kb_dir,
                  "Knowledge base directory (default <binary's dir>/../share/faultline/kb, "
                  "then /usr/share/faultline/kb, else ./kb)");
  cmd->add_option("--kb-index", args->kb_index,
                  "Keep the knowledge base's index here (updated incrementally); default: a temporary one");
  cmd->add_flag("--json", args->json, "Print one JSON object: answer, evidence, runbooks, proposals, primary, ...");
  cmd->add_flag("--no-record", args->no_record, "Do not store the model's transcript in the store");
  cmd->callback([args, store_opt, &app] {
    args->store_given = store_opt->count() > 0;
    app.exit_code = Run(*args);
  });
}

}  // namespace faultline::cli
