// A temporary directory tree for collector tests with odd inputs; removed after each test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace nvmeof {

class ScratchTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvmeof_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // Writes `text` to root_/rel, creating parent directories.
  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::path p = root_ + "/" + rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

  std::string root_;
};

}  // namespace nvmeof
