// SPDX-License-Identifier: Apache-2.0
// The scenario editor: a form for the knobs that matter and a YAML text tab, kept in sync through the core's own
// scenario reader (core/scenario/scenario.h), so what the editor accepts is exactly what `mmtwin simulate` accepts.
//
//   ScenarioEditor ed;
//   ed.SetText(text, "scenarios/default.yaml");   // parses, checks, fills the form
//   ed.form().dp->setValue(4);                     // the YAML tab now says dp: 4, scenario().parallel.dp == 4
//   if (!ed.valid()) show(ed.error());             // "scenarios/default.yaml:11: parallel.dp: ..."
//
// Form -> text: a form edit is applied to the text as a dotted-key override. A scalar knob already written on a
// line of its own is edited in place on that line (comments and layout kept) when the result reads exactly as the
// core's override (OverrideScenarioYaml) does; other edits (a policy choice, a key not yet written) take the
// override's text, which is re-emitted YAML without comments. The struct read from the new text is then checked
// (CheckScenario) as it is: nothing is printed and parsed again. Text -> form: typing in the YAML tab re-parses
// after a short pause (or at once with Reparse()); when the text reads and checks (ReadScenario, then
// CheckAndResolveScenario: what ParseScenario does), the form shows it; otherwise the core's message is shown
// under both tabs, the line is marked in the text, and valid() is false (the window does not run an invalid
// scenario).
#pragma once

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>
#include <QWidget>

#include <map>
#include <string>
#include <vector>

#include "core/scenario/scenario.h"
#include "core/util/params.h"

namespace mmtwin::gui {

// A policy as the form offers it: name, one-line description and typed parameters, from the registries
// (DataPolicyRegistry, PartitionPolicyRegistry, RecomputePolicyRegistry, Schedules).
struct PolicyChoice {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
};
// kind: "data", "partition", "recompute", "schedule", "sp" or "encoder" (the scenario's policies.<kind> key).
const std::vector<PolicyChoice>& PolicyChoices(const std::string& kind);
const std::vector<std::string>& PolicyKinds();

class ScenarioEditor : public QWidget {
  Q_OBJECT
 public:
  explicit ScenarioEditor(QWidget* parent = nullptr);

  // Replaces the text; `path` names the file in messages and resolves relative paths (trace files, cost
  // tables); "" = untitled.yaml in the working folder. Parses at once. Clears modified().
  void SetText(const QString& yaml, const QString& path);
  QString text() const;
  QString path() const { return path_; }
  void SetPath(const QString& path);
  bool modified() const { return modified_; }
  void SetModified(bool m);

  // Commits what is typed in the form but not yet entered (a number typed into a spin box without Enter, a
  // line edit still focused): a Run clicked on the toolbar, which takes no focus, must run what the form shows.
  void CommitPendingEdits();
  // Parses and checks the text now (instead of after the typing pause).
  void Reparse();
  // Whether the text parses and checks; scenario() is the last text that did.
  bool valid() const { return valid_; }
  const Scenario& scenario() const { return scenario_; }
  // The core's message for the text ("x.yaml:11: parallel.dp: must be at least 1") and its line (0 = none).
  QString error() const { return error_; }
  int error_line() const { return error_line_; }

  // The form's widgets (for the window's tests and screenshots).
  struct Form {
    QLineEdit* name;
    QComboBox* model;
    QComboBox* cluster;
    QSpinBox* nodes;  // 0 = automatic
    QSpinBox *dp, *tp, *pp, *vpp, *micro_batches, *zero_stage, *sp;
    QSpinBox* iterations;
    QCheckBox* epoch;
    QSpinBox* seed;
    QComboBox* engine;
    QSpinBox* trace_samples;                                          // 0 = the preset's default
    std::map<std::string, QComboBox*> policy;                         // kind -> name
    std::map<std::string, QLabel*> policy_description;                // kind -> description
    std::map<std::string, std::map<std::string, QLineEdit*>> params;  // kind -> parameter -> value
  };
  const Form& form() const { return form_; }
  QTabWidget* tabs() const { return tabs_; }
  QPlainTextEdit* yaml_edit() const { return yaml_; }
  QLabel* error_label() const { return error_label_; }

 signals:
  void validityChanged(bool valid);
  void scenarioChanged();  // after every text that parses and checks
  void modifiedChanged(bool modified);

 private:
  QWidget* BuildForm();
  void BuildPolicyParams(const std::string& kind);
  void FormEdited(const std::string& dotted_key, const std::string& yaml_value);
  // Checks a scenario read from the text shown (CheckAndResolveScenario) and shows the result: the form, or the
  // error under both tabs.
  void Check(Result<Scenario> read);
  void FillForm();
  void SetError(const QString& message);
  std::string Name() const;     // for messages
  std::string BaseDir() const;  // for relative paths

  QString path_;
  bool modified_ = false, valid_ = false, filling_ = false;
  Scenario scenario_;
  QString error_;
  int error_line_ = 0;
  Form form_{};
  std::map<std::string, QWidget*> param_boxes_;  // kind -> the box holding its parameter fields
  QTabWidget* tabs_;
  QPlainTextEdit* yaml_;
  QLabel* error_label_;
  QTimer reparse_timer_;
};

}  // namespace mmtwin::gui
