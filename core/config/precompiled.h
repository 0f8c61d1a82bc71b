// The standard and nlohmann_json headers most core, CLI and test files
// include, precompiled once per target kind (core/CMakeLists.txt,
// app/CMakeLists.txt, tests/CMakeLists.txt): nlohmann/json.hpp alone costs a
// file 10-40 s of CPU to parse and instantiate, and a clean build on two
// cores is what CI waits for. Only library headers: a project header here
// would make every file depend on it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
