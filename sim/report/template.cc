// SPDX-License-Identifier: Apache-2.0
// Report templates (template.h).
#include "report/template.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include "core/util/csv.h"

namespace mmtwin::report {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

bool IsName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!IsNameChar(c)) return false;
  return true;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// One {{...}} directive as written.
struct Token {
  enum class Kind { kText, kDirective } kind;
  std::string text;  // kText: the text; kDirective: what is between the braces
  long line = 0;
};

bool IsBlock(const std::string& d) {
  return d.rfind("#if ", 0) == 0 || d == "else" || d == "/if" || d[0] == '!';
}

// Splits the text into text and directives; a line holding only a block directive (and spaces) loses its
// spaces and its newline.
Result<std::vector<Token>> Tokenize(const std::string& text, const std::string& file) {
  std::vector<Token> out;
  long line = 1;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find("{{", at);
    const std::string before = text.substr(at, open == std::string::npos ? std::string::npos : open - at);
    if (!before.empty()) out.push_back({Token::Kind::kText, before, line});
    for (char c : before) line += c == '\n';
    if (open == std::string::npos) break;
    const size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) return Error::At(file, line, "", "'{{' without its '}}'");
    const std::string d = text.substr(open + 2, close - open - 2);
    if (d.empty()) return Error::At(file, line, "", "an empty directive {{}}");
    out.push_back({Token::Kind::kDirective, d, line});
    for (char c : d) line += c == '\n';
    at = close + 2;
    if (!IsBlock(d)) continue;
    // Standalone: only spaces between the line's start and the directive, and between it and the newline.
    const size_t line_start = text.rfind('\n', open) == std::string::npos ? 0 : text.rfind('\n', open) + 1;
    const size_t line_end = text.find('\n', at);
    const bool alone_before = text.find_first_not_of(" \t", line_start) == open;
    const bool alone_after =
        text.find_first_not_of(" \t", at) == (line_end == std::string::npos ? std::string::npos : line_end);
    if (!alone_before || !alone_after) continue;
    if (open > line_start && out.size() >= 2 && out[out.size() - 2].kind == Token::Kind::kText) {
      std::string& prev = out[out.size() - 2].text;
      prev.erase(prev.size() - (open - line_start));
    }
    if (line_end == std::string::npos) break;
    at = line_end + 1;
    ++line;
  }
  return out;
}

// A directive other than if / else / /if / comment as a node.
Result<TemplateNode> Leaf(const Token& t, const std::string& file) {
  TemplateNode n;
  n.line = t.line;
  const std::string& d = t.text;
  const size_t colon = d.find(':');
  const std::string kind = colon == std::string::npos ? "" : d.substr(0, colon);
  const std::string rest = colon == std::string::npos ? d : d.substr(colon + 1);
  if (kind.empty()) {
    n.kind = TemplateNode::Kind::kValue;
  } else if (kind == "table" || kind == "figure") {
    n.kind = kind == "table" ? TemplateNode::Kind::kTable : TemplateNode::Kind::kFigure;
  } else if (kind == "cell" || kind == "paper") {
    n.kind = kind == "cell" ? TemplateNode::Kind::kCell : TemplateNode::Kind::kPaper;
    std::vector<std::string> parts = Split(rest, '|');
    const size_t want = kind == "cell" ? 4 : 3;
    if (parts.size() != want)
      return Error::At(file, t.line, "",
                       "{{" + d + "}}: " + kind + " takes " + std::to_string(want) +
                           " arguments separated by '|' (TABLE|ROW|FIGURE" +
                           (want == 4 ? "|DECIMALS)" : ")"));
    n.text = parts[0];
    n.args.assign(parts.begin() + 1, parts.end());
    if (!IsName(n.text)) return Error::At(file, t.line, "", "{{" + d + "}}: '" + n.text + "' is not a name");
    if (kind == "cell") {
      char* end = nullptr;
      const long dec = std::strtol(n.args[2].c_str(), &end, 10);
      if (n.args[2].empty() || *end || dec < 0 || dec > 9)
        return Error::At(file, t.line, "", "{{" + d + "}}: decimals '" + n.args[2] + "' is not 0..9");
    }
    return n;
  } else {
    return Error::At(file, t.line, "",
                     "{{" + d + "}}: unknown directive '" + kind + ":' (table:, figure:, cell:, paper:)");
  }
  n.text = rest;
  if (!IsName(rest))
    return Error::At(file, t.line, "",
                     "{{" + d + "}}: '" + rest + "' is not a name (letters, digits, _ - .)");
  return n;
}

// Nodes from tokens[at..] until an else or /if (returned in `stop`) or the end.
Status Parse(const std::vector<Token>& tokens, size_t& at, const std::string& file,
             std::vector<TemplateNode>& out, std::string& stop) {
  while (at < tokens.size()) {
    const Token& t = tokens[at++];
    if (t.kind == Token::Kind::kText) {
      out.push_back({TemplateNode::Kind::kText, t.line, t.text});
      continue;
    }
    const std::string& d = t.text;
    if (d[0] == '!') continue;
    if (d == "else" || d == "/if") {
      stop = d;
      return Status();
    }
    if (d.rfind("#if ", 0) == 0) {
      TemplateNode n;
      n.kind = TemplateNode::Kind::kIf;
      n.line = t.line;
      n.text = d.substr(4);
      if (!IsName(n.text))
        return Error::At(file, t.line, "", "{{" + d + "}}: '" + n.text + "' is not a name");
      std::string end;
      MMTWIN_RETURN_IF_ERROR(Parse(tokens, at, file, n.then_nodes, end));
      if (end == "else") {
        end.clear();
        MMTWIN_RETURN_IF_ERROR(Parse(tokens, at, file, n.else_nodes, end));
        if (end == "else")
          return Error::At(file, tokens[at - 1].line, "", "a second {{else}} in one {{#if}}");
      }
      if (end != "/if") return Error::At(file, t.line, "", "{{" + d + "}} without its {{/if}}");
      out.push_back(std::move(n));
      continue;
    }
    MMTWIN_ASSIGN_OR_RETURN(TemplateNode leaf, Leaf(t, file));
    out.push_back(std::move(leaf));
  }
  return Status();
}

void CollectNames(const std::vector<TemplateNode>& nodes, TemplateNames& out) {
  for (const TemplateNode& n : nodes) {
    switch (n.kind) {
      case TemplateNode::Kind::kText:
        break;
      case TemplateNode::Kind::kValue:
        out.values.push_back(n.text);
        break;
      case TemplateNode::Kind::kTable:
        out.tables.push_back(n.text);
        break;
      case TemplateNode::Kind::kFigure:
        out.figures.push_back(n.text);
        break;
      case TemplateNode::Kind::kCell:
      case TemplateNode::Kind::kPaper:
        out.tables.push_back(n.text);
        for (const std::string& a : n.args)
          if (!a.empty() && a[0] == '$') out.values.push_back(a.substr(1));
        break;
      case TemplateNode::Kind::kIf:
        out.flags.push_back(n.text);
        CollectNames(n.then_nodes, out);
        CollectNames(n.else_nodes, out);
        break;
    }
  }
}

class Renderer {
 public:
  Renderer(const Template& t, const Bindings& b) : t_(t), b_(b) {}

  // Every name of every node (both branches) is bound, and every cell's row and figure exist.
  Status Check(const std::vector<TemplateNode>& nodes) {
    for (const TemplateNode& n : nodes) MMTWIN_RETURN_IF_ERROR(CheckNode(n));
    return Status();
  }

  Status Write(const std::vector<TemplateNode>& nodes, std::string& out) {
    for (const TemplateNode& n : nodes) {
      switch (n.kind) {
        case TemplateNode::Kind::kText:
          out += n.text;
          break;
        case TemplateNode::Kind::kValue:
          out += b_.values().at(n.text);
          break;
        case TemplateNode::Kind::kTable:
          out += MarkdownTable(*b_.tables().at(n.text));
          break;
        case TemplateNode::Kind::kFigure:
          out += b_.figures().at(n.text);
          break;
        case TemplateNode::Kind::kCell: {
          const ReportTable& t = *b_.tables().at(n.text);
          out += FixedOrNa(Cell(t, Arg(n.args[0]), Arg(n.args[1])), std::atoi(n.args[2].c_str()));
          break;
        }
        case TemplateNode::Kind::kPaper: {
          const ReportTable& t = *b_.tables().at(n.text);
          std::string paper;
          for (const Figure& f : t.rows)
            if (f.row == Arg(n.args[0]) && f.figure == Arg(n.args[1])) paper = f.paper;
          out += paper.empty() ? "n/a" : paper;
          break;
        }
        case TemplateNode::Kind::kIf:
          MMTWIN_RETURN_IF_ERROR(Write(b_.flags().at(n.text) ? n.then_nodes : n.else_nodes, out));
          break;
      }
    }
    return Status();
  }

 private:
  Error At(const TemplateNode& n, const std::string& why) const {
    return Error::At(t_.file, n.line, "", why);
  }

  std::string Arg(const std::string& a) const {
    return !a.empty() && a[0] == '$' ? b_.values().at(a.substr(1)) : a;
  }

  Status CheckNode(const TemplateNode& n) {
    auto unbound = [&](const char* what, const std::string& name) {
      return At(n, "unknown " + std::string(what) + " '" + name + "' (the report's code binds no such name)");
    };
    switch (n.kind) {
      case TemplateNode::Kind::kText:
        return Status();
      case TemplateNode::Kind::kValue:
        return b_.values().count(n.text) ? Status() : Status(unbound("value", n.text));
      case TemplateNode::Kind::kTable:
        return b_.tables().count(n.text) ? Status() : Status(unbound("table", n.text));
      case TemplateNode::Kind::kFigure:
        return b_.figures().count(n.text) ? Status() : Status(unbound("figure", n.text));
      case TemplateNode::Kind::kCell:
      case TemplateNode::Kind::kPaper:
        return CheckCell(n);
      case TemplateNode::Kind::kIf:
        if (!b_.flags().count(n.text)) return unbound("flag", n.text);
        MMTWIN_RETURN_IF_ERROR(Check(n.then_nodes));
        return Check(n.else_nodes);
    }
    return Status();
  }

  // The table is bound; `$NAME` arguments are bound values; a table holding rows has the row and the figure.
  Status CheckCell(const TemplateNode& n) {
    if (!b_.tables().count(n.text))
      return At(n, "unknown table '" + n.text + "' (the report's code binds no such name)");
    for (size_t i = 0; i < 2; ++i)
      if (!n.args[i].empty() && n.args[i][0] == '$' && !b_.values().count(n.args[i].substr(1)))
        return At(n, "unknown value '" + n.args[i].substr(1) + "' (the report's code binds no such name)");
    const ReportTable& t = *b_.tables().at(n.text);
    if (t.rows.empty()) return Status();  // a table this report left empty: every cell is n/a
    if (!t.HasRow(Arg(n.args[0]))) return At(n, "table '" + n.text + "' has no row '" + Arg(n.args[0]) + "'");
    if (!t.HasFigure(Arg(n.args[1])))
      return At(n, "table '" + n.text + "' has no figure '" + Arg(n.args[1]) + "'");
    return Status();
  }

  const Template& t_;
  const Bindings& b_;
};

}  // namespace

Result<Template> ParseTemplate(const std::string& text, const std::string& file) {
  MMTWIN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(text, file));
  Template t;
  t.file = file;
  size_t at = 0;
  std::string stop;
  MMTWIN_RETURN_IF_ERROR(Parse(tokens, at, file, t.nodes, stop));
  if (!stop.empty()) return Error::At(file, tokens[at - 1].line, "", "{{" + stop + "}} without its {{#if}}");
  return t;
}

Result<Template> LoadTemplate(const std::string& path) {
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseTemplate(text, path);
}

TemplateNames NamesOf(const Template& t) {
  TemplateNames n;
  CollectNames(t.nodes, n);
  return n;
}

Result<std::string> Render(const Template& t, const Bindings& b) {
  Renderer r(t, b);
  MMTWIN_RETURN_IF_ERROR(r.Check(t.nodes));
  const TemplateNames names = NamesOf(t);
  const std::set<std::string> shown(names.figures.begin(), names.figures.end());
  for (const auto& [name, file] : b.figures())
    if (!shown.count(name))
      return Error(t.file + ": figure '" + name + "' (" + file +
                   ") is drawn but the template does not show it: add {{figure:" + name + "}}");
  std::string out;
  MMTWIN_RETURN_IF_ERROR(r.Write(t.nodes, out));
  return out;
}

}  // namespace mmtwin::report
