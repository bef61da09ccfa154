// The loaders' hook tables name BPF programs by string (HookSpec variants); a name that its
// object lacks would only fail at run time, on the one kernel where that variant is chosen.
// This opens each built object (no load, no privileges: libbpf parses the ELF) and checks every
// table's names against the object's programs, and that no program of an object is left out of
// all of its tables. A new loader adds one row to kTables.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "loader/attach.h"
#include "loader/block.h"
#include "loader/lifecycle.h"
#include "loader/nvmeof.h"

#if NVMEOF_HAVE_BPF
#include <bpf/libbpf.h>
#endif

namespace nvmeof {
namespace {

struct Table {
  const char* object;  // bpf/OBJECT.bpf.c, built as NVMEOF_BPF_OBJ_DIR/OBJECT.bpf.o
  const char* loader;  // where the table is used, for the failure message
  const std::vector<HookSpec>& (*hooks)();
};

const Table kTables[] = {
    {"block", "loader/block_loader.cc", &BlockHooks},
    {"nvmeof", "loader/nvmeof_loader.cc", &NvmeofHooks},
    {"record", "loader/record_loader.cc", &RecordNvmeofHooks},
    {"lifecycle", "loader/lifecycle_loader.cc", &LifecycleHooks},
};

// "hook/program" for each variant whose program is not in `programs`.
std::vector<std::string> MissingPrograms(const std::vector<HookSpec>& hooks,
                                         const std::set<std::string>& programs) {
  std::vector<std::string> missing;
  for (const auto& h : hooks)
    for (const auto& v : h.variants)
      if (!programs.count(std::string(v.program)))
        missing.push_back(std::string(h.name) + "/" + std::string(v.program));
  return missing;
}

TEST(BpfPrograms, MissingProgramsNamesTheVariant) {
  const std::vector<HookSpec> hooks = {
      {.name = "h",
       .required = true,
       .module = "",
       .variants = {{Mechanism::kFentry, "f", "prog_a"}, {Mechanism::kKprobe, "f", "prog_typo"}}}};
  EXPECT_EQ(MissingPrograms(hooks, {"prog_a", "prog_b"}), std::vector<std::string>{"h/prog_typo"});
  EXPECT_TRUE(MissingPrograms(hooks, {"prog_a", "prog_typo"}).empty());
}

#if NVMEOF_HAVE_BPF

std::set<std::string> ObjectPrograms(const std::string& object, std::string* error) {
  const std::string path = std::string(NVMEOF_BPF_OBJ_DIR) + "/" + object + ".bpf.o";
  std::set<std::string> names;
  bpf_object* obj = bpf_object__open_file(path.c_str(), nullptr);
  if (!obj) {
    *error = "cannot open " + path;
    return names;
  }
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) names.insert(bpf_program__name(prog));
  bpf_object__close(obj);
  return names;
}

TEST(BpfPrograms, EveryTableNameIsAProgramOfItsObject) {
  for (const Table& t : kTables) {
    std::string error;
    const auto programs = ObjectPrograms(t.object, &error);
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_FALSE(programs.empty()) << t.object << ".bpf.o has no programs";
    for (const auto& m : MissingPrograms(t.hooks(), programs))
      ADD_FAILURE() << t.loader << ": " << m << " is not a program of bpf/" << t.object << ".bpf.c";
  }
}

TEST(BpfPrograms, EveryProgramIsInATableOfItsObject) {
  std::map<std::string, std::set<std::string>> named;  // object -> programs its tables name
  for (const Table& t : kTables)
    for (const auto& h : t.hooks())
      for (const auto& v : h.variants) named[t.object].insert(std::string(v.program));
  for (const auto& [object, in_tables] : named) {
    std::string error;
    for (const auto& p : ObjectPrograms(object, &error))
      EXPECT_TRUE(in_tables.count(p))
          << "bpf/" << object << ".bpf.c: program " << p << " is in no loader's table";
    EXPECT_TRUE(error.empty()) << error;
  }
}

#else

TEST(BpfPrograms, EveryTableNameIsAProgramOfItsObject) {
  GTEST_SKIP() << "built without NVMEOF_BPF: no BPF objects to check";
}

#endif

}  // namespace
}  // namespace nvmeof
