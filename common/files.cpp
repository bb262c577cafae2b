#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#ifndef MEDIC_DATA_DIR
#define MEDIC_DATA_DIR "data"
#endif

namespace medic {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string size_text(size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10)) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

Result<std::string> read_data_file(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not wait; the mode is checked next.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Error{path + ": cannot open: " + std::strerror(errno)};
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error{path + ": cannot stat: " + std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return Error{path + ": " + kind_of(st.st_mode) + ", not a regular file"};
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    // Rounded sizes that would read alike are given in bytes.
    const size_t size = static_cast<size_t>(st.st_size);
    const bool alike = size_text(size) == size_text(max_bytes);
    return Error{path + ": " + (alike ? std::to_string(size) + " bytes" : size_text(size)) +
                 " is more than the limit of " + (alike ? std::to_string(max_bytes) + " bytes" : size_text(max_bytes))};
  }
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{path + ": read error: " + std::strerror(errno)};
    }
    if (n == 0) break;  // shrank while read
    got += static_cast<size_t>(n);
  }
  out.resize(got);  // what it held when it was opened; a file growing meanwhile is not followed
  return out;
}

Result<std::string> read_secret(const std::string& flag_value, const std::string& file, const char* env,
                                const std::string& flag) {
  if (!file.empty()) {
    auto text = read_data_file(file, 64 * 1024);
    if (!text.ok()) return Error{flag + "-file: " + text.error()};
    std::string t = *text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (t.empty()) return Error{flag + "-file: " + file + " is empty"};
    if (t.find('\n') != std::string::npos) return Error{flag + "-file: " + file + " holds more than one line"};
    return t;
  }
  if (!flag_value.empty()) return flag_value;
  if (const char* e = env != nullptr ? std::getenv(env) : nullptr; e != nullptr) return std::string(e);
  return std::string();
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::invalid(path + ": cannot write: " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error::internal(path + ": cannot write: " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error::internal(path + ": cannot write: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error::internal(path + ": cannot write: " + why);
  }
  return Ok{};
}

std::string data_dir() { return MEDIC_DATA_DIR; }

}  // namespace medic
