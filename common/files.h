// Reading the files medicd, medic and fabsim are given: only regular files (a FIFO would
// hang the reader, /dev/zero would never end), at most a size limit, with an exact error
// naming the file and what is wrong with it.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"

namespace medic {

// Data and configuration files: topologies of the largest fabrics fit with room to spare.
inline constexpr size_t kMaxDataFileBytes = 256u << 20;

// The whole file, or "PATH: not a regular file (a FIFO)", "PATH: 300 MB is more than the
// limit of 256 MB", "PATH: cannot open: No such file or directory".
Result<std::string> read_data_file(const std::string& path, size_t max_bytes = kMaxDataFileBytes);

// A secret (a bearer token) from, in order: `file` (one line), the command line's
// `flag_value` (which ps shows: the file or the environment are for real use), or the
// variable `env`. "" when none is given. Errors name the flag and the file.
Result<std::string> read_secret(const std::string& flag_value, const std::string& file, const char* env,
                                const std::string& flag);

// Writes `text` to `path` whole or not at all: a temporary file beside it, flushed, then
// renamed over it. "PATH: cannot write: reason" otherwise.
Status write_file_atomically(const std::string& path, const std::string& text);

// The data directory of this source tree (data/counter_map.json and the other defaults).
std::string data_dir();

}  // namespace medic
