// `accl-perf --selftest`: checks accl-perf's own logic without the library — element conversions,
// buffer shapes, bandwidth factors, option parsing, and the data check end to end against an in-process
// reference implementation of every collective (correct results must give zero wrong elements; a
// corrupted element, a dropped rank or misplaced blocks must be caught).
#pragma once

namespace accl::bench {

// Returns 0 when every check passed; prints each failure.
int runSelftest(bool verbose);

}  // namespace accl::bench
