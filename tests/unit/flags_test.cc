// The one command-line parser of the exporter and its subcommands (base/flags.h).
#include "base/flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nvmeof {
namespace {

const std::vector<FlagSpec> kSpecs = {
    {"role", FlagSpec::kValue, "host or target.", 0, "ROLE"},
    {"sample-every", FlagSpec::kValue, "1 in N.", 's', "N"},
    {"once", FlagSpec::kSwitch, "One frame."},
    {"collector.", FlagSpec::kFamily, nullptr},
    {"testing.dir", FlagSpec::kValue, nullptr},
    {"help", FlagSpec::kSwitch, "Help.", 'h'},
};

bool Parse(const std::vector<std::string>& args, ParsedArgs* out, std::string* error) {
  return ParseFlags(args, kSpecs, out, error);
}

TEST(Flags, ValueSpellings) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-s", "4"}, {"-s=4"}, {"--sample-every", "4"}, {"--sample-every=4"}}) {
    ParsedArgs p;
    std::string error;
    ASSERT_TRUE(Parse(args, &p, &error)) << error;
    ASSERT_NE(p.Get("sample-every"), nullptr) << args[0];
    EXPECT_EQ(*p.Get("sample-every"), "4") << args[0];
  }
}

TEST(Flags, LastValueWinsAndPositionalKeepsOrder) {
  ParsedArgs p;
  std::string error;
  ASSERT_TRUE(
      Parse({"a.jsonl", "--role=host", "--role", "target", "b.jsonl", "--role="}, &p, &error))
      << error;
  EXPECT_EQ(*p.Get("role"), "");
  EXPECT_EQ(p.flags.size(), 3u);
  EXPECT_EQ(p.positional, (std::vector<std::string>{"a.jsonl", "b.jsonl"}));
  EXPECT_EQ(p.Get("once"), nullptr);
}

TEST(Flags, Switches) {
  ParsedArgs p;
  std::string error;
  ASSERT_TRUE(Parse({"--once", "-h"}, &p, &error)) << error;
  EXPECT_TRUE(p.On("once"));
  EXPECT_TRUE(p.On("help"));
  ParsedArgs q;
  ASSERT_TRUE(Parse({"--once", "--once=false"}, &q, &error)) << error;
  EXPECT_FALSE(q.On("once"));
  ParsedArgs r;
  EXPECT_FALSE(Parse({"--once=maybe"}, &r, &error));
  EXPECT_EQ(error, "--once: \"maybe\" is not true or false");
}

TEST(Flags, Families) {
  ParsedArgs p;
  std::string error;
  ASSERT_TRUE(Parse({"--collector.rdma", "--collector.tcp"}, &p, &error)) << error;
  ASSERT_EQ(p.flags.size(), 2u);
  EXPECT_EQ(p.flags[0].name, "collector.rdma");
  EXPECT_EQ(p.flags[1].name, "collector.tcp");
  ParsedArgs q;
  EXPECT_FALSE(Parse({"--collector.rdma=true"}, &q, &error));
  EXPECT_EQ(error, "--collector.rdma: takes no value");
  ParsedArgs r;
  EXPECT_FALSE(Parse({"--collector."}, &r, &error));  // a family needs a name after the dot
  EXPECT_EQ(error, "--collector.: unknown flag (see --help)");
}

TEST(Flags, ErrorsAreOneLineNamingTheArgument) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "--bogus: unknown flag (see --help)"},
      {{"--bogus=1"}, "--bogus: unknown flag (see --help)"},
      {{"-x"}, "-x: unknown flag (see --help)"},
      {{"-sx"}, "-sx: unknown flag (see --help)"},
      {{"--role"}, "--role: missing value"},
      {{"-s"}, "-s: missing value"},
  };
  for (const auto& [args, want] : cases) {
    ParsedArgs p;
    std::string error;
    EXPECT_FALSE(Parse(args, &p, &error)) << args[0];
    EXPECT_EQ(error, want);
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(Flags, HelpListsDocumentedFlagsOnly) {
  EXPECT_EQ(FlagsHelp(kSpecs),
            "  --role=ROLE\n      host or target.\n"
            "  -s, --sample-every=N\n      1 in N.\n"
            "  --once\n      One frame.\n"
            "  -h, --help\n      Help.\n");
  EXPECT_EQ(FlagsHelp({{"a", FlagSpec::kValue, "one\ntwo"}}),
            "  --a=VALUE\n      one\n      two\n");
}

}  // namespace
}  // namespace nvmeof
