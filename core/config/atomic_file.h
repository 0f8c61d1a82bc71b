// Writing a file so that no reader, crash or failed write ever sees half of
// it, and a failed write keeps what was there: a report re-exported over
// last week's, a checkpoint, an export. The bytes go to a temporary file
// beside `path`, are synced, and the temporary file is renamed over `path`.
// A path that exists and is not a regular file (/dev/stdout, a pipe, a
// device) cannot be replaced and is written in place.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace mlk {

using ByteSink = std::function<void(const void* bytes, size_t n)>;

// std::runtime_error "cannot write PATH: ..." on failure, leaving `path` as
// it was; an exception from `produce` is passed on the same way.
void write_file_atomically(const std::string& path, const std::function<void(const ByteSink&)>& produce);
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace mlk
