// Multi-line kernel messages in text logs (indented continuation lines belong to their
// head line, with or without the same prefix), raw kmsg dictionary lines, and the
// reader's bounds on what it keeps whatever the input.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/time.h"
#include "kmsg_test_util.h"
#include "sources/kmsg/log_reader.h"

namespace faultline {
namespace {

using kmsg_test::kRef;
using kmsg_test::Read;

std::vector<Observation> OfKind(const std::vector<Observation>& all, ObsKind kind) {
  std::vector<Observation> out;
  for (const Observation& o : all) {
    if (o.kind == kind) out.push_back(o);
  }
  return out;
}

// The driver's two-line "fallen off the bus" message, tail indented, in several forms.
TEST(MultiLineTest, FallenOffTheBusPairWithAnIndentedTail) {
  const std::string logs[] = {
      "[ 5120.000100] NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:2330)\n"
      "               NVRM: installed in this system has fallen off the bus and is not responding to commands.\n",
      "[ 5120.000100] NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:2330)\n"
      "               installed in this system has fallen off the bus and is not responding to commands.\n",
      "Mar 01 10:00:00 gpu-b3 kernel: NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:2330)\n"
      "Mar 01 10:00:00 gpu-b3 kernel:        installed in this system has fallen off the bus and is not responding\n",
      "2025-03-01T10:00:00.000100+00:00 gpu-b3 kernel: NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:20b5)\n"
      "\tinstalled in this system has fallen off the bus\n",
      "Mar 01 10:00:00 gpu-b3 kernel: [ 5120.0001] NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:2330)\n"
      "Mar 01 10:00:00 gpu-b3 kernel: [ 5120.0001]    NVRM: installed in this system has fallen off the bus\n",
  };
  for (const std::string& log : logs) {
    for (size_t chunk : {size_t{0}, size_t{5}, size_t{97}}) {
      auto obs = Read("Mar 01 09:59:59 gpu-b3 sshd[77]: Accepted publickey for ops\n" + log, nullptr, {}, chunk);
      auto fell = OfKind(obs, ObsKind::kGpuFellOffBus);
      ASSERT_EQ(fell.size(), 1u) << log << " chunk " << chunk;
      EXPECT_EQ(fell[0].component.Id(), "gpu/0000:9a:00.0") << log;
      EXPECT_EQ(fell[0].code, 79);
      EXPECT_NE(fell[0].raw.find("The NVIDIA GPU"), std::string::npos) << "the head line is part of the evidence";
      EXPECT_NE(fell[0].raw.find("fallen off"), std::string::npos);
    }
  }
}

// AER detail lines under their header: with the device prefix, without it (indented),
// and carrying the same syslog/dmesg prefix each.
TEST(MultiLineTest, AerDetailLinesBelongToTheirHeader) {
  const std::string dev = "0000:5d:00.0";
  const std::string logs[] = {
      // device prefix on every line, "AER:" on the TLP header
      "[  77.000001] pcieport 0000:5c:01.0: AER: Uncorrected (Fatal) error received: 0000:5d:00.0\n"
      "[  77.000002] nvidia 0000:5d:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
      "(Requester ID)\n"
      "[  77.000003] nvidia 0000:5d:00.0:   device [10de:2330] error status/mask=00004000/00000000\n"
      "[  77.000004] nvidia 0000:5d:00.0:    [14] CmpltTO                (First)\n"
      "[  77.000005] nvidia 0000:5d:00.0: AER:   TLP Header: 40000001 0000000f 5d000000 00000000\n",
      // detail lines indented without the device prefix, same syslog prefix each
      "Mar 01 10:00:01 gpu-b3 kernel: pcieport 0000:5c:01.0: AER: Uncorrected (Fatal) error received: 0000:5d:00.0\n"
      "Mar 01 10:00:01 gpu-b3 kernel: nvidia 0000:5d:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
      "type=Transaction Layer, (Requester ID)\n"
      "Mar 01 10:00:01 gpu-b3 kernel:   device [10de:2330] error status/mask=00004000/00000000\n"
      "Mar 01 10:00:01 gpu-b3 kernel:    [14] CmpltTO\n"
      "Mar 01 10:00:01 gpu-b3 kernel:   TLP Header: 40000001 0000000f 5d000000 00000000\n",
      // dmesg with the continuation lines indented and no prefix at all
      "[  77.000001] pcieport 0000:5c:01.0: AER: Uncorrected (Fatal) error received: 0000:5d:00.0\n"
      "[  77.000002] nvidia 0000:5d:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
      "(Requester ID)\n"
      "                device [10de:2330] error status/mask=00004000/00000000\n"
      "                 [14] CmpltTO                (First)\n"
      "                TLP Header: 40000001 0000000f 5d000000 00000000\n",
  };
  for (const std::string& log : logs) {
    for (size_t chunk : {size_t{0}, size_t{3}, size_t{64}}) {
      auto obs = Read(log + "[  78.0] usb 1-1: new device\n", nullptr, {}, chunk);
      auto aer = OfKind(obs, ObsKind::kPcieAer);
      ASSERT_EQ(aer.size(), 1u) << log << " chunk " << chunk;
      EXPECT_EQ(aer[0].component.name, dev);
      EXPECT_EQ(aer[0].attrs.at("errors"), "CmpltTO") << log;
      EXPECT_EQ(aer[0].attrs.at("tlp_header"), "40000001 0000000f 5d000000 00000000") << log;
      EXPECT_EQ(aer[0].attrs.at("reporting_port"), "0000:5c:01.0");
      EXPECT_NE(aer[0].raw.find("error status/mask"), std::string::npos) << log;
      EXPECT_NE(aer[0].raw.find("TLP Header"), std::string::npos) << log;
      EXPECT_EQ(obs.size(), 1u) << "no detail line is an event of its own: " << log;
    }
  }
}

TEST(MultiLineTest, KmsgDictionaryLinesAreDataAndIndentedTextIsNot) {
  // A raw /dev/kmsg dump: " KEY=VALUE" lines after a record are its dictionary.
  auto kmsg = Read(
      "3,881,5120000100,-;NVRM: Xid (PCI:0000:9a:00): 79, pid=0, name=x, GPU has fallen off the bus.\n"
      " SUBSYSTEM=pci\n"
      " DEVICE=+pci:0000:9a:00.0\n"
      "6,882,5120000200,-;usb 1-1: new device\n");
  ASSERT_EQ(kmsg.size(), 1u);
  EXPECT_EQ(kmsg[0].code, 79);
  // In a text log, an indented line that continues nothing is read as a message itself.
  auto text = Read(
      "[ 10.0] usb 1-1: new device\n"
      "          NVRM: Xid (PCI:0000:9a:00): 13, pid=9, name=a, Graphics Exception\n");
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0].kind, ObsKind::kXid);
  EXPECT_EQ(text[0].code, 13);
}

TEST(MultiLineTest, EndlessContinuationLinesKeepTheEvidenceBounded) {
  std::string log =
      "[  77.000001] nvidia 0000:5d:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n";
  for (int i = 0; i < 20000; ++i) log += "                 [ 0] RxErr\n";
  auto obs = Read(log);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_LE(obs[0].raw.size(), 4u * 4096 + 4096);
  EXPECT_LE(obs[0].attrs.at("errors").size(), 1024u);
}

// The memory class: a log of N distinct XID lines (one pid each) must not keep N
// observations. What is kept is bounded by the options; counts stay true.
TEST(ReaderBoundsTest, ManyDistinctXidLinesAreAggregatedNotKept) {
  constexpr int kLines = 200'000;
  const char* buses[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  std::string log;
  log.reserve(kLines * 120);
  for (int i = 0; i < kLines; ++i) {
    log += "[" + std::to_string(1000 + i / 1000) + "." + std::to_string(100000 + i % 1000) +
           "] NVRM: Xid (PCI:0000:" + buses[i % 8] + ":00): 13, pid=" + std::to_string(100000 + i) + ", name=job" +
           std::to_string(i) + ", Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address\n";
  }
  KernelLogOptions options;
  options.max_variants = 300;
  options.max_observations = 50'000;
  KernelLogStats stats;
  auto obs = Read(log, &stats, options, 1 << 20);
  // 8 GPUs x 300 variants kept; everything else counted into them.
  EXPECT_EQ(obs.size(), 8u * 300u);
  std::map<std::string, size_t> per_gpu;
  uint64_t total = 0;
  for (const Observation& o : obs) {
    ++per_gpu[o.component.Id()];
    total += o.count;
  }
  EXPECT_EQ(per_gpu.size(), 8u);
  for (const auto& [gpu, n] : per_gpu) EXPECT_LE(n, 300u) << gpu;
  EXPECT_EQ(total, static_cast<uint64_t>(kLines)) << "every line is still counted";
  EXPECT_EQ(stats.aggregated, static_cast<uint64_t>(kLines) - 8u * 300u);
  EXPECT_EQ(stats.dropped, 0u);
  size_t evidence_bytes = 0;
  for (const Observation& o : obs) evidence_bytes += o.raw.size() + o.text.size();
  EXPECT_LT(evidence_bytes, 2400u * 400u);
}

TEST(ReaderBoundsTest, ManyComponentsHitTheTotalCapAndAreCounted) {
  constexpr int kLines = 20'000;
  std::string log;
  for (int i = 0; i < kLines; ++i) {
    char bdf[16];
    std::snprintf(bdf, sizeof bdf, "%04x:%02x:00", i / 256, i % 256);
    log += std::string("[ 10.0] NVRM: Xid (PCI:") + bdf + "): 48, pid=1, name=a, DBE\n";
  }
  KernelLogOptions options;
  options.max_observations = 1000;
  KernelLogStats stats;
  auto obs = Read(log, &stats, options);
  EXPECT_EQ(obs.size(), 1000u);
  EXPECT_EQ(stats.dropped, static_cast<uint64_t>(kLines) - 1000u);
  // The first ones are kept, in input order.
  EXPECT_EQ(obs.front().component.Id(), "gpu/0000:00:00.0");
}

}  // namespace
}  // namespace faultline
