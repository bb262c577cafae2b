// Reading data files and secrets: only regular files, within a size limit, with exact
// errors naming the file and what is wrong (a FIFO would hang a reader, /dev/zero never ends).
#include "common/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;

TEST(ReadDataFile, ARegularFileIsReadWhole) {
  testing::TempDir dir;
  testing::write_file(dir.file("a.json"), "{\"version\": 1}\n");
  auto r = read_data_file(dir.file("a.json"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, "{\"version\": 1}\n");
  testing::write_file(dir.file("empty"), "");
  EXPECT_EQ(*read_data_file(dir.file("empty")), "");
}

TEST(ReadDataFile, AnythingButARegularFileIsRefusedAtOnce) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  const auto fifo = read_data_file(dir.file("fifo"));  // no writer: would block forever if opened for reading plainly
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.error(), dir.file("fifo") + ": a FIFO, not a regular file");
  const auto zero = read_data_file("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error(), "/dev/zero: a character device, not a regular file");
  const auto d = read_data_file(dir.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), dir.path() + ": a directory, not a regular file");
  const auto missing = read_data_file(dir.file("nope.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), dir.file("nope.json") + ": cannot open: No such file or directory");
}

TEST(ReadDataFile, AFileOverTheLimitIsRefusedUnread) {
  testing::TempDir dir;
  testing::write_file(dir.file("big"), std::string(3000, 'x'));
  const auto r = read_data_file(dir.file("big"), 2048);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), dir.file("big") + ": 3000 bytes is more than the limit of 2048 bytes");
  const auto far = read_data_file(dir.file("big"), 1000);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error(), dir.file("big") + ": 2 KiB is more than the limit of 1000 bytes");
  EXPECT_TRUE(read_data_file(dir.file("big"), 3000).ok());
}

TEST(ReadSecret, FileThenFlagThenEnvironment) {
  testing::TempDir dir;
  testing::write_file(dir.file("token"), "s3cret\n");
  ::setenv("MEDIC_TEST_SECRET", "from-env", 1);
  EXPECT_EQ(*read_secret("from-flag", dir.file("token"), "MEDIC_TEST_SECRET", "--api-token"), "s3cret");
  EXPECT_EQ(*read_secret("from-flag", "", "MEDIC_TEST_SECRET", "--api-token"), "from-flag");
  EXPECT_EQ(*read_secret("", "", "MEDIC_TEST_SECRET", "--api-token"), "from-env");
  ::unsetenv("MEDIC_TEST_SECRET");
  EXPECT_EQ(*read_secret("", "", "MEDIC_TEST_SECRET", "--api-token"), "");
}

TEST(ReadSecret, BadFilesAreNamed) {
  testing::TempDir dir;
  testing::write_file(dir.file("empty"), "\n");
  testing::write_file(dir.file("two"), "a\nb\n");
  EXPECT_EQ(read_secret("", dir.file("empty"), nullptr, "--api-token").error(),
            "--api-token-file: " + dir.file("empty") + " is empty");
  EXPECT_EQ(read_secret("", dir.file("two"), nullptr, "--api-token").error(),
            "--api-token-file: " + dir.file("two") + " holds more than one line");
  EXPECT_THAT(read_secret("", dir.file("none"), nullptr, "--driver-token").error(),
              HasSubstr("--driver-token-file: " + dir.file("none") + ": cannot open"));
  EXPECT_EQ(read_secret("", "/dev/zero", nullptr, "--rpc-token").error(),
            "--rpc-token-file: /dev/zero: a character device, not a regular file");
}

}  // namespace
}  // namespace medic
