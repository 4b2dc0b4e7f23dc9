// Calibration file format, fitting and prediction, and the host cost model built on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "tuner/calibration.h"
#include "tuner/host_model.h"
#include "util/last_error.h"

namespace accl {
namespace {

CalibrationCurve curve(int func, int algo, int proto, int ranks, std::vector<CalibrationPoint> pts) {
  CalibrationCurve c;
  c.func = func;
  c.algo = algo;
  c.proto = proto;
  c.nRanks = ranks;
  c.points = std::move(pts);
  c.fit();
  return c;
}

TEST(TunerCalibration, FitRecoversLatencyAndBandwidthOfExactData) {
  // t = 5 us + bytes / (2 GB/s) = 5 + bytes / 2000
  std::vector<CalibrationPoint> pts;
  for (size_t b = 8; b <= (64u << 20); b *= 4) pts.push_back({b, 5.0 + double(b) / 2000.0});
  CalibrationCurve c = curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 4, pts);
  EXPECT_NEAR(c.latUs, 5.0, 1e-3);
  EXPECT_NEAR(c.gbps, 2.0, 1e-4);
}

TEST(TunerCalibration, PredictInterpolatesBetweenPointsAndExtrapolatesBeyond) {
  CalibrationCurve c = curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 2, {{100, 10}, {200, 30}, {400, 50}});
  EXPECT_DOUBLE_EQ(c.predictUs(50), 10);    // below the range: the first point
  EXPECT_DOUBLE_EQ(c.predictUs(100), 10);   // measured points are reproduced
  EXPECT_DOUBLE_EQ(c.predictUs(150), 20);   // halfway between 10 and 30
  EXPECT_DOUBLE_EQ(c.predictUs(300), 40);
  // Beyond: the last point plus the steeper of the last segment's slope (20 us / 200 B) and the
  // whole-curve fit's.
  double perByte = std::max(0.1, 1.0 / (c.gbps * 1e3));
  EXPECT_NEAR(c.predictUs(600), 50 + 200 * perByte, 1e-9);
  CalibrationCurve flatEnd = curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 2, {{100, 10}, {200, 30}, {400, 30}});
  EXPECT_GT(flatEnd.predictUs(800), 30);  // a flat (noisy) last segment is not infinite bandwidth
}

TEST(TunerCalibration, MakeMonotonePoolsDipsIntoTheirNeighbours) {
  CalibrationCurve c = curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 2, {{8, 4}, {16, 2}, {32, 3}, {64, 10}, {128, 9}});
  c.makeMonotone();
  // {4, 2, 3} pool to 3; {10, 9} pool to 9.5.
  const double want[] = {3, 3, 3, 9.5, 9.5};
  for (size_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(c.points[i].us, want[i]) << i;
  CalibrationCurve sorted = curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 2, {{8, 1}, {16, 2}, {32, 2}});
  sorted.makeMonotone();
  EXPECT_DOUBLE_EQ(sorted.points[0].us, 1);
  EXPECT_DOUBLE_EQ(sorted.points[2].us, 2);
}

TEST(TunerCalibration, TextRoundTripKeepsEveryCurveAndPoint) {
  Calibration cal;
  cal.machine = "testbox cpus=2";
  cal.curves.push_back(curve(kFuncAllReduce, kAlgoOneShot, kProtoSimple, 8, {{8, 3.25}, {1024, 7.5}}));
  cal.curves.push_back(curve(kFuncAllGather, kAlgoRing, kProtoLL, 3, {{64, 1.5}}));
  Calibration back;
  ASSERT_EQ(Calibration::parse(cal.toText(), "test", &back), ncclSuccess) << std::string(lastErrorText());
  EXPECT_EQ(back.machine, cal.machine);
  ASSERT_EQ(back.curves.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.curves[i].func, cal.curves[i].func);
    EXPECT_EQ(back.curves[i].algo, cal.curves[i].algo);
    EXPECT_EQ(back.curves[i].proto, cal.curves[i].proto);
    EXPECT_EQ(back.curves[i].nRanks, cal.curves[i].nRanks);
    ASSERT_EQ(back.curves[i].points.size(), cal.curves[i].points.size());
    for (size_t p = 0; p < cal.curves[i].points.size(); ++p) {
      EXPECT_EQ(back.curves[i].points[p].bytes, cal.curves[i].points[p].bytes);
      EXPECT_NEAR(back.curves[i].points[p].us, cal.curves[i].points[p].us, 1e-4);
    }
  }
}

TEST(TunerCalibration, FindPrefersExactRanksThenNearest) {
  Calibration cal;
  cal.curves.push_back(curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 2, {{8, 1}}));
  cal.curves.push_back(curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 8, {{8, 9}}));
  EXPECT_EQ(cal.find(kFuncAllReduce, kAlgoRing, kProtoSimple, 8, 1)->nRanks, 8);
  EXPECT_EQ(cal.find(kFuncAllReduce, kAlgoRing, kProtoSimple, 3, 1)->nRanks, 2);
  EXPECT_EQ(cal.find(kFuncAllReduce, kAlgoRing, kProtoSimple, 7, 1)->nRanks, 8);
  EXPECT_EQ(cal.find(kFuncAllReduce, kAlgoRing, kProtoLL, 2, 1), nullptr);
  EXPECT_EQ(cal.find(kFuncAllReduce, kAlgoRing, kProtoSimple, 2, 2), nullptr);  // other node count
  EXPECT_TRUE(cal.covers(kFuncAllReduce, 1));
  EXPECT_FALSE(cal.covers(kFuncBroadcast, 1));
}

struct BadFile {
  const char* text;
  const char* expect;  // in the error message
};

TEST(TunerCalibration, MalformedFilesAreInvalidUsageNamingLineAndToken) {
  const BadFile cases[] = {
      {"curve AllReduce Ring Simple ranks=2\n", "no \"version 1\""},
      {"version 2\n", "unsupported version \"2\""},
      {"version 1\ncurve AllReduce Spiral Simple ranks=2\n", "test:2: unknown algorithm \"Spiral\""},
      {"version 1\ncurve Allreduce Ring Slow ranks=2\n", "unknown protocol \"Slow\""},
      {"version 1\ncurve Gossip Ring Simple ranks=2\n", "unknown function \"Gossip\""},
      {"version 1\ncurve AllReduce Ring Simple\n", "lacks ranks="},
      {"version 1\ncurve AllReduce Ring Simple ranks=0\n", "bad curve attribute \"ranks=0\""},
      {"version 1\npoint 8 1.0\n", "test:2: point before any curve"},
      {"version 1\ncurve AllReduce Ring Simple ranks=2\npoint 16 1\npoint 8 2\n", "test:4: point sizes must increase"},
      {"version 1\ncurve AllReduce Ring Simple ranks=2\npoint 16 fast\n", "point needs"},
      {"version 1\nbogus\n", "unknown record \"bogus\""},
  };
  for (const BadFile& c : cases) {
    Calibration cal;
    EXPECT_EQ(Calibration::parse(c.text, "test", &cal), ncclInvalidUsage) << c.text;
    EXPECT_NE(std::string(lastErrorText()).find(c.expect), std::string::npos) << c.text << " -> " << std::string(lastErrorText());
  }
}

TEST(TunerCalibration, CommentsAndBlankLinesAreIgnoredAndNamesAreCaseInsensitive) {
  Calibration cal;
  ASSERT_EQ(Calibration::parse("# hi\n\nversion 1 # trailing\ncurve allreduce ring simple ranks=4 nodes=2\n"
                               "point 8 2.5\n",
                               "test", &cal),
            ncclSuccess)
      << std::string(lastErrorText());
  ASSERT_EQ(cal.curves.size(), 1u);
  EXPECT_EQ(cal.curves[0].nNodes, 2);
  EXPECT_EQ(cal.curves[0].algo, kAlgoRing);
}

TunerTopo hostTopo(int ranks) {
  TunerTopo t;
  t.nRanks = ranks;
  t.nNodes = 1;
  t.ppn = ranks;
  t.host = true;
  return t;
}

int argminAlgo(const CostTable& t, int* proto) {
  int best = -1;
  for (int a = 0; a < kNumTunerAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (t.us[a][p] >= 0 && (best < 0 || t.us[a][p] < t.us[best / kNumProtos][best % kNumProtos]))
        best = a * kNumProtos + p;
  *proto = best % kNumProtos;
  return best / kNumProtos;
}

TEST(TunerHostModel, DefaultModelOffersOnlyHostAlgorithmsAndNoLL128) {
  HostCostModel m(hostTopo(4), 1, 2, nullptr);
  CostTable t;
  m.predict(kFuncAllReduce, 4096, &t);
  for (int a = 0; a < kNumTunerAlgos; ++a) {
    bool host = a == kAlgoRing || a == kAlgoTree || a == kAlgoOneShot;
    EXPECT_EQ(t.us[a][kProtoSimple] >= 0, host) << a;
    EXPECT_LT(t.us[a][kProtoLL128], 0) << a;
  }
  EXPECT_LT(t.us[kAlgoOneShot][kProtoLL], 0);
  m.predict(kFuncAllGather, 4096, &t);
  EXPECT_GE(t.us[kAlgoRing][kProtoSimple], 0);
  EXPECT_LT(t.us[kAlgoTree][kProtoSimple], 0);
  EXPECT_LT(t.us[kAlgoOneShot][kProtoSimple], 0);
  m.predict(kFuncAllReduce, kHostOneShotMaxBytes + 1, &t);
  EXPECT_LT(t.us[kAlgoOneShot][kProtoSimple], 0);  // scratch would grow with (n+1) x bytes
}

TEST(TunerHostModel, DefaultModelPrefersOneShotSmallAndRingSimpleLarge) {
  HostCostModel m(hostTopo(4), 1, 2, nullptr);
  CostTable t;
  int proto;
  m.predict(kFuncAllReduce, 8, &t);
  EXPECT_EQ(argminAlgo(t, &proto), kAlgoOneShot);
  m.predict(kFuncAllReduce, 64u << 20, &t);
  EXPECT_EQ(argminAlgo(t, &proto), kAlgoRing);
  EXPECT_EQ(proto, kProtoSimple);
  // Step model: time grows with size for each candidate.
  for (int a : {int(kAlgoRing), int(kAlgoTree)}) {
    CostTable small, big;
    m.predict(kFuncAllReduce, 1024, &small);
    m.predict(kFuncAllReduce, 1 << 20, &big);
    EXPECT_LT(small.us[a][kProtoSimple], big.us[a][kProtoSimple]) << a;
  }
}

TEST(TunerHostModel, CalibrationDecidesWhereItCoversAndReproducesMeasuredMinimum) {
  auto cal = std::make_shared<Calibration>();
  // LL is measured fastest at 8 B, Simple from 1 KiB on: the model must follow the measurement.
  cal->curves.push_back(curve(kFuncAllReduce, kAlgoRing, kProtoSimple, 4, {{8, 5}, {1024, 6}, {1 << 20, 300}}));
  cal->curves.push_back(curve(kFuncAllReduce, kAlgoRing, kProtoLL, 4, {{8, 2}, {1024, 9}, {1 << 20, 900}}));
  HostCostModel m(hostTopo(4), 1, 2, cal);
  EXPECT_STREQ(m.name(), "host-calibrated");
  CostTable t;
  int proto;
  m.predict(kFuncAllReduce, 8, &t);
  EXPECT_EQ(argminAlgo(t, &proto), kAlgoRing);
  EXPECT_EQ(proto, kProtoLL);
  EXPECT_FLOAT_EQ(t.us[kAlgoRing][kProtoLL], 2);
  EXPECT_LT(t.us[kAlgoTree][kProtoSimple], 0);  // not measured: not a candidate
  m.predict(kFuncAllReduce, 1024, &t);
  EXPECT_EQ(argminAlgo(t, &proto), kAlgoRing);
  EXPECT_EQ(proto, kProtoSimple);
  // A function the calibration does not cover falls back to the built-in model.
  m.predict(kFuncBroadcast, 1024, &t);
  EXPECT_GE(t.us[kAlgoRing][kProtoLL], 0);
  EXPECT_GE(t.us[kAlgoRing][kProtoSimple], 0);
}

TEST(TunerHostModel, ShapeSplitsLargeMessagesOverTheCommunicatorsChannels) {
  HostCostModel m(hostTopo(2), 4, 8, nullptr);
  int ch, th;
  m.shape(kFuncAllReduce, kAlgoRing, kProtoSimple, 8, &ch, &th);
  EXPECT_EQ(ch, 1);
  m.shape(kFuncAllReduce, kAlgoRing, kProtoSimple, 64u << 20, &ch, &th);
  EXPECT_EQ(ch, 4);
  m.shape(kFuncAllReduce, kAlgoOneShot, kProtoSimple, 1 << 20, &ch, &th);
  EXPECT_EQ(ch, 1);
  EXPECT_EQ(th, 0);
}

}  // namespace
}  // namespace accl
