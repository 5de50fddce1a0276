#pragma once
// Where the tests find the source tree, their data and the nodus binary. Every test file gets
// this header (-include, tests/CMakeLists.txt) and the macros NODUS_SOURCE_DIR, NODUS_TEST_DATA
// and NODUS_BIN name these constants; their values live in one generated file per suite. As -D
// string values the paths would make each test file that uses them compile differently in every
// folder, so a fresh clone (what CI builds) could not reuse what ccache kept of them.

namespace nodus::test_paths {

extern const char* const kSourceDir;
extern const char* const kTestData;
extern const char* const kBin;  // "" in a build without the nodus target

}  // namespace nodus::test_paths
