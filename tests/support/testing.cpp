#include "tests/support/testing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <regex>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace medic::testing {

std::string source_dir() { return MEDIC_SOURCE_DIR; }
std::string fixture_path(const std::string& relative) { return source_dir() + "/tests/fixtures/" + relative; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

namespace {
std::string unique_suffix() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  return std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd() % 100000);
}
}  // namespace

TempDir::TempDir() {
  path_ = (std::filesystem::temp_directory_path() / ("medic-test-" + unique_suffix())).string();
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

std::string base_url() {
  if (const char* env = std::getenv("MEDIC_DB_URL"); env && *env) return env;
  std::ifstream in(MEDIC_TEST_PG_URL_FILE);
  std::string url;
  if (in && std::getline(in, url) && !url.empty()) return url;
  throw std::runtime_error(
      "no test database: run the tests through ctest (its pg fixture starts PostgreSQL) or set MEDIC_DB_URL");
}

// postgresql://user@host:port/db?x -> same URL with another database name.
std::string with_database(const std::string& url, const std::string& db) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  const size_t query = url.find('?');
  std::string out = slash == std::string::npos ? url : url.substr(0, slash);
  out += "/" + db;
  if (query != std::string::npos) out += url.substr(query);
  return out;
}

}  // namespace

TestDatabase::TestDatabase() {
  admin_url_ = with_database(base_url(), "postgres");
  name_ = "medic_t_" + unique_suffix();
  pqxx::connection c(admin_url_);
  pqxx::nontransaction n(c);
  n.exec("CREATE DATABASE " + n.quote_name(name_));
  url_ = with_database(base_url(), name_);
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection c(admin_url_);
    pqxx::nontransaction n(c);
    // Connections left by a killed daemon would block the drop.
    n.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name_);
    n.exec("DROP DATABASE IF EXISTS " + n.quote_name(name_));
  } catch (const std::exception&) {
  }
}

std::string TestDatabase::socket_url() const {
  std::string path = MEDIC_TEST_PG_URL_FILE;
  path = path.substr(0, path.rfind('/')) + "/url_socket";
  std::ifstream in(path);
  std::string url;
  if (std::getline(in, url) && !url.empty()) {
    // postgresql://postgres@/medic?host=...&port=... -> this test's database
    const size_t q = url.find('?');
    const size_t slash = url.rfind('/', q);
    return url.substr(0, slash + 1) + name_ + url.substr(q);
  }
  throw std::runtime_error("no Unix socket URL in " + path +
                           ": the testbed tests need the private test PostgreSQL that ctest's pg fixture starts");
}

std::vector<std::string> TestDatabase::column(const std::string& sql) const {
  pqxx::connection c(url_);
  pqxx::nontransaction n(c);
  std::vector<std::string> out;
  for (const auto& row : n.exec(sql)) out.push_back(row[0].is_null() ? "" : row[0].as<std::string>());
  return out;
}

std::string TestDatabase::scalar(const std::string& sql) const {
  const auto col = column(sql);
  if (col.empty()) throw std::runtime_error("query returned no rows: " + sql);
  return col.front();
}

void TestDatabase::exec(const std::string& sql) const {
  pqxx::connection c(url_);
  pqxx::nontransaction n(c);
  n.exec(sql);
}

Process::Process(const std::string& binary, const std::vector<std::string>& args,
                 const std::vector<std::string>& env) {
  out_path_ = (std::filesystem::temp_directory_path() / ("medic-proc-" + unique_suffix() + ".log")).string();
  std::vector<std::string> argv_s{binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int fd = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + out_path_);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // A test that crashes or is killed by ctest's timeout takes its daemons with it rather
    // than leaving them holding ports and the database for the tests after it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(binary.c_str(), argv.data(), envp.data());
    std::fprintf(stderr, "exec %s: %s\n", binary.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(fd);
}

Process::~Process() {
  if (running()) {
    signal(SIGTERM);
    if (!wait(std::chrono::seconds(5))) {
      signal(SIGKILL);
      wait(std::chrono::seconds(5));
    }
  }
  std::error_code ec;
  std::filesystem::remove(out_path_, ec);
}

bool Process::running() {
  if (status_) return false;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    return false;
  }
  return r == 0;
}

bool Process::signal(int sig) {
  if (!running()) return false;
  return ::kill(pid_, sig) == 0;
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

std::string Process::output() const {
  try {
    return read_file(out_path_);
  } catch (...) {
    return "";
  }
}

std::pair<int, std::string> run_command(const std::string& binary, const std::vector<std::string>& args,
                                        std::chrono::milliseconds timeout, const std::vector<std::string>& env) {
  Process p(binary, args, env);
  auto st = p.wait(timeout);
  if (!st) {
    p.signal(SIGKILL);
    p.wait(std::chrono::seconds(5));
    return {-1000, p.output() + "\n[timed out]"};
  }
  return {*st, p.output()};
}

uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string http_base_from_log(const std::string& log) {
  static const std::regex re("medicd http on ([0-9.]+:[0-9]+)");
  std::smatch m;
  if (!std::regex_search(log, m, re)) return "";
  return "http://" + m[1].str();
}

std::optional<double> metric_value(const std::string& exposition, const std::string& name) {
  // The name (with its labels, if any) is matched as written, not as a pattern.
  std::string literal;
  for (const char c : name) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) literal += '\\';
    literal += c;
  }
  std::smatch m;
  const std::regex re("(^|\n)" + literal + " ([-+0-9.eEinfNa]+)\n");
  if (!std::regex_search(exposition, m, re)) return std::nullopt;
  try {
    return std::stod(m[2]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace medic::testing
