// `faultline rma-bundle` and `faultline facility-ticket`: one .tar.gz of evidence for a
// stored diagnosis, for the part's vendor (RMA) or for data-center facilities (power,
// cooling, leak). The store is opened read-only; the logic is in actions/bundle.h.
#include <filesystem>
#include <iostream>
#include <memory>

#include "actions/bundle.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "store/store.h"

namespace faultline::cli {
namespace {

struct BundleArgs {
  std::string store = "/var/lib/faultline/faultline.db";
  int64_t diagnosis = -1;
  std::string node;
  std::string out;
  std::string window = "2h";
  bool json = false;
};

int Run(const BundleArgs& args, actions::BundleKind kind, const char* name) {
  const std::string prefix = std::string("faultline ") + name + ": ";
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
  SystemClock clock;
  actions::BundleOptions options;
  if (args.diagnosis >= 0) options.diagnosis_id = args.diagnosis;
  if (!args.node.empty()) options.node = args.node;
  options.window_pad_ns = *pad;
  options.now_ns = clock.NowNs();
  auto bundle = actions::BuildBundle(**store, kind, options);
  if (!bundle.ok()) {
    std::cerr << prefix << bundle.status().message() << "\n";
    const StatusCode c = bundle.status().code();
    return c == StatusCode::kNotFound || c == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (Status s = actions::WriteBundle(*bundle, args.out, options.now_ns); !s.ok()) {
    std::cerr << prefix << s.message() << "\n";
    return kExitFailure;
  }
  if (args.json) {
    Json files = Json::array();
    for (const auto& f : bundle->files) files.push_back({{"name", f.name}, {"bytes", f.data.size()}});
    std::cout << Json{{"out", args.out},
                      {"diagnosis_id", bundle->diagnosis_id},
                      {"node", bundle->node},
                      {"fault_class", ToString(bundle->diagnosis.fault_class)},
                      {"component", bundle->diagnosis.component.Id()},
                      {"files", files}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::cout << "wrote " << args.out << ": " << name << " for diagnosis #" << bundle->diagnosis_id << " ("
            << ToString(bundle->diagnosis.fault_class) << " on " << bundle->diagnosis.component.Id() << ", node "
            << bundle->node << "), " << bundle->files.size() << " files\n";
  return kExitOk;
}

void AddOptions(CLI::App* cmd, BundleArgs& args) {
  cmd->add_option("--store", args.store, "Agent store (default /var/lib/faultline/faultline.db); opened read-only");
  cmd->add_option("--diagnosis", args.diagnosis,
                  "Stored diagnosis id (the row id the agent stored it under, as the policy's decisions and "
                  "`faultline resolve` name it); default: the newest one this document is for")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--node", args.node, "Only look at this node's diagnoses");
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
      "Write the evidence a vendor needs to accept a returned part (GPU, NVSwitch, NIC, PCIe/NVLink link) as one\n"
      ".tar.gz: summary.md (part, serial, UUID, PCI id, what failed, since when, evidence), diagnosis.json,\n"
      "counters.csv (the part's ECC/remap/replay/CRC history), kernel.log and bmc_sel.log (raw lines around\n"
      "the fault) and node_facts.json. Refused for a power/cooling/leak cause (use facility-ticket), a user\n"
      "program or a driver fault. Secrets in log text are redacted.\n"
      "Exit code: 0 written; 1 store unreadable or the file could not be written; 2 bad options, no store,\n"
      "unknown diagnosis, or a diagnosis this document is not for.");
  AddOptions(cmd, *rma);
  cmd->footer(
      "Examples:\n"
      "  faultline rma-bundle --out gpu-rma.tar.gz                  # newest part failure in the agent's store\n"
      "  faultline rma-bundle --store D/faultline.db --diagnosis 12 --out rma-12.tar.gz\n"
      "  tar -xzf rma-12.tar.gz && less summary.md                   # what the vendor will read\n"
      "See docs/rma-bundle.md.");
  cmd->callback([rma, &app] { app.exit_code = Run(*rma, actions::BundleKind::kRma, "rma-bundle"); });

  auto ticket = std::make_shared<BundleArgs>();
  CLI::App* fac = app.root->add_subcommand(
      "facility-ticket",
      "Write a ticket for data-center facilities as one .tar.gz, for a power, cooling or leak cause:\n"
      "summary.md (where: node, PSU/feed/loop and rack/PDU when known; what; since when; readings),\n"
      "diagnosis.json, readings.csv (power, voltage, PSU, temperature, fan, coolant, leak), bmc_sel.log and\n"
      "node_facts.json. Never names a GPU part for return; refused for any other cause (use rma-bundle).\n"
      "Exit codes as rma-bundle.");
  AddOptions(fac, *ticket);
  fac->footer(
      "Examples:\n"
      "  faultline facility-ticket --out psu-ticket.tar.gz          # newest power/cooling/leak cause\n"
      "  faultline facility-ticket --node gpu-node-7 --window 6h --out ticket.tar.gz\n"
      "See docs/rma-bundle.md.");
  fac->callback([ticket, &app] { app.exit_code = Run(*ticket, actions::BundleKind::kFacility, "facility-ticket"); });
}

}  // namespace faultline::cli
