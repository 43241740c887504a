// The mock BMC over real HTTPS on loopback: resources, errors, auth, sessions, paging,
// counters, TLS verification and start-up refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fixture.h"

namespace faultline::sim::testing {
namespace {

using nlohmann::json;

class MockBmcServer : public MockBmcFixture {
 protected:
  void SetUp() override { StartBmc(MiniOptions()); }
};

TEST_F(MockBmcServer, ServiceRootIsPublicAndOtherResourcesNeedAuth) {
  HttpResult root = Get("/redfish/v1/", /*auth=*/false);
  ASSERT_EQ(root.curl, CURLE_OK) << curl_easy_strerror(root.curl);
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(Json(root)["Id"], "RootService");
  EXPECT_EQ(root.headers["odata-version"], "4.0");
  EXPECT_EQ(Json(Get("/redfish", false))["v1"], "/redfish/v1/");

  HttpResult denied = Get("/redfish/v1/Chassis", /*auth=*/false);
  EXPECT_EQ(denied.status, 401);
  EXPECT_NE(denied.headers["www-authenticate"].find("Basic"), std::string::npos);
  EXPECT_EQ(Json(denied)["error"]["@Message.ExtendedInfo"][0]["MessageId"], "Base.1.8.NoValidSession");

  HttpRequest wrong = Req("/redfish/v1/Chassis");
  wrong.password = "guess";
  EXPECT_EQ(Fetch(wrong).status, 401);
  HttpResult ok = Get("/redfish/v1/Chassis");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(Json(ok)["Members"][0]["@odata.id"], "/redfish/v1/Chassis/1U");
}

TEST_F(MockBmcServer, TrailingSlashAbsentResourceAndMetadata) {
  EXPECT_EQ(Json(Get("/redfish/v1/Chassis/1U/Power/"))["Id"], "Power");
  EXPECT_EQ(Json(Get("/redfish/v1/Chassis/1U/Power"))["Id"], "Power");
  HttpResult missing = Get("/redfish/v1/Chassis/2U");
  EXPECT_EQ(missing.status, 404);
  json err = Json(missing);
  EXPECT_EQ(err["error"]["code"], "Base.1.8.ResourceNotFound");
  EXPECT_NE(err["error"]["message"].get<std::string>().find("/redfish/v1/Chassis/2U"), std::string::npos);
  HttpResult meta = Get("/redfish/v1/$metadata", false);
  EXPECT_EQ(meta.status, 200);
  EXPECT_NE(meta.headers["content-type"].find("xml"), std::string::npos);
  EXPECT_NE(meta.body.find("edmx:Edmx"), std::string::npos);
}

TEST_F(MockBmcServer, SessionLoginTokenUseDeleteAndLimit) {
  bmc_->SetMaxSessions(2);
  HttpRequest login = Req("/redfish/v1/SessionService/Sessions", false);
  login.method = "POST";
  login.headers = {"Content-Type: application/json"};
  login.body = R"({"UserName": "admin", "Password": "mockpassword"})";
  HttpResult first = Fetch(login);
  ASSERT_EQ(first.status, 201);
  const std::string token = first.headers["x-auth-token"];
  const std::string location = first.headers["location"];
  EXPECT_EQ(token.size(), 32u);
  EXPECT_EQ(location.rfind("/redfish/v1/SessionService/Sessions/", 0), 0u);
  EXPECT_EQ(Json(first)["UserName"], "admin");

  HttpRequest with_token = Req("/redfish/v1/Chassis/1U", false);
  with_token.headers = {"X-Auth-Token: " + token};
  EXPECT_EQ(Fetch(with_token).status, 200);
  with_token.headers = {"X-Auth-Token: " + std::string(32, '0')};
  EXPECT_EQ(Fetch(with_token).status, 401);

  ASSERT_EQ(Fetch(login).status, 201);
  HttpResult third = Fetch(login);
  EXPECT_EQ(third.status, 503);
  EXPECT_EQ(Json(third)["error"]["code"], "Base.1.8.SessionLimitExceeded");
  ASSERT_EQ(bmc_->open_sessions().size(), 2u);

  HttpResult listing = Get("/redfish/v1/SessionService/Sessions");
  EXPECT_EQ(Json(listing)["Members@odata.count"], 2);
  EXPECT_EQ(Json(Get(location))["UserName"], "admin");

  HttpRequest logout = Req(location, false);
  logout.method = "DELETE";
  logout.headers = {"X-Auth-Token: " + token};
  EXPECT_EQ(Fetch(logout).status, 204);
  EXPECT_EQ(Fetch(logout).status, 401);  // the token died with its session
  EXPECT_EQ(bmc_->open_sessions().size(), 1u);
  EXPECT_EQ(bmc_->sessions_created(), 2u);
  EXPECT_EQ(bmc_->sessions_deleted(), 1u);
  EXPECT_EQ(Fetch(login).status, 201);  // room again
}

TEST_F(MockBmcServer, BadLoginsAreRefused) {
  HttpRequest login = Req("/redfish/v1/SessionService/Sessions", false);
  login.method = "POST";
  login.body = R"({"UserName": "admin", "Password": "wrong"})";
  EXPECT_EQ(Fetch(login).status, 401);
  login.body = R"({"UserName": "admin"})";
  EXPECT_EQ(Fetch(login).status, 400);
  login.body = "{not json";
  EXPECT_EQ(Fetch(login).status, 400);
  EXPECT_TRUE(bmc_->open_sessions().empty());
}

TEST_F(MockBmcServer, UnsupportedMethodsAnswer405Or404) {
  HttpRequest patch = Req("/redfish/v1/Chassis/1U");
  patch.method = "PATCH";
  patch.body = "{}";
  EXPECT_EQ(Fetch(patch).status, 405);
  HttpRequest post = Req("/redfish/v1/Chassis/1U");
  post.method = "POST";
  EXPECT_EQ(Fetch(post).status, 405);
  post.url = bmc_->base_url() + "/redfish/v1/Nope";
  EXPECT_EQ(Fetch(post).status, 404);
  HttpRequest del = Req("/redfish/v1/SessionService/Sessions/999");
  del.method = "DELETE";
  EXPECT_EQ(Fetch(del).status, 404);
}

TEST_F(MockBmcServer, CountsRequestsPerPath) {
  bmc_->ResetCounters();
  Get("/redfish/v1/");
  Get("/redfish/v1");
  Get("/redfish/v1/Chassis?$top=1");
  EXPECT_EQ(bmc_->total_requests(), 3u);
  EXPECT_EQ(bmc_->requests_for("/redfish/v1"), 2u);
  EXPECT_EQ(bmc_->requests_for("/redfish/v1/Chassis"), 1u);
  EXPECT_EQ(bmc_->request_counts().size(), 2u);
}

TEST_F(MockBmcServer, ClientPagingWithSkipAndTop) {
  json page = Json(Get("/redfish/v1/Chassis/1U/Sensors?$skip=20&$top=3"));
  EXPECT_EQ(page["Members"].size(), 3u);
  EXPECT_EQ(page["Members@odata.count"], 25);
  EXPECT_EQ(page["Members"][0]["@odata.id"], "/redfish/v1/Chassis/1U/Sensors/Temp20");
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Sensors?$top=abc").status, 400);
  EXPECT_EQ(Get("/redfish/v1/Chassis/1U/Sensors?$skip=-2").status, 400);
}

TEST_F(MockBmcServer, StateEditsThroughTheApiAreServed) {
  ASSERT_TRUE(bmc_->SetValue("/redfish/v1/Chassis/1U", "/Status/Health", "\"Warning\"").ok());
  EXPECT_EQ(Json(Get("/redfish/v1/Chassis/1U"))["Status"]["Health"], "Warning");
  EXPECT_EQ(bmc_->SetValue("/redfish/v1/Chassis/1U", "/Status/Health", "Warning").code(),
            StatusCode::kInvalidArgument);  // not JSON text
  EXPECT_EQ(bmc_->SetValue("/redfish/v1/Chassis/1U", "Status", "1").code(), StatusCode::kInvalidArgument);
  auto uri = bmc_->AppendMember("/redfish/v1/Systems/1/LogServices/SEL/Entries", R"({"Message": "x"})");
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(Json(Get(*uri))["Message"], "x");
  EXPECT_EQ(json::parse(*bmc_->ResourceJson(*uri))["Message"], "x");
  EXPECT_EQ(bmc_->ResourceJson("/redfish/v1/Nope").status().code(), StatusCode::kNotFound);
}

TEST_F(MockBmcServer, TlsIsVerifiedAgainstTheGeneratedCertificate) {
  HttpRequest no_ca = Req("/redfish/v1/");
  no_ca.ca_path = "";  // system store: the self-signed certificate is unknown there
  HttpResult r = Fetch(no_ca);
  EXPECT_TRUE(r.curl == CURLE_PEER_FAILED_VERIFICATION || r.curl == CURLE_SSL_CACERT_BADFILE) << r.curl;
  EXPECT_EQ(r.status, 0);
  const std::string ca = bmc_->ca_cert_path();
  EXPECT_TRUE(std::filesystem::exists(ca));
  bmc_->Stop();
  EXPECT_FALSE(std::filesystem::exists(ca));  // generated material is removed
  bmc_->Stop();                               // idempotent
}

TEST(MockBmcStart, RefusesNonLoopbackMissingMockupAndBadOptions) {
  MockBmcOptions o = MiniOptions();
  o.bind_address = "0.0.0.0";
  EXPECT_EQ(MockBmc::Start(o).status().code(), StatusCode::kInvalidArgument);
  o.bind_address = "10.1.2.3";
  EXPECT_EQ(MockBmc::Start(o).status().code(), StatusCode::kInvalidArgument);
  o = MiniOptions();
  o.mockup_dir = "/nonexistent";
  EXPECT_EQ(MockBmc::Start(o).status().code(), StatusCode::kNotFound);
  o = MiniOptions();
  o.cert_path = "/tmp/only-cert.pem";
  EXPECT_EQ(MockBmc::Start(o).status().code(), StatusCode::kInvalidArgument);
  o = MiniOptions();
  o.cert_path = "/nonexistent/cert.pem";
  o.key_path = "/nonexistent/key.pem";
  EXPECT_FALSE(MockBmc::Start(o).ok());
  o = MiniOptions();
  o.scenario_file = DataDir() + "/nope.yaml";
  EXPECT_EQ(MockBmc::Start(o).status().code(), StatusCode::kNotFound);
}

TEST(MockBmcStart, PlainHttpOnIpv6LoopbackAndAFixedPortClash) {
  MockBmcOptions o = MiniOptions();
  o.tls = false;
  o.bind_address = "::1";
  auto bmc = MockBmc::Start(o);
  ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
  EXPECT_EQ((*bmc)->base_url().rfind("http://[::1]:", 0), 0u);
  EXPECT_TRUE((*bmc)->ca_cert_path().empty());
  HttpRequest r;
  r.url = (*bmc)->base_url() + "/redfish/v1";
  EXPECT_EQ(Fetch(r).status, 200);
  o.port = (*bmc)->port();  // taken
  EXPECT_EQ(MockBmc::Start(o).status().code(), StatusCode::kUnavailable);
}

TEST(MockBmcStart, UserSuppliedCertificateAndNoAuthMode) {
  const auto dir = std::filesystem::temp_directory_path() / ("mock-bmc-cert-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto paths = GenerateSelfSignedCert(dir.string());
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  EXPECT_EQ(std::filesystem::status(paths->key_path).permissions() & std::filesystem::perms::group_all,
            std::filesystem::perms::none);
  MockBmcOptions o = MiniOptions();
  o.cert_path = paths->cert_path;
  o.key_path = paths->key_path;
  o.auth_required = false;
  {
    auto bmc = MockBmc::Start(o);
    ASSERT_TRUE(bmc.ok()) << bmc.status().ToString();
    EXPECT_EQ((*bmc)->ca_cert_path(), paths->cert_path);
    HttpRequest r;
    r.url = (*bmc)->base_url() + "/redfish/v1/Chassis";
    r.ca_path = paths->cert_path;
    EXPECT_EQ(Fetch(r).status, 200);
  }
  EXPECT_TRUE(std::filesystem::exists(paths->cert_path));  // not ours to delete
  std::filesystem::remove_all(dir);
  EXPECT_EQ(GenerateSelfSignedCert("/nonexistent/dir").status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace faultline::sim::testing

namespace faultline::sim::testing {
namespace {

TEST(MockBmcServerPaging, FollowingNextLinksVisitsEveryMemberOnce) {
  MockBmcOptions o = MiniOptions();
  o.page_size = 10;
  o.auth_required = false;
  auto bmc = MockBmc::Start(o);
  ASSERT_TRUE(bmc.ok());
  std::vector<std::string> seen;
  std::string next = "/redfish/v1/Chassis/1U/Sensors";
  int pages = 0;
  while (!next.empty() && pages < 10) {
    HttpRequest r;
    r.url = (*bmc)->base_url() + next;
    r.ca_path = (*bmc)->ca_cert_path();
    auto doc = nlohmann::json::parse(Fetch(r).body);
    EXPECT_EQ(doc["Members@odata.count"], 25);
    for (const auto& m : doc["Members"]) seen.push_back(m["@odata.id"]);
    next = doc.value("@odata.nextLink", "");
    ++pages;
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(seen.front(), "/redfish/v1/Chassis/1U/Sensors/Inlet");
  EXPECT_EQ(seen.back(), "/redfish/v1/Chassis/1U/Sensors/Temp24");
}

}  // namespace
}  // namespace faultline::sim::testing
