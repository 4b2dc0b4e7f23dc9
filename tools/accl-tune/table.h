// `accl-tune table`: the tuner's decisions for a topology file and a communicator shape, one
// line per size, with the runner-up so each choice is explained.
#pragma once

namespace accl::tune {

int runTable(int argc, char** argv);

}  // namespace accl::tune
