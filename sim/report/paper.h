// SPDX-License-Identifier: Apache-2.0
// A report's published values (data/NAME/paper.yaml): each value the paper states, with the table or figure it
// comes from, read with the strict YAML loader (errors `file:line: field: reason`).
//
//   paper: OmniBal (Wang et al.), balanced computation for VLM training   # optional: what the report reproduces
//   source: the paper's text the project keeps (001 in the shared papers)  # optional
//   tables:                  # per table of the report (its name in the code and the template)
//     main:
//       ref: Table 2         # the paper column's header: "paper (Table 2)"
//       rows: model          # the row column's header
//       source: §5.2         # optional: where in the paper
//       values:              # row -> figure -> the value as printed ("61.8", "1.5–2.0", "OOM"; text kept)
//         6B+20B:
//           GPU-days, baseline: 61.8
//           speed-up (baseline / OmniBal): {value: 2.90, source: "Table 2, last column"}
//         "*":               # every row of the table (a range the paper gives for all of them)
//           speed-up of 2d over ring: 2.1–5.7
//   claims:                  # a claim of the paper's text read as a range (high may be .inf), and the value of
//                            # parity for it (default 0): what the report's verdicts compare mmtwin's range with
//     ulysses: {low: 0.8, high: 1.2, source: "§5.1.1: on par with DeepSpeed-Ulysses"}
//   facts:                   # other hand-written facts the report's code needs, by name
//     kept_runs_machine: 2 vCPU AMD EPYC (KVM), 24 GiB, Debian 12
//
// Unknown keys are errors; every key above but tables.*.ref / rows / values is optional.
#pragma once

#include <map>
#include <string>

#include "core/util/status.h"

namespace mmtwin::report {

struct PaperValue {
  std::string text;    // as printed in the paper
  std::string source;  // where ("" = the table's ref)
  long line = 0;       // in paper.yaml
};

struct PaperTable {
  std::string name, ref, row_header, source;
  long line = 0;
  // row -> figure -> value; row "*" applies to every row that has no value of its own.
  std::map<std::string, std::map<std::string, PaperValue>> values;
  // The paper's value of (row, figure) as printed, "" when the paper gives none.
  std::string Value(const std::string& row, const std::string& figure) const;
};

struct PaperClaim {
  double low = 0, high = 0;  // high may be infinite ("over 2M")
  double parity = 0;         // the value of "no difference" (1 for a ratio, 0 for a change in percent)
  std::string source;
};

struct Paper {
  std::string file;  // paper.yaml, for errors
  std::string title, source;
  std::map<std::string, PaperTable> tables;
  std::map<std::string, PaperClaim> claims;
  std::map<std::string, std::string> facts;

  // Errors name the file and the missing key (`paper.yaml: tables.NAME: not defined`).
  Result<const PaperTable*> Table(const std::string& name) const;
  Result<PaperClaim> Claim(const std::string& name) const;
  Result<std::string> Fact(const std::string& name) const;
};

Result<Paper> ParsePaper(const std::string& text, const std::string& file);
Result<Paper> LoadPaper(const std::string& path);

}  // namespace mmtwin::report
