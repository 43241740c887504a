// GPU reset and node reboot behind the Actuator interface (actuator.h), both through the
// bounded command runner (argv only, never a shell, a deadline per call). The policy only
// proposes them after a drain, and holds them behind the breaker (docs/remediation.md
// "GPU reset and node reboot").
//
// GPU reset (class reset_gpu): `nvidia-smi --gpu-reset -i <GPU>` by default, where <GPU> is
// GpuSelector(diagnosis.component): the PCI bus id when the component knows it, else the
// UUID, else the NVML index (nvidia-smi takes all three). A component that is not a GPU, or
// whose keys disagree (name says one bus id, keys another), or that names no GPU at all is
// refused with kInvalidArgument before anything runs: resetting the wrong GPU is worse than
// resetting none. Observe answers kUnknown: a reset leaves nothing to see afterwards, so a
// crash between "decided" and "done" makes the policy reset again, on a drained node, which
// costs only a second reset.
//
// Node reboot (class reboot_node): `systemctl reboot` by default. Crash safety is the point
// here: after the node came back, a decision left "decided" (the agent was stopped by the
// shutdown before it stored "done") must not reboot it again. Before the command runs, the
// actuator writes (fsync, rename) a marker <state_dir>/<DecisionFileName(key, ".reboot")>
// holding the kernel's boot id (/proc/sys/kernel/random/boot_id, new at every boot).
// Observe: a marker whose boot id differs from the current one -> kInEffect (the node has
// rebooted since: never again for this decision); no marker, or the same boot id ->
// kNotInEffect (running the command again within the same boot is still one reboot). The
// boot id, not the clock, so a wrong clock before NTP cannot cause a second reboot.
// state_dir must survive a reboot (not tmpfs); the factory checks it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "sources/ipmi/command_runner.h"

namespace faultline::actions {

inline constexpr char kGpuPlaceholder[] = "{gpu}";

// The -i argument of nvidia-smi for a diagnosed component (see above).
Result<std::string> GpuSelector(const ComponentRef& component);

struct GpuResetOptions {
  // Every argument equal to "{gpu}" becomes GpuSelector(component); without one, the
  // selector is appended.
  std::vector<std::string> command = {"nvidia-smi", "--gpu-reset", "-i", kGpuPlaceholder};
  int64_t timeout_ms = 120'000;  // a reset takes seconds; nvidia-smi waits for the driver
};

class GpuResetActuator final : public Actuator {
 public:
  GpuResetActuator(ipmi::CommandRunner& runner, GpuResetOptions options = {});
  bool Handles(ActionClass c) const override;
  Status Apply(const Decision& decision) override;
  Result<Observed> Observe(const Decision& decision) override;
  // The argv Apply would run (kInvalidArgument when the GPU is not identified).
  Result<std::vector<std::string>> CommandFor(const Decision& decision) const;

 private:
  ipmi::CommandRunner& runner_;
  GpuResetOptions options_;
};

struct RebootOptions {
  std::vector<std::string> command = {"systemctl", "reboot"};
  std::string state_dir = "/var/lib/faultline/actions";  // reboot markers (persistent)
  std::string boot_id_path = "/proc/sys/kernel/random/boot_id";
  int64_t timeout_ms = 60'000;
};

// The kernel's boot id read from `path` (trimmed); kUnavailable when it cannot be read or
// does not look like one (hex digits and dashes, 8 to 64 bytes).
Result<std::string> ReadBootId(const std::string& path);

class RebootActuator final : public Actuator {
 public:
  RebootActuator(ipmi::CommandRunner& runner, RebootOptions options = {});
  bool Handles(ActionClass c) const override;
  Status Apply(const Decision& decision) override;
  Result<Observed> Observe(const Decision& decision) override;
  std::string MarkerPath(const Decision& decision) const;

 private:
  ipmi::CommandRunner& runner_;
  RebootOptions options_;
};

// kInvalidArgument when `dir` (or, while it does not exist yet, its nearest existing
// parent) is on a file system that does not survive a reboot (tmpfs, ramfs).
Status CheckPersistentDir(const std::string& dir);

}  // namespace faultline::actions
