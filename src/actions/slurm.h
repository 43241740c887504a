// Slurm actuator: drain a node with a faultline reason, observe it, resume it only when the
// drain is ours (docs/remediation.md "Slurm"). Talks to Slurm through its own client tools
// (`scontrol`, `sinfo`) run by the bounded command runner: argv only, never a shell, a
// deadline per call, so a hung slurmctld cannot stall the agent or a HealthCheckProgram.
// The client tools read SLURM_CONF from the environment as usual.
//
// cordon and drain are both Slurm DRAIN: no new jobs; running jobs finish (Slurm never
// kills them on DRAIN), which is what both words mean for a batch scheduler.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actions/actuator.h"
#include "sources/ipmi/command_runner.h"

namespace faultline::actions {

struct SlurmOptions {
  std::string scontrol = "scontrol";
  std::string sinfo = "sinfo";
  int64_t timeout_ms = 15'000;  // per client call; Slurm's HealthCheckProgram limit is 60 s
};

// Every reason faultline writes starts with this; a drain without it is someone else's.
inline constexpr std::string_view kSlurmReasonPrefix = "faultline: ";
// Slurm stores the reason as a free string; sinfo's %E and `scontrol show node` print it
// whole up to this size, and a short reason stays readable in a squeue/sinfo column.
inline constexpr size_t kSlurmReasonMaxBytes = 96;

// "faultline: <fault class> <component> <node>/d<diagnosis id>" (the tag is
// DiagnosisTag(decision.node, decision.diagnosis_id): the diagnosing node, since ids are per
// store), at most kSlurmReasonMaxBytes: the text before the tag is cut, the tag never. Every
// byte outside [A-Za-z0-9 _./:#=+-] is replaced by '_' (it crosses a command line and Slurm's
// own key=value parsing).
std::string SlurmDrainReason(const Decision& decision);
bool IsFaultlineReason(std::string_view reason);

struct SlurmNode {
  std::string name;
  std::string state;   // "IDLE+DRAIN", "drained", "idle*", ...
  std::string reason;  // without Slurm's " [user@time]" suffix
  int64_t reason_time_ns = 0;
  bool Drained() const;  // DRAIN/DRAINED/DRAINING in any form
};

// One `scontrol show node -o NAME` line. kCorrupt when it has no NodeName=/State=.
Result<SlurmNode> ParseScontrolNode(std::string_view line);
// `sinfo -h -N -o %N|%T|%H|%E` output; a node listed once per partition is kept once.
Result<std::vector<SlurmNode>> ParseSinfoNodes(std::string_view text);
// "2026-12-01T18:50:50" in the local time zone (how Slurm prints) -> UTC ns; 0 when unparsable.
int64_t ParseSlurmTime(std::string_view text);

class SlurmActuator final : public Actuator, public FleetView, public Reverter {
 public:
  SlurmActuator(ipmi::CommandRunner& runner, SlurmOptions options = {});

  bool Handles(ActionClass c) const override;
  // Drains decision.target_node unless it already is drained (ours: no-op; someone
  // else's: left alone, their reason kept, OK returned with nothing done).
  Status Apply(const Decision& decision) override;
  Result<Observed> Observe(const Decision& decision) override;
  // Known nodes and faultline's drains from sinfo.
  Result<FleetState> Read() override;

  Result<SlurmNode> ShowNode(const std::string& name);
  // Resumes `name` only when it is drained with a faultline reason whose last word is
  // `diagnosis_tag` ("gpu-7/d42", DiagnosisTag). kPermissionDenied, nothing done, when the
  // drain is someone else's, faultline's for another diagnosis, or faultline's in the format
  // before tags named the node ("... d42": whose 42 cannot be told; the message says how to
  // resume by hand). OK and nothing done when the node is not drained.
  Status ResumeIfOurs(const std::string& name, const std::string& diagnosis_tag);
  // ResumeIfOurs(decision.target_node, DiagnosisTag(decision.node, decision.diagnosis_id)).
  Status Revert(const Decision& decision) override;

 private:
  Result<std::string> Run(std::vector<std::string> argv);
  ipmi::CommandRunner& runner_;
  SlurmOptions options_;
};

}  // namespace faultline::actions
