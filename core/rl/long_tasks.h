// The long-response tasks of core/rl/tasks.h (formats and rewards there),
// kept apart from the short ones; make_task() is their public entry.
#pragma once

#include <memory>

#include "core/rl/tasks.h"

namespace mlk {

std::unique_ptr<Task> make_long_addition_task(int length);
std::unique_ptr<Task> make_calculator_task(int length);

}  // namespace mlk
