#include "tuner/read_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace topotune {
namespace {

using ::testing::HasSubstr;

class ReadWholeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "read_file.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::remove((dir_ + "/f").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(ReadWholeFileTest, ReturnsEveryByte) {
  const std::string bytes("a\0b\nc\xff", 6);
  std::ofstream(dir_ + "/f", std::ios::binary) << bytes;
  StatusOr<std::string> text = ReadWholeFile(dir_ + "/f", "the test file");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, bytes);
}

TEST_F(ReadWholeFileTest, ErrorsNameThePathWhatAndWhy) {
  StatusOr<std::string> missing = ReadWholeFile(dir_ + "/none", "the configuration file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), dir_ + "/none: cannot read the configuration file: No such file or directory");
  // A directory opens, and the read is what fails.
  StatusOr<std::string> directory = ReadWholeFile(dir_, "the configuration file");
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.status().message(), HasSubstr("Is a directory"));
}

TEST(ParseYamlTest, ASyntaxErrorNamesSourceAndLine) {
  StatusOr<YAML::Node> good = ParseYaml("a: 1\nb: [x, y]\n", "f.yaml");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ((*good)["b"][1].as<std::string>(), "y");
  StatusOr<YAML::Node> bad = ParseYaml("a: 1\nb: [x, y\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::StartsWith("f.yaml:3: "));
}

}  // namespace
}  // namespace topotune
