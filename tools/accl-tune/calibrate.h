// `accl-tune calibrate` (measure every algorithm x protocol and write the tuner's calibration
// file) and `accl-tune regret` (measure the tuner's pick against the best candidate).
#pragma once

namespace accl::tune {

int runCalibrate(int argc, char** argv);
int runRegret(int argc, char** argv);

}  // namespace accl::tune
