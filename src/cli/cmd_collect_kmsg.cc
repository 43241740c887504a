// `faultline collect kmsg`: read the live kernel log (/dev/kmsg) once, or follow it.
#include <csignal>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/json.h"
#include "sources/kmsg/devkmsg.h"

namespace faultline::cli {
namespace {

struct KmsgArgs {
  std::string device = "/dev/kmsg";
  bool follow = false;
  bool from_end = false;
  bool json = false;
  std::string node = "localhost";
  int64_t resume_after = -1;
};

volatile std::sig_atomic_t g_stop = 0;  // set only by the signal handler; read by the follow loop
void OnSignal(int) { g_stop = 1; }

void Print(const KmsgBatch& batch, bool json) {
  for (const KmsgGap& g : batch.gaps) {
    std::cerr << "warning: kernel ring buffer overwrote records " << g.first_lost_seq << ".." << g.last_lost_seq
              << " before they were read\n";
  }
  for (const Observation& o : batch.observations) {
    if (json) {
      std::cout << Json(o).dump() << "\n";
    } else {
      Evidence e{o.time_ns, o.mono_us, o.source, o.component.Id(), o.raw, o.count};
      std::cout << ToString(o.kind) << "  " << o.component.Id() << "  " << DescribeEvidence(e) << "\n";
    }
  }
  std::cout.flush();
}

int Run(const KmsgArgs& args) {
  auto dev = FdKmsgDevice::Open(args.device);
  if (!dev.ok()) {
    std::cerr << "faultline collect kmsg: " << dev.status().message() << "\n";
    return kExitUsage;
  }
  const SystemClock clock;
  KmsgReaderOptions options{args.node, std::nullopt, args.from_end};
  if (args.resume_after >= 0) options.resume_after_seq = static_cast<uint64_t>(args.resume_after);
  KmsgReader reader(std::move(dev).value(), options, clock);
  if (Status st = reader.Start(); !st.ok()) {
    std::cerr << "faultline collect kmsg: " << st.ToString() << "\n";
    return kExitFailure;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  do {
    auto batch = reader.ReadAvailable(args.follow ? 1000 : 0);
    if (!batch.ok()) {
      std::cerr << "faultline collect kmsg: " << batch.status().ToString() << "\n";
      return kExitFailure;
    }
    Print(*batch, args.json);
    if (batch->last_seq) std::cerr << "cursor: last sequence " << *batch->last_seq << "\n";
  } while (args.follow && !g_stop);
  return kExitOk;
}

}  // namespace

void AddCollectKmsgCommand(CliApp& app) {
  auto args = std::make_shared<KmsgArgs>();
  CLI::App* cmd = app.collect->add_subcommand(
      "kmsg",
      "Read the live kernel log from /dev/kmsg and print the recognized events (XID, SXid, AER, MCE, ...).\n"
      "Records overwritten before they were read are reported as gaps. Use --resume-after with the last\n"
      "sequence number printed on stderr to continue where a previous run stopped.");
  cmd->add_option("--device", args->device, "kmsg device or a FIFO with the same record format")->capture_default_str();
  cmd->add_flag("--follow,-f", args->follow, "Keep reading new records until interrupted");
  cmd->add_flag("--from-end", args->from_end, "Start at the newest record instead of the oldest");
  cmd->add_option("--resume-after", args->resume_after, "Skip records up to and including this sequence number");
  cmd->add_option("--node", args->node, "Node name put on observations")->capture_default_str();
  cmd->add_flag("--json", args->json, "One JSON observation per line");
  cmd->callback([args, &app] { app.exit_code = Run(*args); });
}

}  // namespace faultline::cli
