// The "[dev]" field of log lines: the device of the communicator this thread is working for.
#pragma once

namespace accl {

// Sets the device printed by this thread's log lines (-1 on the host backend).
void setLogDevice(int device);

}  // namespace accl
