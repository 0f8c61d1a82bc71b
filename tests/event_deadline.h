// How long a test waits for an event (a worker thread's signal, a redraw, a
// row a CLI child wrote) before it fails. A wait returns as soon as its event
// comes, so a quiet machine never waits this long, while a machine loaded by
// a build or another test run beside the suite (CI's are not always quiet)
// may be many times slower than a quiet one. Tests never assert that
// something happens within a time: speed is for the benchmarks.
// A QTRY_* that fails waits twice as long again to say whether more time
// would have helped: 3 x 60 s stays under QtTest's 300 s limit on a test
// function, so a failure is reported as one, not as a watchdog's abort.
#pragma once

namespace mlk::testing_deadline {

inline constexpr int kEventDeadlineMs = 60000;

}  // namespace mlk::testing_deadline
