// Temporary directory trees for collector tests with odd inputs, removed afterwards: ScratchDir
// (RAII, for use inside a test) and ScratchTree (a fixture holding one).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace nvmeof {

class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/nvmeof_test.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text` to path()/rel, creating parent directories.
  void Write(const std::string& rel, const std::string& text) const {
    std::filesystem::path p = path_ + "/" + rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

 private:
  std::string path_;
};

class ScratchTree : public ::testing::Test {
 protected:
  void Write(const std::string& rel, const std::string& text) { dir_.Write(rel, text); }

  ScratchDir dir_;
  const std::string root_ = dir_.path();
};

}  // namespace nvmeof
