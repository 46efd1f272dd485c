"""The API coverage table (streamcheck/api.py): the functions of a header's Doxygen group, the calls of a source
tree attributed to tests (with their IDs), helpers and fixtures, and docs/api.md kept current."""

import tempfile
import unittest
from pathlib import Path

from synthetic import REPORTS, write
from streamcheck.api import coverage, cuda_include_dir, markdown, section_functions

HEADER = """
/**
 * \\defgroup CUDA_STREAM Stream Management
 * @{
 */
CUresult CUDAAPI cuStreamQuery(CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream);
/** @} */ /* END CUDA_STREAM */
/**
 * \\defgroup CUDA_EVENT Event Management
 * @{
 */
CUresult CUDAAPI cuEventQuery(CUevent hEvent);
/** @} */
/**
 * \\defgroup CUDA_EXEC Execution Control
 * @{
 */
CUresult CUDAAPI cuLaunchKernel(CUfunction f);
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
/** @} */
"""
RUNTIME = """
/**
 * \\defgroup CUDART_STREAM Stream Management
 * @{
 */
extern __host__ cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream);
extern __host__ cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
/** @} */
"""
TEST = """
namespace {
void helper(cudaStream_t s) { cudaStreamQuery(s); }
TEST_F(Family, QueryWhileGated) {
  const sc::claim c("EVT-05", sc::verdict_kind::documented, "RT");
  // cuStreamSynchronize is named in a comment only
  EXPECT_EQ(CUDA_ERROR_NOT_READY, driver().cuStreamQuery(s));
}
[[noreturn]] void child_body(const channel& c) {
  c.write("query", name(cuEventQuery(e)));
  std::_Exit(0);
}
TEST_F(Family, ChildReports) {
  const sc::claim c("EVT-18", sc::verdict_kind::documented, "DRV cuStreamQuery (errors)");
  EXPECT_EXIT(child_body(c), ExitedWithCode(0), "") << "cuStreamQuery( in a message";
}
TEST_F(Family, HostFunction) {
  const sc::claim c("HOST-15", sc::verdict_kind::recorded, "DRV");
  cudaGetDriverEntryPointByVersion("cuLaunchHostFunc", &fn, 13020, 0, &found);
}
}  // namespace
"""


class ApiCoverage(unittest.TestCase):
    def test_a_groups_functions_only_those_of_the_group(self):
        self.assertEqual(section_functions(HEADER, "CUDA_STREAM"), ["cuStreamQuery", "cuStreamSynchronize"])
        self.assertEqual(section_functions(HEADER, "CUDA_EXEC", r"cuLaunchHostFunc\w*"), ["cuLaunchHostFunc"])
        self.assertEqual(section_functions(HEADER, "CUDA_GRAPH"), [])

    def test_calls_are_attributed_to_tests_helpers_and_fixtures(self):
        with tempfile.TemporaryDirectory(prefix="streamcheck-api-test-") as tmp:
            root = Path(tmp)
            write(root / "include" / "cuda.h", HEADER)
            write(root / "include" / "cuda_runtime_api.h", RUNTIME)
            write(root / "src" / "tests" / "events" / "query_test.cpp", TEST)
            write(root / "src" / "fixtures" / "src" / "event.cpp", "void f() { cuEventQuery(e); }\n")
            # A fixture method in another file of the family, reached through a helper; a template's parameter
            # of the same name called without arguments is no call of it.
            write(root / "src" / "tests" / "events" / "events.cpp",
                  "void Family::wait(const stream& s,\n                  const event& e) {\n"
                  "  cudaStreamWaitEvent(s.get(), e.get(), 0);\n}\n")
            write(root / "src" / "tests" / "events" / "wait_test.cpp",
                  "void join(const stream& s, const event& e) { wait(s, e); }\n"
                  "template <class W>\nvoid measure(W&& wait) {\n  wait();\n}\n"
                  "TEST_F(Family, Joined) {\n  const sc::claim c(\"EVT-01\", k, \"RT\");\n  join(s, e);\n}\n"
                  "TEST_F(Family, Measured) {\n  const sc::claim c(\"EVT-13\", k, \"RT\");\n  measure([] {});\n}\n")
            table = coverage(root / "src", root / "include")
            rows = {r["function"]: r for r in table["rows"]}
            self.assertEqual(list(rows), ["cuStreamQuery", "cuStreamSynchronize", "cuEventQuery", "cuLaunchHostFunc",
                                          "cudaStreamQuery", "cudaStreamWaitEvent"])
            self.assertEqual(rows["cudaStreamWaitEvent"]["tests"], ["Family.Joined"], "through two helpers, not a parameter")
            self.assertEqual(rows["cudaStreamWaitEvent"]["ids"], ["EVT-01"])
            self.assertEqual(rows["cuStreamQuery"]["tests"], ["Family.QueryWhileGated"])
            self.assertEqual(rows["cuStreamQuery"]["ids"], ["EVT-05"])
            self.assertEqual(rows["cuLaunchHostFunc"]["ids"], ["HOST-15"], "an entry point resolved by name")
            self.assertEqual(rows["cudaStreamQuery"]["helpers"], ["events"])
            self.assertTrue(rows["cuEventQuery"]["fixtures"])
            self.assertEqual(rows["cuEventQuery"]["tests"], ["Family.ChildReports"], "a helper's calls")
            self.assertEqual(rows["cuEventQuery"]["ids"], ["EVT-18"])
            self.assertEqual(rows["cuEventQuery"]["helpers"], [], "its only helper is called by a test")
            self.assertEqual(rows["cuStreamSynchronize"]["tests"], [], "a comment is not a call")
            self.assertEqual(table["not_called"], 1)
            text = markdown(table)
            self.assertIn("| `cuStreamSynchronize` | **not exercised** | \u2014 | \u2014 |", text)
            self.assertIn("## Driver API: Stream Management", text)

    @unittest.skipIf(cuda_include_dir() is None, "no CUDA headers here ($CUDA_PATH, $CUDA_HOME, /usr/local/cuda)")
    def test_docs_api_md_is_current(self):
        table = markdown(coverage(REPORTS.parent, cuda_include_dir()))
        current = (REPORTS.parent / "docs" / "api.md").read_text(encoding="utf-8")
        self.assertEqual(current, table, "docs/api.md is stale: python3 reports/streamcheck_api.py -o docs/api.md")


if __name__ == "__main__":
    unittest.main()
