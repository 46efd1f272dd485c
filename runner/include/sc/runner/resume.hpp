// A process of many tests (a fast entry, or an executable run by hand) runs them in a child process, and a test
// that ends its child (end_test_process, a sticky error, a fired watchdog, a crash) costs that test alone: the
// tests its child had not started run in a fresh child, and so on until every selected test has started once.
//
// - The parent makes no CUDA call. Each child is this executable with the same arguments, a --gtest_filter of
//   the tests still to run, its own XML file (<entry>.xml, then <entry>.part2.xml, ...) and
//   --streamcheck-progress=FILE, where it writes the tests it will run and each one it starts.
// - A child that starts no test ends the resuming: its tests are left without a result (the results reader
//   reports them not run, with the child's entry).
// - The exit status: that of the first child that ended abnormally (a signal: 128 + its number), else that of
//   the child that completed the run (0, 1, or 77 when no test passed and none failed).
#pragma once

#include <string>
#include <vector>

namespace sc {

// Whether a --gtest_filter selects more than one test, as far as its text tells: anything but one name
// without wildcards, negation or a second pattern.
bool filter_may_select_many(const std::string& filter);

// Runs the tests `args` (the process's own argv, as main received it) select in children, resuming after a
// test that ended its child; returns the exit status above.
int run_resuming(const std::vector<std::string>& args);

// In a child: notes in `file` the tests it will run and each one that starts, and ends the process right after a test
// that left it unusable (gpu_session's broken state, which it did not have when the test started).
void install_progress_listener(const std::string& file);

}  // namespace sc
