// The subcommands of nvmeof_exporter that profile/ implements, one file each (record.cc,
// report.cc, top.cc, explain_cmd.cc). args exclude the subcommand's name. Exit 0 (also after
// --help, printed on `out`), 1 when BPF or a scrape fails, 2 for bad usage or unreadable files (one
// line on `err`).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace nvmeof::profile {

// `record -o FILE [-s N] [--duration=S] [--role=host|target|both] [--ring-size=MiB]
// [--bpf.mechanism=M]`: with --role=both, FILE is a prefix: FILE.host.jsonl and
// FILE.target.jsonl.
int RunRecord(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `report [--detail] [--format=text|json] [--baseline=OLD[,OLD_TARGET]] FILE [FILE]`
// (args exclude "report"). Exit 0, or 2 with a message on err for bad usage or files.
int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `top [--from=URL] [--once] [--interval=SECONDS] [--format=text|json] [-s N]
// [--bpf.mechanism=M]`: without --from on its own eBPF programs.
int RunTop(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `explain --host=URL... [--target=URL...] [--targets=auto] [--since=DURATION] [--slowest=N]
// [--min=SECONDS] [--format=text|json] [--watch[=SECONDS]] [--from.*]`: the slowest commands of
// running exporters' flight recorders, host joined with target, split per component. Exit 1
// when no host exporter answers or the window holds no command.
int RunExplain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace nvmeof::profile
