// The JetStream transport against a real nats-server on loopback.
#include "fleet/nats/client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include "nats_server.h"

namespace faultline::fleet::nats {
namespace {

using testing::ConnectOrFail;
using testing::EnsureStreamRetrying;
using testing::NatsServer;
using testing::OptionsFor;
using testing::TempDir;
using testing::WaitUntil;

StreamConfig TestStream() {
  StreamConfig c;
  c.name = "FLTEST";
  c.subjects = {"faultline.>"};
  c.max_age_ns = int64_t{3600} * 1'000'000'000;
  c.max_bytes = 64 << 20;
  c.max_msg_size = 64 << 10;
  c.duplicate_window_ns = int64_t{120} * 1'000'000'000;
  return c;
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

class NatsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS_SERVER();
    server_ = std::make_unique<NatsServer>(dir_.File("srv"), "s1");
    ASSERT_TRUE(server_->Start());
    conn_ = ConnectOrFail(OptionsFor({server_->url()}));
    ASSERT_NE(conn_, nullptr);
    ASSERT_TRUE(EnsureStreamRetrying(*conn_, TestStream()).ok());
  }

  // Every message in the stream, fetched through a fresh durable and acked.
  std::vector<std::string> ReadAll(const std::string& durable, size_t expect) {
    ConsumerConfig cc;
    cc.stream = "FLTEST";
    cc.durable = durable;
    auto consumer = conn_->BindPullConsumer(cc);
    EXPECT_TRUE(consumer.ok()) << consumer.status().ToString();
    std::vector<std::string> out;
    if (!consumer.ok()) return out;
    WaitUntil([&] {
      auto batch = (*consumer)->Fetch(256, 200'000'000);
      if (batch.ok()) {
        for (auto& m : *batch) {
          out.emplace_back(m.data());
          EXPECT_TRUE(m.Ack().ok());
        }
      }
      return out.size() >= expect;
    });
    // Nothing beyond what was expected.
    auto extra = (*consumer)->Fetch(16, 300'000'000);
    if (extra.ok()) {
      for (auto& m : *extra) out.emplace_back(m.data());
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(NatsClientTest, StreamIsCreatedWithItsLimitsAndUpdatedWhenTheyChange) {
  auto st = conn_->GetStream("FLTEST");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->config.subjects, std::vector<std::string>{"faultline.>"});
  EXPECT_EQ(st->config.max_age_ns, int64_t{3600} * 1'000'000'000);
  EXPECT_EQ(st->config.max_bytes, 64 << 20);
  EXPECT_EQ(st->config.max_msg_size, 64 << 10);
  EXPECT_EQ(st->config.duplicate_window_ns, int64_t{120} * 1'000'000'000);
  EXPECT_EQ(st->config.replicas, 1);

  StreamConfig changed = TestStream();
  changed.max_age_ns = int64_t{7200} * 1'000'000'000;
  changed.max_msg_size = 128 << 10;
  // Changed only where asked for (stream_settings_test.cc: the rest is kept).
  StreamOverrides asked;
  asked.max_age = true;
  asked.max_msg_size = true;
  auto updated = conn_->EnsureStream(changed, asked);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  auto again = conn_->GetStream("FLTEST");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->config.max_age_ns, int64_t{7200} * 1'000'000'000);
  EXPECT_EQ(again->config.max_msg_size, 128 << 10);
  // Ensuring what is already there changes nothing and succeeds.
  auto again2 = conn_->EnsureStream(changed, asked);
  ASSERT_TRUE(again2.ok());
  EXPECT_TRUE(again2->notes.empty()) << again2->notes.front();
}

TEST_F(NatsClientTest, ADuplicateMessageIdIsStoredOnce) {
  auto first = conn_->Publish("faultline.s.r.n1.obs", "payload-1", "n1/obs/1-10");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->duplicate);
  EXPECT_EQ(first->stream, "FLTEST");
  auto second = conn_->Publish("faultline.s.r.n1.obs", "payload-1", "n1/obs/1-10");
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->duplicate);
  EXPECT_EQ(second->sequence, first->sequence);
  auto other = conn_->Publish("faultline.s.r.n1.obs", "payload-2", "n1/obs/11-20");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->duplicate);
  EXPECT_EQ(conn_->GetStream("FLTEST")->messages, 2u);
  EXPECT_EQ(ReadAll("dup", 2), (std::vector<std::string>{"payload-1", "payload-2"}));
}

TEST_F(NatsClientTest, ABatchReportsEveryAckInOrderAndAResentBatchIsAllDuplicates) {
  std::vector<OutMessage> batch;
  for (int i = 0; i < 600; ++i) {
    batch.push_back(
        {"faultline.s.r.n" + std::to_string(i % 7) + ".obs", "m" + std::to_string(i), "id-" + std::to_string(i)});
  }
  auto results = conn_->PublishBatch(batch, 10'000'000'000);
  ASSERT_EQ(results.size(), batch.size());
  std::set<uint64_t> seqs;
  for (const auto& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_FALSE(r.ack.duplicate);
    seqs.insert(r.ack.sequence);
  }
  EXPECT_EQ(seqs.size(), batch.size());
  auto again = conn_->PublishBatch(batch, 10'000'000'000);
  for (const auto& r : again) {
    ASSERT_TRUE(r.status.ok());
    EXPECT_TRUE(r.ack.duplicate);
  }
  EXPECT_EQ(conn_->GetStream("FLTEST")->messages, batch.size());
  auto all = ReadAll("batch", batch.size());
  ASSERT_EQ(all.size(), batch.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], batch[i].data);
}

TEST_F(NatsClientTest, AnOversizedMessageFailsAloneInItsBatch) {
  std::vector<OutMessage> batch = {{"faultline.s.r.n1.obs", "small-1", "a"},
                                   {"faultline.s.r.n1.obs", std::string(100 << 10, 'x'), "b"},
                                   {"faultline.s.r.n1.obs", "small-2", "c"},
                                   {"faultline.s.r.n1.obs", "no-id", ""}};
  auto results = conn_->PublishBatch(batch, 5'000'000'000);
  EXPECT_TRUE(results[0].status.ok());
  EXPECT_FALSE(results[1].status.ok());  // over the stream's max_msg_size (64 KiB)
  EXPECT_TRUE(results[2].status.ok());
  EXPECT_EQ(results[3].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll("oversize", 2), (std::vector<std::string>{"small-1", "small-2"}));
}

TEST_F(NatsClientTest, TwoMembersOfOneDurableShareItsMessages) {
  std::vector<OutMessage> batch;
  for (int i = 0; i < 400; ++i) batch.push_back({"faultline.s.r.n1.obs", std::to_string(i), std::to_string(i)});
  for (const auto& r : conn_->PublishBatch(batch, 10'000'000'000)) ASSERT_TRUE(r.status.ok());
  auto other = ConnectOrFail(OptionsFor({server_->url()}));
  ASSERT_NE(other, nullptr);
  ConsumerConfig cc;
  cc.stream = "FLTEST";
  cc.durable = "shared";
  auto a = conn_->BindPullConsumer(cc);
  auto b = other->BindPullConsumer(cc);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  std::multiset<std::string> got_a, got_b;
  WaitUntil([&] {
    for (auto* side : {&a, &b}) {
      auto msgs = (**side)->Fetch(25, 200'000'000);
      if (!msgs.ok()) continue;
      for (auto& m : *msgs) {
        (side == &a ? got_a : got_b).insert(std::string(m.data()));
        EXPECT_TRUE(m.Ack().ok());
      }
    }
    return got_a.size() + got_b.size() >= batch.size();
  });
  EXPECT_GT(got_a.size(), 0u);
  EXPECT_GT(got_b.size(), 0u);
  std::set<std::string> all(got_a.begin(), got_a.end());
  for (const auto& s : got_b) EXPECT_TRUE(all.insert(s).second) << s << " delivered to both members";
  EXPECT_EQ(all.size(), batch.size());
  // A member asking for another partition under the same name is refused.
  ConsumerConfig wrong = cc;
  wrong.filter_subject = "faultline.other.>";
  EXPECT_EQ(other->BindPullConsumer(wrong).status().code(), StatusCode::kInvalidArgument);
  wrong.durable = "bad.name";
  EXPECT_EQ(other->BindPullConsumer(wrong).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(NatsClientTest, NakRedeliversWithACountAndTermDoesNot) {
  ASSERT_TRUE(conn_->Publish("faultline.s.r.n1.obs", "retry-me", "r1").ok());
  ASSERT_TRUE(conn_->Publish("faultline.s.r.n1.obs", "drop-me", "t1").ok());
  ConsumerConfig cc;
  cc.stream = "FLTEST";
  cc.durable = "naktest";
  auto c = conn_->BindPullConsumer(cc);
  ASSERT_TRUE(c.ok());
  auto first = (*c)->Fetch(2, 2'000'000'000);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].msg_id(), "r1");
  EXPECT_EQ((*first)[0].delivery_count(), 1u);
  EXPECT_EQ((*first)[0].stream_sequence(), 1u);
  EXPECT_EQ((*first)[0].subject(), "faultline.s.r.n1.obs");
  ASSERT_TRUE((*first)[0].Nak().ok());
  ASSERT_TRUE((*first)[1].Term().ok());
  std::vector<JsMessage> again;
  WaitUntil([&] {
    auto m = (*c)->Fetch(2, 200'000'000);
    if (m.ok()) {
      for (auto& x : *m) again.push_back(std::move(x));
    }
    return !again.empty();
  });
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].data(), "retry-me");
  EXPECT_EQ(again[0].delivery_count(), 2u);
  ASSERT_TRUE(again[0].AckSync().ok());
  auto none = (*c)->Fetch(2, 300'000'000);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Deferred acks (one packed buffer) ack exactly the messages they name: the others come
// back after ack_wait with their delivery count up and their stream sequence kept.
TEST_F(NatsClientTest, DeferredAcksAckExactlyTheMessagesTheyName) {
  std::vector<OutMessage> batch;
  for (int i = 1; i <= 6; ++i)
    batch.push_back({"faultline.s.r.n1.obs", "m" + std::to_string(i), "d" + std::to_string(i)});
  for (const auto& r : conn_->PublishBatch(batch, 5'000'000'000)) ASSERT_TRUE(r.status.ok());
  ConsumerConfig cc;
  cc.stream = "FLTEST";
  cc.durable = "deferred";
  cc.ack_wait_ns = 1'000'000'000;
  auto c = conn_->BindPullConsumer(cc);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<JsMessage> got;
  WaitUntil([&] {
    auto m = (*c)->Fetch(6, 500'000'000);
    if (m.ok()) {
      for (auto& x : *m) got.push_back(std::move(x));
    }
    return got.size() >= 6;
  });
  ASSERT_EQ(got.size(), 6u);
  DeferredAcks acks;
  acks.Add("");  // nothing to ack: ignored
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].stream_sequence(), i + 1);
    EXPECT_EQ(got[i].delivery_count(), 1u);
    EXPECT_EQ(got[i].msg_id(), "d" + std::to_string(i + 1));
    if (i % 2 == 0) acks.Add(got[i].ack_subject());
  }
  EXPECT_EQ(acks.size(), 3u);
  ASSERT_TRUE(conn_->AckLater(acks, 2'000'000'000).ok());
  got.clear();  // dropped unacked: m2, m4 and m6 come back
  std::vector<JsMessage> again;
  WaitUntil([&] {
    auto m = (*c)->Fetch(6, 300'000'000);
    if (m.ok()) {
      for (auto& x : *m) again.push_back(std::move(x));
    }
    return again.size() >= 3;
  });
  ASSERT_EQ(again.size(), 3u);
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(again[i].data(), "m" + std::to_string(2 * i + 2));
    EXPECT_EQ(again[i].stream_sequence(), 2 * i + 2);
    EXPECT_EQ(again[i].delivery_count(), 2u);
    ASSERT_TRUE(again[i].AckSync().ok());
  }
  acks.clear();
  EXPECT_TRUE(acks.empty());
  EXPECT_EQ(acks.bytes(), 0u);
}

// An existing durable keeps the limits it was made with; a member binding it learns them
// (the consumer loop sizes its deferred acks by them).
TEST_F(NatsClientTest, BindingAnExistingDurableReportsTheServersLimits) {
  ConsumerConfig cc;
  cc.stream = "FLTEST";
  cc.durable = "limits";
  cc.max_ack_pending = 7;
  auto first = conn_->BindPullConsumer(cc);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->config().max_ack_pending, 7);
  cc.max_ack_pending = 1'000'000;
  auto second = conn_->BindPullConsumer(cc);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->config().max_ack_pending, 7);
}

TEST_F(NatsClientTest, KeyValuePutGetCreateDelete) {
  auto kv = conn_->EnsureKeyValue(KvConfig{.bucket = "fltest-kv"});
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  auto missing = (*kv)->Get("snapshot.a");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  std::string bytes("\x00\x01binary\xff", 9);
  auto r1 = (*kv)->Put("snapshot.a", bytes);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  auto got = (*kv)->Get("snapshot.a");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->value, bytes);
  EXPECT_EQ((*got)->revision, *r1);
  auto r2 = (*kv)->Put("snapshot.a", "v2");
  ASSERT_TRUE(r2.ok());
  EXPECT_GT(*r2, *r1);
  EXPECT_EQ((*kv)->Create("snapshot.a", "v3").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*kv)->Create("snapshot.b", "b").ok());
  ASSERT_TRUE((*kv)->Delete("snapshot.a").ok());
  auto deleted = (*kv)->Get("snapshot.a");
  ASSERT_TRUE(deleted.ok());
  EXPECT_FALSE(deleted->has_value());
  // A second handle (a restarted analyzer) binds the same bucket and reads it.
  auto other = conn_->EnsureKeyValue(KvConfig{.bucket = "fltest-kv"});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*(*other)->Get("snapshot.b"))->value, "b");
}

TEST_F(NatsClientTest, AKilledServerMakesCallsUnavailableAndTheConnectionComesBack) {
  ASSERT_TRUE(conn_->Publish("faultline.s.r.n1.obs", "before", "before").ok());
  server_->Kill();
  WaitUntil([&] { return !conn_->IsConnected(); });
  auto down = conn_->Publish("faultline.s.r.n1.obs", "during", "during");
  ASSERT_FALSE(down.ok());
  EXPECT_TRUE(down.status().code() == StatusCode::kUnavailable || down.status().code() == StatusCode::kTimeout)
      << down.status().ToString();
  auto batch = conn_->PublishBatch({{"faultline.s.r.n1.obs", "during-b", "during-b"}}, 500'000'000);
  EXPECT_FALSE(batch[0].status.ok());
  ASSERT_TRUE(server_->Start());
  ASSERT_TRUE(WaitUntil([&] { return conn_->IsConnected(); }));
  Result<PubAck> after = Status(StatusCode::kUnavailable, "");
  WaitUntil([&] {
    after = conn_->Publish("faultline.s.r.n1.obs", "after", "after");
    return after.ok();
  });
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  // The stream (file storage) kept what was acked before the crash.
  auto all = ReadAll("restart", 2);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all.front(), "before");
  EXPECT_EQ(all.back(), "after");
}

TEST(NatsConnectTest, NoServerIsUnavailable) {
  SKIP_WITHOUT_NATS_SERVER();
  const int port = testing::FreeLoopbackPort();
  auto c = Connection::Connect(OptionsFor({"nats://127.0.0.1:" + std::to_string(port)}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
  EXPECT_EQ(Connection::Connect(OptionsFor({})).status().code(), StatusCode::kInvalidArgument);
}

TEST(NatsConnectTest, CredentialsComeFromAPrivateFileAndAreNeverInErrors) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsServer server(dir.File("srv"), "auth", {"--user", "agent", "--pass", "s3cret-pw"});
  ASSERT_TRUE(server.Start());
  ConnectOptions o = OptionsFor({server.url()});
  o.credentials_file = dir.File("creds");
  WriteFile(o.credentials_file, "agent:s3cret-pw\n", 0600);
  EXPECT_NE(ConnectOrFail(o), nullptr);

  WriteFile(o.credentials_file, "agent:wrong-pw\n", 0600);
  auto refused = Connection::Connect(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << refused.status().ToString();
  EXPECT_EQ(refused.status().message().find("wrong-pw"), std::string::npos);

  WriteFile(o.credentials_file, "agent:s3cret-pw\n", 0644);
  auto open_file = Connection::Connect(o);
  EXPECT_EQ(open_file.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(open_file.status().message().find("s3cret"), std::string::npos);

  o.credentials_file = dir.File("absent");
  EXPECT_EQ(Connection::Connect(o).status().code(), StatusCode::kNotFound);
  o.credentials_file.clear();
  EXPECT_EQ(Connection::Connect(o).status().code(), StatusCode::kPermissionDenied);
}

TEST(NatsConnectTest, ATokenFileAuthenticates) {
  SKIP_WITHOUT_NATS_SERVER();
  TempDir dir;
  NatsServer server(dir.File("srv"), "tok", {"--auth", "tok-123abc"});
  ASSERT_TRUE(server.Start());
  ConnectOptions o = OptionsFor({server.url()});
  o.credentials_file = dir.File("token");
  WriteFile(o.credentials_file, "tok-123abc\n", 0600);
  EXPECT_NE(ConnectOrFail(o), nullptr);
}

TEST(NatsConnectTest, AMissingCaFileIsAnError) {
  SKIP_WITHOUT_NATS_SERVER();
  ConnectOptions o = OptionsFor({"nats://127.0.0.1:1"});
  o.ca_file = "/nonexistent/ca.pem";
  auto c = Connection::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("ca.pem"), std::string::npos);
}

TEST(NatsCredentialsTest, ParsesEachFormAndRejectsBadInput) {
  auto up = ParseCredentials("user:pa:ss\n# comment\n");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->user, "user");
  EXPECT_EQ(up->password, "pa:ss");
  auto tok = ParseCredentials("  abcdef123\r\n");
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->token, "abcdef123");
  auto creds = ParseCredentials(
      "-----BEGIN NATS USER JWT-----\neyJ0eXAi\n------END NATS USER JWT------\n"
      "-----BEGIN USER NKEY SEED-----\nSUAM\n------END USER NKEY SEED------\n");
  ASSERT_TRUE(creds.ok());
  EXPECT_TRUE(creds->creds_file);
  for (std::string_view bad :
       {std::string_view(""), std::string_view("\n"), std::string_view(":pw"), std::string_view("user:"),
        std::string_view("-----BEGIN NATS USER JWT-----\nx"), std::string_view("a\0b", 3)}) {
    EXPECT_EQ(ParseCredentials(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseCredentials(std::string(65 << 10, 'a')).status().code(), StatusCode::kInvalidArgument);
}

TEST(NatsUrlTest, RedactsUserInfoAndSplitsLists) {
  EXPECT_EQ(RedactUrl("nats://u:p@127.0.0.1:4222"), "nats://***@127.0.0.1:4222");
  EXPECT_EQ(RedactUrl("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  EXPECT_EQ(RedactUrl("tok@host:1"), "***@host:1");
  EXPECT_EQ(SplitUrls(" nats://a:1 ,, nats://b:2,"), (std::vector<std::string>{"nats://a:1", "nats://b:2"}));
  EXPECT_TRUE(SplitUrls("").empty());
}

TEST(NatsStatusTest, MapsLibnatsStatusesToFaultlineCodes) {
  EXPECT_EQ(MapNatsStatus(6 /*NATS_NO_SERVER*/, 0), StatusCode::kUnavailable);
  EXPECT_EQ(MapNatsStatus(0, 10059), StatusCode::kNotFound);
  EXPECT_EQ(MapNatsStatus(0, 0), StatusCode::kOk);
}

}  // namespace
}  // namespace faultline::fleet::nats
