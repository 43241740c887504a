// faultline_xid_events_total: XID events per GPU and code over the whole store, kernel-log
// events only, with the label sets capped (docs/metrics.md "XID events").
#include <gtest/gtest.h>

#include "api/metrics.h"
#include "api_fixture.h"
#include "parse/prometheus.h"

namespace faultline::api_test {
namespace {

constexpr const char* kXidMetric = "faultline_xid_events_total";

Observation Xid(ComponentRef gpu, int64_t code, int64_t t, Source source = Source::kKmsg, uint64_t count = 1) {
  Observation o;
  o.time_ns = t;
  o.node = kNode;
  o.layer = Layer::kOs;
  o.component = std::move(gpu);
  o.kind = code == 154 ? ObsKind::kXidRecoveryAction : ObsKind::kXid;
  o.code = code;
  o.source = source;
  o.count = count;
  // The store's dedup key is the line: each event its own row.
  o.raw = "NVRM: Xid (PCI:" + o.component.name + "): " + std::to_string(code) + " at " + std::to_string(t);
  return o;
}

ComponentRef BusGpu(const std::string& bdf) {
  ComponentRef c = GpuComponent(bdf);
  c.keys["bdf"] = bdf;
  return c;
}

class ApiMetricsXid : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(dir_.File("store.db"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }
  void Append(const std::vector<Observation>& obs) { ASSERT_TRUE(store_->Append(obs).ok()); }
  // gpu label -> xid label -> value, for the XID family only.
  std::map<std::string, std::map<std::string, double>> Scrape(const api::MetricsOptions& options = {}) {
    api::StoreProvider provider(*store_, {.node = kNode});
    auto text = api::RenderMetrics(provider, options);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    auto parsed = ParsePrometheusText(text.ok() ? *text : "");
    EXPECT_TRUE(parsed.ok() && parsed->error_count == 0) << *text;
    std::map<std::string, std::map<std::string, double>> out;
    if (!parsed.ok()) return out;
    if (parsed->metadata.count(kXidMetric)) type_ = parsed->metadata.at(kXidMetric).type;
    for (const PromSample& x : parsed->samples) {
      if (x.name == kXidMetric) out[*x.Label("gpu")][*x.Label("xid")] = x.value;
    }
    return out;
  }
  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::string type_;
};

TEST_F(ApiMetricsXid, CountsKernelEventsPerGpuAndCodeOverTheWholeStore) {
  const ComponentRef gpu0 = BusGpu("0000:0e:00.0");
  Append({
      Xid(gpu0, 13, kT0 - 2 * 86400 * kSec),            // two days before the window: still counted
      Xid(gpu0, 13, kT0 + 1 * kSec, Source::kKmsg, 5),  // a line the kernel repeated 5 times
      Xid(gpu0, 79, kT0 + 2 * kSec),
      Xid(Gpu(3), 48, kT0 + 3 * kSec),
      Xid(Gpu(3), 48, kT0 + 4 * kSec),
      Xid(Gpu(3), 154, kT0 + 5 * kSec),
      Xid(Gpu(3), 79, kT0 + 6 * kSec, Source::kDcgmExporter),  // DCGM's last-XID reading: not an event
      Xid(HostComponent("host"), 62, kT0 + 7 * kSec),
  });
  auto xid = Scrape();
  EXPECT_EQ(type_, "counter");
  EXPECT_EQ(xid["0000:0e:00.0"]["13"], 6);
  EXPECT_EQ(xid["0000:0e:00.0"]["79"], 1);
  EXPECT_EQ(xid["3"]["48"], 2);
  EXPECT_EQ(xid["3"]["154"], 1);
  EXPECT_EQ(xid["3"].count("79"), 0u);
  EXPECT_EQ(xid["unknown"]["62"], 1);
  // A new event raises its series by one; the rest stay as they were.
  Append({Xid(Gpu(3), 48, kT0 + 60 * kSec)});
  auto after = Scrape();
  EXPECT_EQ(after["3"]["48"], 3);
  EXPECT_EQ(after["0000:0e:00.0"]["13"], 6);
}

TEST_F(ApiMetricsXid, LabelSetsAreCappedWithTheRestUnderOther) {
  const ComponentRef gpu0 = BusGpu("0000:0e:00.0");
  // Codes in the order first seen: 13, 31, then 43 and 45 past a cap of 2.
  Append({Xid(gpu0, 13, kT0), Xid(gpu0, 31, kT0 + kSec), Xid(gpu0, 43, kT0 + 2 * kSec), Xid(gpu0, 45, kT0 + 3 * kSec),
          Xid(gpu0, 13, kT0 + 4 * kSec), Xid(Gpu(1), 79, kT0 + 5 * kSec), Xid(Gpu(2), 79, kT0 + 6 * kSec),
          Xid(Gpu(2), 48, kT0 + 7 * kSec)});
  api::MetricsOptions options;
  options.max_xid_codes_per_gpu = 2;
  options.max_xid_gpus = 2;
  auto xid = Scrape(options);
  ASSERT_EQ(xid.size(), 3u);  // 0000:0e:00.0, 1, and "other" for GPU 2
  EXPECT_EQ(xid["0000:0e:00.0"], (std::map<std::string, double>{{"13", 2}, {"31", 1}, {"other", 2}}));
  EXPECT_EQ(xid["1"], (std::map<std::string, double>{{"79", 1}}));
  EXPECT_EQ(xid["other"], (std::map<std::string, double>{{"48", 1}, {"79", 1}}));
  // A code first seen later never takes a named label from one seen earlier.
  Append({Xid(gpu0, 94, kT0 + 8 * kSec), Xid(gpu0, 31, kT0 + 9 * kSec)});
  xid = Scrape(options);
  EXPECT_EQ(xid["0000:0e:00.0"], (std::map<std::string, double>{{"13", 2}, {"31", 2}, {"other", 3}}));
}

TEST_F(ApiMetricsXid, NoXidNoSeries) {
  FillEveryMetric(*store_);
  EXPECT_TRUE(Scrape().empty());
}

}  // namespace
}  // namespace faultline::api_test
