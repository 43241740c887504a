#include "sources/ethernet/eth_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

TEST(EthParse, EthtoolStatsOfSeveralDriversAndForms) {
  // mlx5-like with the header the kernel's user tools print, odd spacing, a trailing blank.
  auto mlx = ParseEthtoolStatsText(
      "NIC statistics:\n     rx_packets_phy: 12\n     rx_prio3_pause: 4051\n  rx_crc_errors_phy:0\n\n");
  ASSERT_TRUE(mlx.ok()) << mlx.status().ToString();
  ASSERT_EQ(mlx->size(), 3u);
  EXPECT_EQ((*mlx)[1].name, "rx_prio3_pause");
  EXPECT_EQ((*mlx)[1].value, 4051u);
  EXPECT_EQ((*mlx)[2].value, 0u);
  // bnxt_en-like names with brackets and dots, no header, CRLF, the u64 maximum.
  auto bnxt = ParseEthtoolStatsText("[0]: rx_ucast_packets: 7\r\nrx_pfc_ena_frames_pri3: 18446744073709551615\r\n");
  ASSERT_TRUE(bnxt.ok()) << bnxt.status().ToString();
  ASSERT_EQ(bnxt->size(), 2u);
  EXPECT_EQ((*bnxt)[0].name, "[0]: rx_ucast_packets");  // the last ':' separates the value
  EXPECT_EQ((*bnxt)[1].value, UINT64_MAX);
}

TEST(EthParse, EthtoolStatsBadInputIsAClearErrorNeverACrash) {
  const std::string cases[] = {
      "",                                         // empty
      "NIC statistics:\n",                        // header only
      "rx_prio3_pause",                           // truncated: no ':'
      "rx_prio3_pause: ",                         // truncated: no value
      "rx_prio3_pause: many",                     // non-numeric
      "rx_prio3_pause: -5",                       // negative
      "rx_prio3_pause: 18446744073709551616",     // u64 + 1
      "rx_prio3_pause: 99999999999999999999999",  // huge
      "rx_prio3_pause: 12 13",                    // two values
      ": 12",                                     // no name
      std::string(40, 'a') + ": 1",               // name longer than ETH_GSTRING_LEN
      std::string("rx\x01prio: 1"),               // control byte in the name
  };
  for (const std::string& text : cases) {
    auto r = ParseEthtoolStatsText(text);
    ASSERT_FALSE(r.ok()) << "accepted: " << text;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << text;
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(EthParse, EthtoolStatsOversizedOrTooManyLinesIsRefused) {
  std::string many;
  for (size_t i = 0; i <= kMaxEthtoolStats; ++i) many += "s" + std::to_string(i) + ": 1\n";
  ASSERT_LE(many.size(), kMaxEthtoolTextBytes);
  auto r = ParseEthtoolStatsText(many);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too many"), std::string::npos);
  auto big = ParseEthtoolStatsText(std::string(kMaxEthtoolTextBytes + 1, 'x'));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("too large"), std::string::npos);
}

TEST(EthParse, OperstateSpeedAndCarrier) {
  EXPECT_EQ(*ParseOperstate("up\n"), "up");
  EXPECT_EQ(*ParseOperstate("lowerlayerdown\n"), "lowerlayerdown");
  EXPECT_FALSE(ParseOperstate("UP\n").ok());
  EXPECT_FALSE(ParseOperstate("up\ndown\n").ok());
  EXPECT_FALSE(ParseOperstate(std::string(100, 'u')).ok());
  EXPECT_EQ(*ParseSpeedMbps("400000\n"), 400000);
  EXPECT_EQ(*ParseSpeedMbps("25000"), 25000);
  EXPECT_EQ(ParseSpeedMbps("-1\n").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(ParseSpeedMbps("4294967295\n").status().code(), StatusCode::kUnsupported);
  for (const char* bad : {"-5\n", "fast\n", "", "99999999999\n", "400000 Mb/s\n", "1e5\n"}) {
    EXPECT_EQ(ParseSpeedMbps(bad).status().code(), StatusCode::kCorrupt) << bad;
  }
  EXPECT_TRUE(*ParseCarrier("1\n"));
  EXPECT_FALSE(*ParseCarrier("0\n"));
  EXPECT_FALSE(ParseCarrier("2\n").ok());
  EXPECT_FALSE(ParseCarrier("").ok());
}

TEST(EthParse, HostileInterfaceNamesNeverBecomePaths) {
  for (const char* bad : {"", ".", "..", "../etc", "eth0/../../x", "a:b", "has space", "tab\tname", "sixteen_chars_xx",
                          "new\nline", "\x7f"}) {
    EXPECT_FALSE(IsSafeInterfaceName(bad)) << bad;
  }
  for (const char* good : {"eth2", "ens1f0np0", "enp27s0f1", "eth-0.100", "a"}) EXPECT_TRUE(IsSafeInterfaceName(good));
  EXPECT_TRUE(IsSafeRdmaName("mlx5_bond_0"));
  EXPECT_TRUE(IsSafeRdmaName("rocep8s0f0"));
  EXPECT_FALSE(IsSafeRdmaName("../mlx5_0"));
  EXPECT_FALSE(IsSafeRdmaName(std::string(64, 'm')));
}

TEST(EthParse, CounterNamesMapToOneCanonicalNameAndGroup) {
  auto p3 = LookupEthCounter("rx_prio3_pause");
  ASSERT_TRUE(p3);
  EXPECT_EQ(p3->canonical, "rx_prio_pause");
  EXPECT_EQ(p3->priority, 3);
  EXPECT_EQ(p3->group, EthCounterGroup::kCongestion);
  auto dur = LookupEthCounter("rx_prio7_pause_duration");
  ASSERT_TRUE(dur);
  EXPECT_EQ(dur->canonical, "rx_prio_pause_duration");
  EXPECT_EQ(dur->priority, 7);
  auto bnxt = LookupEthCounter("rx_pfc_ena_frames_pri5");
  ASSERT_TRUE(bnxt);
  EXPECT_EQ(bnxt->canonical, "rx_prio_pause");
  EXPECT_EQ(bnxt->priority, 5);
  EXPECT_EQ(LookupEthCounter("tx_prio3_pause")->group, EthCounterGroup::kHostDrain);
  EXPECT_EQ(LookupEthCounter("rx_fcs_err_frames")->canonical, "rx_crc_errors_phy");
  EXPECT_EQ(LookupEthCounter("carrier_changes")->group, EthCounterGroup::kLink);
  for (const char* no : {"rx_prio8_pause", "rx_prio_pause", "rx_prio33_pause", "rx_bytes_phy", "tx0_packets", ""}) {
    EXPECT_FALSE(LookupEthCounter(no)) << no;
  }
  EXPECT_EQ(LookupRoceCounter("np_cnp_sent")->group, EthCounterGroup::kCongestion);
  EXPECT_EQ(LookupRoceCounter("local_ack_timeout_err")->group, EthCounterGroup::kLoss);
  EXPECT_EQ(LookupRoceCounter("to_retransmits")->canonical, "local_ack_timeout_err");  // bnxt_re
  EXPECT_EQ(LookupRoceCounter("oos_drop_count")->canonical, "out_of_sequence");
  EXPECT_EQ(LookupRoceCounter("rx_ecn_marked_pkts")->canonical, "np_ecn_marked_roce_packets");
  EXPECT_FALSE(LookupRoceCounter("lifespan"));  // not a counter (cache age)
  EXPECT_FALSE(LookupRoceCounter("rx_write_requests"));
  for (const std::string& f : RoceCounterFiles()) EXPECT_TRUE(LookupRoceCounter(f)) << f;
}

}  // namespace
}  // namespace faultline
