// `faultline rma-bundle` and `faultline facility-ticket`: one .tar.gz of evidence for a
// stored diagnosis, for the part's vendor (RMA) or for data-center facilities (power,
// cooling, leak). Which diagnosis is the policy's word: without --diagnosis, the node's
// active diagnosis (policy/active.h: the latest primary plus those with decisions in flight)
// whose action plan (policy::PlanActions) proposes the document; a superseded diagnosis is
// never picked by itself. The store is opened read-only; the files are actions/bundle.h's.
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "actions/bundle.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "policy/active.h"
#include "policy/rules.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

using actions::ActionClass;

struct BundleArgs {
  std::string store = "/var/lib/faultline/faultline.db";
  int64_t diagnosis = -1;
  std::string node;
  std::string out;
  std::string window = "2h";
  bool force = false;
  bool json = false;
};

// One of the two documents, as the command and the action plan name it.
struct Doc {
  actions::BundleKind kind;
  ActionClass action_class;  // what the plan must propose
  const char* command;       // "rma-bundle"
  const char* what;          // "an RMA bundle"
  const char* other_command;
  ActionClass other_class;
};

constexpr Doc kRmaDoc{actions::BundleKind::kRma, ActionClass::kRmaBundle, "rma-bundle",
                      "an RMA bundle",           "facility-ticket",       ActionClass::kFacilityTicket};
constexpr Doc kFacilityDoc{
    actions::BundleKind::kFacility, ActionClass::kFacilityTicket, "facility-ticket", "a facility ticket", "rma-bundle",
    ActionClass::kRmaBundle};

// The plan's proposal of `c`, not refused; null when it makes none.
const policy::Proposal* Proposes(const std::vector<policy::Proposal>& plan, ActionClass c) {
  for (const policy::Proposal& p : plan) {
    if (p.action_class == c && !p.refused) return &p;
  }
  return nullptr;
}

// "facility_ticket, webhook; refused: rma_bundle (why)": what the operator needs to judge it.
std::string PlanText(const std::vector<policy::Proposal>& plan) {
  std::string yes;
  std::string no;
  for (const policy::Proposal& p : plan) {
    std::string& list = p.refused ? no : yes;
    if (!list.empty()) list += ", ";
    list += std::string(ToString(p.action_class));
    if (p.refused && !p.why.empty()) list += " (" + p.why + ")";
  }
  if (yes.empty()) yes = "no action";
  return no.empty() ? yes : yes + "; refused: " + no;
}

std::string Describe(const Row<Diagnosis>& row) {
  const Diagnosis& d = row.value;
  const int64_t at = d.last_ns != 0 ? d.last_ns : d.first_ns;
  return "#" + std::to_string(row.id) + " " + std::string(ToString(d.fault_class)) + " on " + d.component.Id() +
         " at " + (at != 0 ? FormatIso8601(at) : std::string("unknown time"));
}

// The diagnosis to bundle and why (the options BuildBundle takes), or the exit code to stop with.
struct Choice {
  int exit_code = kExitOk;
  int64_t id = 0;
  actions::Warrant warrant = actions::Warrant::kActionPlan;
  std::string note;
};

Choice Stop(int code, const std::string& prefix, const std::string& message) {
  std::cerr << prefix << message << "\n";
  return {code};
}

// Whether the store holds anything at all for `node` (or for any node when unset).
Result<bool> HoldsRows(Store& store, const std::optional<std::string>& node) {
  RecordQuery rq;
  rq.node = node;
  rq.limit = 1;
  auto d = store.ListDiagnoses(rq);
  if (!d.ok()) return d.status();
  if (!d->rows.empty()) return true;
  ObservationQuery oq;
  oq.node = node;
  oq.limit = 1;
  oq.include_seen = false;
  auto o = store.QueryObservations(oq);
  if (!o.ok()) return o.status();
  if (!o->rows.empty()) return true;
  auto a = store.ListActions(rq);
  if (!a.ok()) return a.status();
  return !a->rows.empty();
}

// --diagnosis ID: that row, if its plan calls for the document (or --force).
Choice ChooseById(Store& store, const BundleArgs& args, const Doc& doc, const std::string& prefix) {
  RecordQuery q;
  if (!args.node.empty()) q.node = args.node;
  q.limit = 0;
  auto rows = store.ListDiagnoses(q);
  if (!rows.ok()) return Stop(kExitFailure, prefix, rows.status().ToString());
  for (const auto& row : rows->rows) {
    if (row.id != args.diagnosis) continue;
    const auto plan = policy::PlanActions(row.value);
    if (const policy::Proposal* p = Proposes(plan, doc.action_class)) {
      return {kExitOk, row.id, actions::Warrant::kActionPlan, "rule " + p->rule};
    }
    if (args.force) return {kExitOk, row.id, actions::Warrant::kForced, "its plan: " + PlanText(plan)};
    std::string hint;
    if (Proposes(plan, doc.other_class)) {
      hint = "; it calls for `faultline " + std::string(doc.other_command) + " --diagnosis " + std::to_string(row.id) +
             "`";
    }
    return Stop(kExitUsage, prefix,
                "diagnosis " + Describe(row) + " does not call for " + doc.what + ": its action plan is " +
                    PlanText(plan) + hint + ". Add --force to write one anyway.");
  }
  const std::string missing = "no diagnosis #" + std::to_string(args.diagnosis) + " in the store" +
                              (args.node.empty() ? "" : " for node " + args.node);
  if (!args.node.empty()) {
    auto held = HoldsRows(store, args.node);
    if (!held.ok()) return Stop(kExitFailure, prefix, held.status().ToString());
    if (!*held) return Stop(kExitUnknown, prefix, missing + ", which it holds no rows for: is the node name right?");
  }
  return Stop(kExitUsage, prefix, missing);
}

std::string Join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Without --diagnosis: the node's active diagnosis whose plan calls for the document.
Choice ChooseActive(Store& store, const BundleArgs& args, const Doc& doc, const std::string& prefix) {
  RecordQuery all;
  all.limit = 0;
  auto rows = store.ListDiagnoses(all);
  if (!rows.ok()) return Stop(kExitFailure, prefix, rows.status().ToString());
  std::set<std::string> nodes;
  for (const auto& row : rows->rows) nodes.insert(row.node);
  std::string node = args.node;
  if (node.empty()) {
    if (nodes.size() > 1) {
      return Stop(kExitUsage, prefix,
                  "the store holds diagnoses of several nodes (" + Join(nodes) +
                      "): name one with --node, or a diagnosis with --diagnosis ID");
    }
    if (nodes.empty()) {
      auto any = HoldsRows(store, std::nullopt);
      if (!any.ok()) return Stop(kExitFailure, prefix, any.status().ToString());
      if (!*any) return Stop(kExitUnknown, prefix, "the store holds no rows at all: nothing to judge yet");
      return Stop(kExitUsage, prefix, std::string("no diagnosis is stored: nothing calls for ") + doc.what);
    }
    node = *nodes.begin();
  } else {
    auto held = HoldsRows(store, node);
    if (!held.ok()) return Stop(kExitFailure, prefix, held.status().ToString());
    if (!*held) {
      return Stop(
          kExitUnknown, prefix,
          "the store holds no rows for node " + node + ": is the node name right? (" +
              (nodes.empty() ? std::string("no node has a diagnosis") : "nodes with diagnoses: " + Join(nodes)) + ")");
    }
  }
  auto active = policy::ActiveDiagnoses(store, node);
  if (!active.ok()) return Stop(kExitFailure, prefix, active.status().ToString());
  std::vector<std::pair<const Row<Diagnosis>*, const policy::Proposal*>> calls;
  std::vector<std::vector<policy::Proposal>> plans;
  plans.reserve(active->size());
  for (const auto& row : *active) {
    plans.push_back(policy::PlanActions(row.value));
    if (const policy::Proposal* p = Proposes(plans.back(), doc.action_class)) calls.emplace_back(&row, p);
  }
  if (calls.size() == 1)
    return {kExitOk, calls[0].first->id, actions::Warrant::kActionPlan, "rule " + calls[0].second->rule};
  if (calls.size() > 1) {
    std::cerr << prefix << calls.size() << " active diagnoses of node " << node << " call for " << doc.what
              << "; name one with --diagnosis ID:\n";
    for (const auto& [row, p] : calls) std::cerr << "  " << Describe(*row) << "\n";
    return {kExitUsage};
  }
  std::string message = "no active diagnosis of node " + node + " calls for " + doc.what;
  if (active->empty()) {
    message += "; the node has no active diagnosis (the latest is none, or its incidents are resolved)";
  }
  bool other = false;
  for (size_t i = 0; i < active->size(); ++i) {
    message += (i == 0 ? "; active: " : "; ") + Describe((*active)[i]) + " (its plan: " + PlanText(plans[i]) + ")";
    other |= Proposes(plans[i], doc.other_class) != nullptr;
  }
  if (other) message += ". Use `faultline " + std::string(doc.other_command) + "` for it";
  return Stop(kExitUsage, prefix, message + ". Name another with --diagnosis ID (--force to override its plan).");
}

int Run(const BundleArgs& args, const Doc& doc) {
  const std::string prefix = std::string("faultline ") + doc.command + ": ";
  auto pad = ParseDuration(args.window);
  if (!pad || *pad < 0) {
    std::cerr << prefix << "--window takes a duration like 30m or 2h\n";
    return kExitUsage;
  }
  // Never create an empty store by asking a question of one that does not exist.
  if (!std::filesystem::exists(args.store)) {
    std::cerr << prefix << "no store at " << args.store << "\n";
    return kExitUsage;
  }
  StoreOptions so;
  so.read_only = true;
  auto store = Store::Open(args.store, so);
  if (!store.ok()) {
    std::cerr << prefix << store.status().ToString() << "\n";
    return kExitFailure;
  }
  const Choice choice =
      args.diagnosis >= 0 ? ChooseById(**store, args, doc, prefix) : ChooseActive(**store, args, doc, prefix);
  if (choice.exit_code != kExitOk) return choice.exit_code;
  SystemClock clock;
  actions::BundleOptions options;
  options.diagnosis_id = choice.id;
  options.warrant = choice.warrant;
  options.warrant_note = choice.note;
  options.window_pad_ns = *pad;
  options.now_ns = clock.NowNs();
  auto bundle = actions::BuildBundle(**store, doc.kind, options);
  if (!bundle.ok()) {
    std::cerr << prefix << bundle.status().message() << "\n";
    const StatusCode c = bundle.status().code();
    return c == StatusCode::kNotFound || c == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (Status s = actions::WriteBundle(*bundle, args.out, options.now_ns); !s.ok()) {
    std::cerr << prefix << s.message() << "\n";
    return kExitFailure;
  }
  const bool forced = choice.warrant == actions::Warrant::kForced;
  if (args.json) {
    Json files = Json::array();
    for (const auto& f : bundle->files) files.push_back({{"name", f.name}, {"bytes", f.data.size()}});
    std::cout << Json{{"out", args.out},
                      {"diagnosis_id", bundle->diagnosis_id},
                      {"node", bundle->node},
                      {"fault_class", ToString(bundle->diagnosis.fault_class)},
                      {"component", bundle->diagnosis.component.Id()},
                      {"warrant", forced ? "forced" : "action_plan"},
                      {"files", files}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::cout << "wrote " << args.out << ": " << doc.command << " for diagnosis #" << bundle->diagnosis_id << " ("
            << ToString(bundle->diagnosis.fault_class) << " on " << bundle->diagnosis.component.Id() << ", node "
            << bundle->node << "), " << bundle->files.size() << " files"
            << (forced ? "; forced: its action plan does not call for it" : "") << "\n";
  return kExitOk;
}

void AddOptions(CLI::App* cmd, BundleArgs& args) {
  cmd->add_option("--store", args.store, "Agent store (default /var/lib/faultline/faultline.db); opened read-only");
  CLI::Option* id =
      cmd->add_option("--diagnosis", args.diagnosis,
                      "Stored diagnosis id (the row id the agent stored it under, as the policy's decisions and "
                      "`faultline resolve` name it); default: the node's active diagnosis whose action plan calls "
                      "for this document")
          ->check(CLI::NonNegativeNumber);
  cmd->add_option("--node", args.node,
                  "The node, as the agent stored it (default: the one node the store holds diagnoses of)");
  cmd->add_flag("--force", args.force,
                "With --diagnosis: write it although that diagnosis' action plan does not call for it (the "
                "document says so). Never a GPU returned for a power/cooling/leak cause, nor any document for a "
                "user program or a fault that is no failed part")
      ->needs(id);
  cmd->add_option("--out", args.out, "Where to write the .tar.gz (replaced atomically; mode 0600)")->required();
  cmd->add_option("--window", args.window,
                  "Raw kernel lines and BMC entries from this long before the first evidence to this long after "
                  "the last (default 2h)");
  cmd->add_flag("--json", args.json, "Print what was written as JSON");
}

}  // namespace

void AddRmaBundleCommand(CliApp& app) {
  auto rma = std::make_shared<BundleArgs>();
  CLI::App* cmd = app.root->add_subcommand(
      "rma-bundle",
      "Write the evidence a vendor needs to accept a returned part (GPU, NVSwitch, NIC, PCIe/NVLink link, PSU)\n"
      "as one .tar.gz: summary.md (the part: model, serial, board part number, UUID, PCI id, VBIOS and driver\n"
      "versions for a GPU; model, serial, part number, firmware for a PSU; what the store lacks is \"not\n"
      "recorded\"; what failed, since when, evidence), diagnosis.json, counters.csv (the part's ECC/remap/\n"
      "replay/CRC history, or a PSU's readings), kernel.log and bmc_sel.log (raw lines around the fault) and\n"
      "node_facts.json. Secrets in log text are redacted.\n"
      "Which diagnosis: without --diagnosis, the node's active one (the latest primary, plus those with\n"
      "decisions in flight) whose action plan calls for an RMA; a superseded diagnosis is never taken.\n"
      "Several such: they are listed and you name one. A diagnosis whose plan does not call for an RMA (a\n"
      "lost power feed, cooling or a leak: facility-ticket; a user program; a driver fault) is refused unless\n"
      "--force.\n"
      "Exit code: 0 written; 1 store unreadable or the file could not be written; 2 bad options, no store,\n"
      "unknown diagnosis, no or several active diagnoses calling for it, or one it is not for; 3 the store\n"
      "holds no rows for the node (a wrong --node).");
  AddOptions(cmd, *rma);
  cmd->footer(
      "Examples:\n"
      "  faultline rma-bundle --out rma.tar.gz                      # the active diagnosis that calls for an RMA\n"
      "  faultline rma-bundle --store D/faultline.db --diagnosis 12 --out rma-12.tar.gz\n"
      "  tar -xzf rma-12.tar.gz && less summary.md                   # what the vendor will read\n"
      "See docs/rma-bundle.md.");
  cmd->callback([rma, &app] { app.exit_code = Run(*rma, kRmaDoc); });

  auto ticket = std::make_shared<BundleArgs>();
  CLI::App* fac = app.root->add_subcommand(
      "facility-ticket",
      "Write a ticket for data-center facilities as one .tar.gz, for a power, cooling or leak cause (or a\n"
      "cable fault the action plan hands to facilities): summary.md (where: node, PSU/feed/loop and rack/PDU\n"
      "when known; what; since when; readings), diagnosis.json, readings.csv (power, voltage, PSU,\n"
      "temperature, fan, coolant, leak), bmc_sel.log and node_facts.json. Never names a GPU part for return.\n"
      "Which diagnosis: as rma-bundle, the node's active one whose action plan calls for a facility ticket;\n"
      "refused for one whose plan does not, unless --force. Exit codes as rma-bundle.");
  AddOptions(fac, *ticket);
  fac->footer(
      "Examples:\n"
      "  faultline facility-ticket --out psu-ticket.tar.gz          # the active power/cooling/leak cause\n"
      "  faultline facility-ticket --node gpu-node-7 --window 6h --out ticket.tar.gz\n"
      "See docs/rma-bundle.md.");
  fac->callback([ticket, &app] { app.exit_code = Run(*ticket, kFacilityDoc); });
}

}  // namespace faultline::cli
