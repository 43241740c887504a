// The RoCE detector: congestion vs link faults, placement through the topology, healthy
// background left alone, counter resets, and the isolator explaining slow steps with it.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/detect/fabric_roce.h"
#include "engine/isolate/isolator.h"

namespace faultline {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

ComponentRef RocePort(int i, bool topo_keys = false) {
  ComponentRef r{ComponentType::kRoce, "mlx5_" + std::to_string(i) + "/1", {}};
  r.keys = {{"device", "mlx5_" + std::to_string(i)},
            {"port", "1"},
            {"netdev", "eth" + std::to_string(i)},
            {"model", "MT4129"}};
  if (topo_keys) {
    r.keys["switch"] = "leaf-03";
    r.keys["switch_port"] = std::to_string(10 + i);
    r.keys["cable"] = "CBL-03" + std::to_string(10 + i);
  }
  return r;
}

ComponentRef Iface(int i, bool topo_keys = false) {
  ComponentRef r{ComponentType::kEth, "eth" + std::to_string(i), {}};
  r.keys = {
      {"interface", r.name}, {"rdma_device", "mlx5_" + std::to_string(i)}, {"rdma_port", "1"}, {"model", "MT4129"}};
  if (topo_keys) {
    r.keys["switch"] = "leaf-03";
    r.keys["switch_port"] = std::to_string(10 + i);
    r.keys["cable"] = "CBL-03" + std::to_string(10 + i);
  }
  return r;
}

Observation Counter(ComponentRef ref, const std::string& counter, const std::string& canonical,
                    const std::string& group, double value, int64_t t, const std::string& prio = "") {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kFabric;
  o.source = Source::kSysfs;
  o.kind = ref.type == ComponentType::kRoce ? ObsKind::kRoceCounter : ObsKind::kEthCounter;
  o.component = std::move(ref);
  o.value = value;
  o.attrs = {{"counter", counter}, {"canonical", canonical}, {"group", group}};
  if (!prio.empty()) o.attrs["priority"] = prio;
  return o;
}

Observation Speed(ComponentRef ref, double gbps, int64_t t, double expected = 0) {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kFabric;
  o.source = Source::kSysfs;
  o.kind = ObsKind::kEthSpeed;
  o.component = std::move(ref);
  o.value = gbps;
  if (expected > 0) o.attrs["expected"] = std::to_string(static_cast<int>(expected));
  return o;
}

Observation State(ComponentRef ref, bool up, int64_t t) {
  Observation o;
  o.time_ns = t;
  o.layer = Layer::kFabric;
  o.source = Source::kSysfs;
  o.kind = ObsKind::kEthLinkState;
  o.component = std::move(ref);
  o.value = up ? 1 : 0;
  o.attrs["operstate"] = up ? "up" : "down";
  return o;
}

// One node's worth of samples every `step` seconds: per port `n` ports of background
// (ECN/CNP at `ecn_per_s`, pauses at `pause_per_s`, paused 0.1% of the time), plus
// `extra(i, k, t, out)` for faults.
template <typename Extra>
std::vector<Finding> Drive(RoceFabricDetector& d, int samples, int ports, double ecn_per_s, double pause_per_s,
                           Extra extra, int64_t step = 10 * kSec) {
  for (int k = 0; k < samples; ++k) {
    const int64_t t = kT0 + k * step;
    const double secs = static_cast<double>(k * step) / 1e9;
    for (int i = 0; i < ports; ++i) {
      std::vector<Observation> out;
      out.push_back(State(Iface(i), true, t));
      out.push_back(Speed(Iface(i), 400, t));
      out.push_back(Counter(RocePort(i), "np_ecn_marked_roce_packets", "np_ecn_marked_roce_packets", "congestion",
                            ecn_per_s * secs, t));
      out.push_back(Counter(RocePort(i), "np_cnp_sent", "np_cnp_sent", "congestion", 0.9 * ecn_per_s * secs, t));
      out.push_back(Counter(Iface(i), "rx_prio3_pause", "rx_prio_pause", "congestion", pause_per_s * secs, t, "3"));
      out.push_back(Counter(Iface(i), "rx_prio3_pause_duration", "rx_prio_pause_duration", "congestion",
                            0.001 * 1e6 * secs, t, "3"));
      out.push_back(Counter(Iface(i), "carrier_changes", "carrier_changes", "link", 0, t));
      extra(i, k, t, out);
      for (const Observation& o : out) d.Observe(o);
    }
  }
  return d.Findings();
}

const Finding* OfClass(const std::vector<Finding>& fs, FaultClass c) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.fault_class == c; });
  return it == fs.end() ? nullptr : &*it;
}

std::string Attr(const Finding& f, const char* k) { return f.attrs.count(k) ? f.attrs.at(k) : ""; }

auto kNone = [](int, int, int64_t, std::vector<Observation>&) {};

TEST(FabricDetectRoce, HealthyBusyFabricWithBackgroundEcnIsNotDiagnosed) {
  for (double ecn : {50.0, 600.0, 1500.0}) {
    RoceFabricDetector d(RoceOptions{}, nullptr);
    auto fs = Drive(d, 40, 8, ecn, ecn * 0.2, kNone);
    EXPECT_TRUE(fs.empty()) << ecn << ": " << (fs.empty() ? "" : fs.front().summary);
  }
}

TEST(FabricDetectRoce, PfcStormWithoutLossIsCongestionNotHardware) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  auto storm = [](int, int k, int64_t t, std::vector<Observation>& out) {
    if (k < 10) return;
    const double secs = static_cast<double>(k - 10) * 10;
    for (Observation& o : out) {
      if (o.attrs["counter"] == "rx_prio3_pause") *o.value += 5000 * secs;
      if (o.attrs["counter"] == "rx_prio3_pause_duration") *o.value += 0.3 * 1e6 * secs;
    }
    (void)t;
  };
  auto fs = Drive(d, 20, 8, 50, 10, storm);
  ASSERT_FALSE(fs.empty());
  for (const Finding& f : fs) {
    EXPECT_EQ(f.fault_class, FaultClass::kFabricCongestion) << f.summary;
    EXPECT_EQ(f.action, Action::kMonitor);
    EXPECT_EQ(Attr(f, "mode"), "pfc_storm");
    EXPECT_EQ(Attr(f, "congested_ports"), "8");
    EXPECT_NE(f.summary.find("not by a part of this node"), std::string::npos);
    EXPECT_EQ(f.severity, Severity::kWarning);
  }
  EXPECT_EQ(fs.size(), 8u);
}

TEST(FabricDetectRoce, OneIntervalBurstIsNotAStorm) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  auto burst = [](int, int k, int64_t, std::vector<Observation>& out) {
    if (k < 10) return;
    for (Observation& o : out) {
      if (o.attrs["counter"] == "rx_prio3_pause") *o.value += 200000;  // one 10 s interval at 20k/s, then flat
    }
  };
  EXPECT_TRUE(Drive(d, 20, 4, 50, 10, burst).empty());
}

TEST(FabricDetectRoce, CnpEcnSurgeIsCongestion) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  auto surge = [](int i, int k, int64_t, std::vector<Observation>& out) {
    if (k < 5 || i != 2) return;
    for (Observation& o : out) {
      if (o.attrs["counter"] == "np_cnp_sent") *o.value += 20000.0 * (k - 5) * 10;
    }
  };
  auto fs = Drive(d, 12, 4, 50, 10, surge);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kFabricCongestion);
  EXPECT_EQ(fs[0].component.Id(), "roce/mlx5_2/1");
  EXPECT_EQ(Attr(fs[0], "mode"), "ecn_cnp_surge");
}

TEST(FabricDetectRoce, CrcErrorsAreALinkFaultNamingPortCableAndSwitchPort) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  auto crc = [](int i, int k, int64_t t, std::vector<Observation>& out) {
    if (i != 5) return;
    out.push_back(Counter(Iface(5, true), "rx_crc_errors_phy", "rx_crc_errors_phy", "link", k * 30.0, t));
  };
  auto fs = Drive(d, 6, 8, 50, 10, crc);
  ASSERT_EQ(fs.size(), 1u);
  const Finding& f = fs[0];
  EXPECT_EQ(f.fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(f.component.Id(), "roce/mlx5_5/1");  // the interface's errors land on its RoCE port
  EXPECT_EQ(f.component.keys.at("netdev"), "eth5");
  EXPECT_EQ(f.action, Action::kReseatOrReplaceLink);
  EXPECT_EQ(Attr(f, "cable"), "CBL-0315");
  EXPECT_EQ(Attr(f, "switch"), "leaf-03");
  EXPECT_EQ(Attr(f, "switch_port"), "15");
  EXPECT_NE(Attr(f, "part").find("mlx5_5 port 1 (eth5)"), std::string::npos);
  EXPECT_NE(f.summary.find("rx_crc_errors_phy 180/min"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("CBL-0315"), std::string::npos) << f.summary;
}

TEST(FabricDetectRoce, RetransmissionsAreLossAndWinOverTheCongestionTheyCause) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  auto lossy = [](int i, int k, int64_t t, std::vector<Observation>& out) {
    if (i != 1 || k < 3) return;
    const double secs = (k - 3) * 10.0;
    out.push_back(Counter(RocePort(1), "local_ack_timeout_err", "local_ack_timeout_err", "loss", secs * 2, t));
    for (Observation& o : out) {
      if (o.attrs["counter"] == "rx_prio3_pause") *o.value += 5000 * secs;  // pauses too
    }
  };
  auto fs = Drive(d, 10, 4, 50, 10, lossy);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(Attr(fs[0], "loss"), "true");
  EXPECT_FALSE(OfClass(fs, FaultClass::kFabricCongestion));
  // Reordering at a rate adaptive routing produces is not loss.
  RoceFabricDetector quiet(RoceOptions{}, nullptr);
  auto reorder = [](int i, int k, int64_t t, std::vector<Observation>& out) {
    if (i == 0) out.push_back(Counter(RocePort(0), "oos_drop_count", "out_of_sequence", "loss", k * 50.0, t));
  };
  EXPECT_TRUE(Drive(quiet, 10, 4, 50, 10, reorder).empty());
}

TEST(FabricDetectRoce, CarrierFlapsAreLinkDown) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  auto flaps = [](int i, int k, int64_t t, std::vector<Observation>& out) {
    if (i != 3) return;
    for (Observation& o : out) {
      if (o.attrs["counter"] == "carrier_changes") *o.value = 2.0 * std::min(k, 3);
    }
    // The same flaps seen by the driver: must not count twice.
    out.push_back(Counter(Iface(3), "link_down_events_phy", "link_down_events_phy", "link", std::min(k, 3), t));
  };
  auto fs = Drive(d, 8, 4, 50, 10, flaps);
  const Finding* down = OfClass(fs, FaultClass::kIbLinkDown);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->component.Id(), "roce/mlx5_3/1");
  EXPECT_EQ(Attr(*down, "mode"), "flap");
  EXPECT_NE(down->summary.find("3 down/up cycles"), std::string::npos) << down->summary;
}

TEST(FabricDetectRoce, DowntrainedSpeedAgainstExpectedOrSiblings) {
  // Expected from the topology (collector attr).
  RoceFabricDetector d(RoceOptions{}, nullptr);
  d.Observe(Speed(Iface(0, true), 200, kT0, 400));
  auto fs = d.Findings();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(Attr(fs[0], "expected_gbps"), "400");
  EXPECT_EQ(Attr(fs[0], "switch_port"), "10");
  // No expected rate: 7 siblings at 400, one at 200.
  RoceFabricDetector s(RoceOptions{}, nullptr);
  auto slow = [](int i, int, int64_t, std::vector<Observation>& out) {
    if (i != 6) return;
    for (Observation& o : out) {
      if (o.kind == ObsKind::kEthSpeed) o.value = 200;
    }
  };
  fs = Drive(s, 1, 8, 50, 10, slow);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "roce/mlx5_6/1");
  EXPECT_EQ(Attr(fs[0], "expected_from"), "siblings");
  EXPECT_NE(fs[0].summary.find("7 of 8"), std::string::npos) << fs[0].summary;
  // A 4/4 split has no majority: nothing to say.
  RoceFabricDetector split(RoceOptions{}, nullptr);
  auto half = [](int i, int, int64_t, std::vector<Observation>& out) {
    for (Observation& o : out) {
      if (o.kind == ObsKind::kEthSpeed && i >= 4) o.value = 200;
    }
  };
  EXPECT_TRUE(Drive(split, 1, 8, 50, 10, half).empty());
}

TEST(FabricDetectRoce, CounterResetAndWrapAreANewBaselineNeverARate) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  const ComponentRef p = RocePort(0);
  // Near the top of a 64-bit counter, then back near zero (driver reload): no huge rate.
  d.Observe(Counter(p, "packet_seq_err", "packet_seq_err", "loss", 1.8e19, kT0));
  d.Observe(Counter(p, "packet_seq_err", "packet_seq_err", "loss", 1.8e19, kT0 + 10 * kSec));
  d.Observe(Counter(p, "packet_seq_err", "packet_seq_err", "loss", 3, kT0 + 20 * kSec));
  d.Observe(Counter(p, "packet_seq_err", "packet_seq_err", "loss", 4, kT0 + 30 * kSec));
  // Pauses reset while a storm-sized value was the baseline: no congestion.
  const ComponentRef e = Iface(0);
  d.Observe(Counter(e, "rx_prio3_pause", "rx_prio_pause", "congestion", 9e12, kT0));
  d.Observe(Counter(e, "rx_prio3_pause", "rx_prio_pause", "congestion", 10, kT0 + 10 * kSec));
  d.Observe(Counter(e, "rx_prio3_pause", "rx_prio_pause", "congestion", 20, kT0 + 20 * kSec));
  d.Observe(Counter(e, "rx_prio3_pause", "rx_prio_pause", "congestion", 30, kT0 + 30 * kSec));
  EXPECT_TRUE(d.Findings().empty());
}

TEST(FabricDetectRoce, PortDownForMinutesAfterBeingUp) {
  RoceFabricDetector d(RoceOptions{}, nullptr);
  d.Observe(State(Iface(2), true, kT0));
  for (int k = 1; k <= 20; ++k) d.Observe(State(Iface(2), false, kT0 + k * 10 * kSec));
  auto fs = d.Findings();
  const Finding* down = OfClass(fs, FaultClass::kIbLinkDown);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(Attr(*down, "mode"), "down");
  // Never up, not in the topology: maybe uncabled, not judged.
  RoceFabricDetector spare(RoceOptions{}, nullptr);
  for (int k = 0; k <= 20; ++k) spare.Observe(State(Iface(7), false, kT0 + k * 10 * kSec));
  EXPECT_TRUE(spare.Findings().empty());
}

TEST(FabricDetectRoce, TheIsolatorExplainsSlowStepsWithCongestionAndWithLinkFaults) {
  auto isolate = [](std::vector<Finding> fabric) {
    IsolateInput in;
    in.layers_with_data = {Layer::kOob, Layer::kGpu, Layer::kOs, Layer::kFabric, Layer::kWorkload};
    Finding slow;
    slow.layer = Layer::kWorkload;
    slow.fault_class = FaultClass::kWorkloadImbalance;
    slow.severity = Severity::kWarning;
    slow.component = ComponentRef{ComponentType::kHost, "job/train-42", {}};
    slow.first_ns = slow.last_ns = kT0 + 150 * kSec;
    slow.summary = "step time 1.3 s vs 1.0 s baseline";
    slow.evidence.push_back(
        Evidence{kT0 + 150 * kSec, std::nullopt, Source::kWorkload, "host/job/train-42", "step time 1.3 s", 1});
    fabric.push_back(slow);
    in.findings = std::move(fabric);
    return Isolate(in);
  };
  RoceFabricDetector storm(RoceOptions{}, nullptr);
  auto pfc = [](int, int k, int64_t, std::vector<Observation>& out) {
    for (Observation& o : out) {
      if (o.attrs["counter"] == "rx_prio3_pause" && k >= 5) *o.value += 8000.0 * (k - 5) * 10;
    }
  };
  auto ds = isolate(Drive(storm, 16, 4, 50, 10, pfc));
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kFabricCongestion);
  EXPECT_EQ(ds[0].action, Action::kMonitor);
  EXPECT_FALSE(ds[0].explains.empty());
  RoceFabricDetector link(RoceOptions{}, nullptr);
  auto crc = [](int i, int k, int64_t t, std::vector<Observation>& out) {
    if (i == 1) out.push_back(Counter(Iface(1, true), "rx_crc_errors_phy", "rx_crc_errors_phy", "link", k * 50.0, t));
  };
  ds = isolate(Drive(link, 16, 4, 50, 10, crc));
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kIbLinkErrors);
  EXPECT_EQ(ds[0].component.Id(), "roce/mlx5_1/1");
  EXPECT_EQ(ds[0].action, Action::kReseatOrReplaceLink);
  EXPECT_FALSE(ds[0].explains.empty());
}

}  // namespace
}  // namespace faultline
