#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "core/clock.h"
#include "dcgm_test_util.h"
#include "sources/dcgm_exporter/dcgm_exporter.h"

namespace faultline {
namespace {

constexpr int64_t kNow = 1'764'400'000LL * 1'000'000'000LL;

// An in-process dcgm-exporter stand-in on 127.0.0.1, stopped by the destructor.
class LoopbackExporter {
 public:
  LoopbackExporter() {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(body_, "text/plain; version=0.0.4");
    });
    server_.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      res.set_content("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 40\n", "text/plain");
    });
    server_.Get("/missing", [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    server_.Get("/moved", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/metrics"); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~LoopbackExporter() {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path, const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_) + path;
  }
  void SetBody(std::string body) { body_ = std::move(body); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string body_;
};

class DcgmSourceTest : public ::testing::Test {
 protected:
  Result<DcgmCollection> Collect(DcgmExporterOptions opt) {
    DcgmExporterSource source(std::move(opt), clock_, &fetcher_);
    return source.Collect();
  }
  FakeClock clock_{kNow};
  CurlHttpFetcher fetcher_;
};

TEST_F(DcgmSourceTest, ReadsASavedScrapeFile) {
  DcgmExporterOptions opt;
  opt.file = testing::DcgmDataPath("h100_healthy.prom");
  auto r = Collect(opt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->errors.empty());
  EXPECT_EQ(r->blank_values, 24u);
  ASSERT_FALSE(r->observations.empty());
  EXPECT_EQ(r->observations.front().time_ns, kNow);
  EXPECT_EQ(r->observations.front().kind, ObsKind::kGpuIdentity);
}

TEST_F(DcgmSourceTest, FileErrorsAreValues) {
  DcgmExporterOptions opt;
  opt.file = "/nonexistent/dir/scrape.prom";
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kNotFound);
  opt.file = testing::DcgmDataPath("h100_healthy.prom");
  opt.max_file_bytes = 1000;
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kCorrupt);
  opt.url = "http://127.0.0.1:1/metrics";
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kInvalidArgument) << "both url and file";
  EXPECT_EQ(Collect(DcgmExporterOptions{}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DcgmSourceTest, MalformedLinesAreReportedNotFatal) {
  const std::string path = std::string(FAULTLINE_BINARY_DIR) + "/dcgm_malformed_test.prom";
  {
    std::ofstream out(path);
    out << "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu=\"1\" 41\nDCGM_FI_DEV_ECC_DBE_VOL_TOTAL 3\n";
  }
  DcgmExporterOptions opt;
  opt.file = path;
  auto r = Collect(opt);
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->errors.size(), 2u);
  EXPECT_NE(r->errors[0].find("line 2"), std::string::npos);
  EXPECT_NE(r->errors[1].find("no gpu, UUID or pci_bus_id"), std::string::npos);
  EXPECT_EQ(r->observations.size(), 2u);  // identity + temperature of gpu/0
}

TEST_F(DcgmSourceTest, ScrapesOverHttpOnLoopback) {
  LoopbackExporter exporter;
  exporter.SetBody(testing::ReadDcgmData("h100_faulty.prom"));
  DcgmExporterOptions opt;
  opt.url = exporter.Url("/metrics");
  opt.node = "override-node";
  auto r = Collect(opt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool saw_dbe = false;
  for (const Observation& o : r->observations) {
    EXPECT_EQ(o.node, "override-node");
    saw_dbe |= o.kind == ObsKind::kEccDbe && o.component.Id() == "gpu/3" && o.value == 2.0;
  }
  EXPECT_TRUE(saw_dbe);
}

TEST_F(DcgmSourceTest, HttpFailuresAreTypedErrors) {
  LoopbackExporter exporter;
  DcgmExporterOptions opt;
  opt.url = exporter.Url("/missing");
  auto r = Collect(opt);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("HTTP 404"), std::string::npos);

  opt.url = exporter.Url("/moved");
  r = Collect(opt);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << "redirects are not followed";
  EXPECT_NE(r.status().message().find("HTTP 302"), std::string::npos);

  opt.url = exporter.Url("/slow");
  opt.http.timeout_ms = 200;
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kTimeout);

  opt.url = exporter.Url("/metrics", "https");  // TLS to a plain-HTTP port
  opt.http.timeout_ms = 2000;
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kUnavailable);

  opt.url = "file:///etc/passwd";
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kInvalidArgument);
  opt.url = "gopher://127.0.0.1/";
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DcgmSourceTest, BodyOverTheCapIsRejected) {
  LoopbackExporter exporter;
  exporter.SetBody(std::string(2 << 20, '#'));
  DcgmExporterOptions opt;
  opt.url = exporter.Url("/metrics");
  opt.http.max_bytes = 1 << 20;
  auto r = Collect(opt);
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  opt.http.max_bytes = 4 << 20;
  EXPECT_TRUE(Collect(opt).ok());
}

TEST_F(DcgmSourceTest, ConnectionRefusedIsUnavailable) {
  std::string url;
  {
    LoopbackExporter exporter;
    url = exporter.Url("/metrics");
  }
  DcgmExporterOptions opt;
  opt.url = url;
  EXPECT_EQ(Collect(opt).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace faultline
