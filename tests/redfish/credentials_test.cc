#include "sources/redfish/credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

namespace faultline::redfish {
namespace {

std::string WriteFile(const std::string& name, const std::string& text, mode_t mode) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(RedfishCredentials, ReadsPrivatePasswordFile) {
  auto p = ReadPasswordFile(WriteFile("pw_ok", "s3cret\r\nignored\n", 0600));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "s3cret");
}

TEST(RedfishCredentials, RefusesGroupOrWorldReadableFile) {
  for (mode_t mode : {0640, 0604, 0660}) {
    auto p = ReadPasswordFile(WriteFile("pw_open", "s3cret\n", mode));
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(p.status().message().find("s3cret"), std::string::npos);
  }
}

TEST(RedfishCredentials, MissingAndEmptyFiles) {
  EXPECT_EQ(ReadPasswordFile("/nonexistent/pw").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadPasswordFile(WriteFile("pw_empty", "", 0600)).status().code(), StatusCode::kInvalidArgument);
}

TEST(RedfishCredentials, FromEnvironment) {
  setenv("FL_TEST_USER", "admin", 1);
  setenv("FL_TEST_PW", "pw", 1);
  auto c = CredentialsFromEnv("FL_TEST_USER", "FL_TEST_PW");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->user, "admin");
  unsetenv("FL_TEST_PW");
  EXPECT_EQ(CredentialsFromEnv("FL_TEST_USER", "FL_TEST_PW").status().code(), StatusCode::kNotFound);
}

TEST(RedfishCredentials, BasicHeaderIsRfc7617) {
  EXPECT_EQ(BasicAuthHeader({"Aladdin", "open sesame"}), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(BasicAuthHeader({"a", "b"}), "Basic YTpi");
  EXPECT_EQ(BasicAuthHeader({"ab", "c"}), "Basic YWI6Yw==");
}

}  // namespace
}  // namespace faultline::redfish
