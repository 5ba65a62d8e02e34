// SPDX-License-Identifier: Apache-2.0
#include "editor.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QRegularExpression>
#include <QScrollArea>
#include <QTextBlock>
#include <QVBoxLayout>

#include <filesystem>

#include "core/balance/data_policy.h"
#include "core/cluster/cluster.h"
#include "core/model/model.h"
#include "core/plan/encoder.h"
#include "core/plan/partition.h"
#include "core/plan/recompute.h"
#include "core/plan/schedule.h"
#include "core/plan/seqpar.h"

namespace mmtwin::gui {
namespace {

template <class Fn>
std::vector<PolicyChoice> ChoicesOf(const PolicyRegistry<Fn>& reg) {
  std::vector<PolicyChoice> out;
  for (const auto& e : reg.entries()) out.push_back({e.name, e.description, e.params});
  return out;
}

// "12" from "my.yaml:12: parallel.dp: ..." (the first :N: after the file name), 0 when none.
int LineOf(const QString& message, const QString& name) {
  const int at = name.isEmpty() ? -1 : message.indexOf(name + ":");
  const QString rest = at >= 0 ? message.mid(at + name.size()) : message;
  const QRegularExpressionMatch m = QRegularExpression("^:(\\d+):").match(rest);
  if (m.hasMatch()) return m.captured(1).toInt();
  const QRegularExpressionMatch any = QRegularExpression(":(\\d+):").match(message);
  return any.hasMatch() ? any.captured(1).toInt() : 0;
}

QSpinBox* Spin(QWidget* parent, int lo, int hi) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  s->setKeyboardTracking(false);  // valueChanged once the number is typed, not per digit
  return s;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const std::vector<std::string>& PolicyKinds() {
  static const std::vector<std::string> kKinds = {"data",     "partition", "recompute",
                                                  "schedule", "sp",        "encoder"};
  return kKinds;
}

namespace {

// The scenario's policies.<kind>.
const PolicyRef& PolicyOf(const Scenario& s, const std::string& kind) {
  return kind == "data"        ? s.data
         : kind == "partition" ? s.partition
         : kind == "recompute" ? s.recompute
         : kind == "sp"        ? s.sp
         : kind == "encoder"   ? s.encoder
                               : s.schedule;
}

}  // namespace

const std::vector<PolicyChoice>& PolicyChoices(const std::string& kind) {
  static const std::vector<PolicyChoice> data = ChoicesOf(DataPolicyRegistry()),
                                         partition = ChoicesOf(PartitionPolicyRegistry()),
                                         recompute = ChoicesOf(RecomputePolicyRegistry()),
                                         schedule = ChoicesOf(Schedules()),
                                         sp = ChoicesOf(SpPolicyRegistry()),
                                         encoder = ChoicesOf(EncoderPlacements()), none;
  if (kind == "data") return data;
  if (kind == "partition") return partition;
  if (kind == "recompute") return recompute;
  if (kind == "schedule") return schedule;
  if (kind == "sp") return sp;
  if (kind == "encoder") return encoder;
  return none;
}

ScenarioEditor::ScenarioEditor(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  tabs_ = new QTabWidget(this);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(BuildForm());
  scroll->setWidgetResizable(true);
  tabs_->addTab(scroll, "Form");
  yaml_ = new QPlainTextEdit(this);
  QFont mono("monospace");
  mono.setStyleHint(QFont::Monospace);
  yaml_->setFont(mono);
  yaml_->setLineWrapMode(QPlainTextEdit::NoWrap);
  tabs_->addTab(yaml_, "YAML");
  layout->addWidget(tabs_, 1);
  error_label_ = new QLabel(this);
  error_label_->setWordWrap(true);
  error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_label_->setStyleSheet("color: #b03a2e; font-weight: bold");
  error_label_->setVisible(false);
  layout->addWidget(error_label_);
  reparse_timer_.setSingleShot(true);
  reparse_timer_.setInterval(300);
  connect(&reparse_timer_, &QTimer::timeout, this, &ScenarioEditor::Reparse);
  connect(yaml_, &QPlainTextEdit::textChanged, this, [this] {
    if (filling_) return;
    SetModified(true);
    reparse_timer_.start();
  });
}

QWidget* ScenarioEditor::BuildForm() {
  auto* page = new QWidget(this);
  auto* cols = new QHBoxLayout(page);
  auto* left = new QVBoxLayout();
  cols->addLayout(left, 1);
  auto* right = new QVBoxLayout();
  cols->addLayout(right, 1);
  Form& f = form_;

  auto* what = new QGroupBox("Model, cluster and trace", page);
  auto* wf = new QFormLayout(what);
  f.name = new QLineEdit(what);
  wf->addRow("name", f.name);
  f.model = new QComboBox(what);
  f.model->setEditable(true);
  for (const std::string& m : ListModels()) f.model->addItem(QString::fromStdString(m));
  wf->addRow("model", f.model);
  f.cluster = new QComboBox(what);
  f.cluster->setEditable(true);
  for (const std::string& c : ListClusters()) f.cluster->addItem(QString::fromStdString(c));
  wf->addRow("cluster preset", f.cluster);
  f.nodes = Spin(what, 0, 100000);
  f.nodes->setSpecialValueText("auto (just enough for the layout)");
  wf->addRow("nodes", f.nodes);
  f.trace_samples = Spin(what, 0, 2000000000);
  f.trace_samples->setSpecialValueText("the preset's size");
  f.trace_samples->setToolTip("trace.samples: samples generated from the trace preset");
  wf->addRow("trace samples", f.trace_samples);
  left->addWidget(what);

  auto* par = new QGroupBox("Parallelism", page);
  auto* pf = new QFormLayout(par);
  f.dp = Spin(par, 1, 1 << 20);
  f.tp = Spin(par, 1, 1024);
  f.pp = Spin(par, 1, 4096);
  f.vpp = Spin(par, 1, 1024);
  f.micro_batches = Spin(par, 1, 1 << 20);
  f.zero_stage = Spin(par, 0, 3);
  f.sp = Spin(par, 1, 1 << 20);
  pf->addRow("dp (data-parallel replicas)", f.dp);
  pf->addRow("tp (tensor parallel, inside a node)", f.tp);
  pf->addRow("pp (pipeline stages)", f.pp);
  pf->addRow("vpp (chunks per stage; interleaved-1f1b)", f.vpp);
  pf->addRow("micro-batches per iteration", f.micro_batches);
  pf->addRow("ZeRO stage", f.zero_stage);
  pf->addRow("sp (sequence / context parallel; sp policy)", f.sp);
  left->addWidget(par);

  auto* run = new QGroupBox("Replay", page);
  auto* rf = new QFormLayout(run);
  f.iterations = Spin(run, 1, 1 << 30);
  f.epoch = new QCheckBox("replay the whole epoch", run);
  f.seed = Spin(run, 0, 2147483647);
  f.engine = new QComboBox(run);
  for (const std::string& e : ScenarioEngines()) f.engine->addItem(QString::fromStdString(e));
  rf->addRow("sampled iterations", f.iterations);
  rf->addRow("", f.epoch);
  rf->addRow("seed", f.seed);
  rf->addRow("engine", f.engine);
  left->addWidget(run);
  left->addStretch(1);

  for (const std::string& kind : PolicyKinds()) {
    auto* box = new QGroupBox(QString::fromStdString(kind + " policy"), page);
    auto* bl = new QVBoxLayout(box);
    auto* combo = new QComboBox(box);
    for (const PolicyChoice& c : PolicyChoices(kind)) {
      combo->addItem(QString::fromStdString(c.name));
      combo->setItemData(combo->count() - 1, QString::fromStdString(c.description), Qt::ToolTipRole);
    }
    bl->addWidget(combo);
    auto* desc = new QLabel(box);
    desc->setWordWrap(true);
    desc->setStyleSheet("color: #555");
    bl->addWidget(desc);
    auto* params = new QWidget(box);
    new QFormLayout(params);
    params->layout()->setContentsMargins(0, 0, 0, 0);
    bl->addWidget(params);
    f.policy[kind] = combo;
    f.policy_description[kind] = desc;
    param_boxes_[kind] = params;
    right->addWidget(box);
    connect(combo, &QComboBox::currentIndexChanged, this, [this, kind, combo] {
      BuildPolicyParams(kind);
      FormEdited("policies." + kind, "{name: " + Quoted(combo->currentText().toStdString()) + "}");
    });
  }
  right->addStretch(1);

  auto spin_key = [this](QSpinBox* s, std::string key) {
    connect(s, &QSpinBox::valueChanged, this, [this, key](int v) { FormEdited(key, std::to_string(v)); });
  };
  spin_key(f.dp, "parallel.dp");
  spin_key(f.tp, "parallel.tp");
  spin_key(f.pp, "parallel.pp");
  spin_key(f.vpp, "parallel.vpp");
  spin_key(f.sp, "parallel.sp");
  spin_key(f.micro_batches, "parallel.micro_batches");
  spin_key(f.zero_stage, "parallel.zero_stage");
  spin_key(f.nodes, "cluster.nodes");
  spin_key(f.seed, "seed");
  spin_key(f.trace_samples, "trace.samples");
  connect(f.iterations, &QSpinBox::valueChanged, this, [this](int v) {
    if (!form_.epoch->isChecked()) FormEdited("iterations", std::to_string(v));
  });
  connect(f.epoch, &QCheckBox::toggled, this, [this](bool on) {
    FormEdited("iterations", on ? "epoch" : std::to_string(form_.iterations->value()));
  });
  connect(f.name, &QLineEdit::editingFinished, this,
          [this] { FormEdited("name", Quoted(form_.name->text().toStdString())); });
  // A model written as a mapping ({name: ..., frozen: [...], image_px: ...}) keeps its other keys: only its name
  // changes.
  connect(f.model, &QComboBox::currentTextChanged, this, [this](const QString& t) {
    FormEdited(scenario_.lines.count("model.name") ? "model.name" : "model", Quoted(t.toStdString()));
  });
  connect(f.cluster, &QComboBox::currentTextChanged, this,
          [this](const QString& t) { FormEdited("cluster.preset", Quoted(t.toStdString())); });
  connect(f.engine, &QComboBox::currentTextChanged, this,
          [this](const QString& t) { FormEdited("engine", Quoted(t.toStdString())); });
  return page;
}

// The parameter fields of the chosen policy: one line edit per ParamSpec, showing the scenario's value (or the
// default as a grey placeholder), with the description as tooltip.
void ScenarioEditor::BuildPolicyParams(const std::string& kind) {
  QWidget* box = param_boxes_[kind];
  auto* fl = static_cast<QFormLayout*>(box->layout());
  while (fl->rowCount() > 0) fl->removeRow(0);
  form_.params[kind].clear();
  const std::string name = form_.policy[kind]->currentText().toStdString();
  const PolicyChoice* choice = nullptr;
  for (const PolicyChoice& c : PolicyChoices(kind))
    if (c.name == name) choice = &c;
  form_.policy_description[kind]->setText(choice ? QString::fromStdString(choice->description) : QString());
  if (choice == nullptr) return;
  for (const ParamSpec& p : choice->params) {
    auto* edit = new QLineEdit(box);
    edit->setPlaceholderText(QString::fromStdString(p.default_value));
    QString tip =
        QString::fromStdString(p.description + " (" + ParamTypeName(p.type) + ", default " + p.default_value);
    if (!p.choices.empty()) {
      std::string all;
      for (const std::string& c : p.choices) all += (all.empty() ? "" : ", ") + c;
      tip += QString::fromStdString("; one of " + all);
    }
    edit->setToolTip(tip + ")");
    const std::string pname = p.name;
    connect(edit, &QLineEdit::editingFinished, this, [this, kind, pname, edit] {
      const std::string v = edit->text().trimmed().toStdString();
      const std::string key = "policies." + kind + ".params." + pname;
      if (v.empty()) {
        // Back to the default: the policy without this parameter.
        const PolicyRef& ref = PolicyOf(scenario_, kind);
        if (!ref.params.count(pname)) return;
        std::string params;
        for (const auto& [k, val] : ref.params)
          if (k != pname) params += (params.empty() ? "" : ", ") + k + ": " + Quoted(val);
        FormEdited("policies." + kind, "{name: " + Quoted(ref.name) + ", params: {" + params + "}}");
        return;
      }
      FormEdited(key, Quoted(v));
    });
    auto* label = new QLabel(QString::fromStdString(p.name), box);
    label->setToolTip(tip + ")");
    fl->addRow(label, edit);
    form_.params[kind][p.name] = edit;
  }
}

std::string ScenarioEditor::Name() const {
  return path_.isEmpty() ? std::string("untitled.yaml") : path_.toStdString();
}

std::string ScenarioEditor::BaseDir() const {
  if (path_.isEmpty()) return ".";
  const std::filesystem::path p(path_.toStdString());
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

void ScenarioEditor::SetPath(const QString& path) {
  path_ = path;
  Reparse();
}

void ScenarioEditor::SetModified(bool m) {
  if (m == modified_) return;
  modified_ = m;
  emit modifiedChanged(m);
}

QString ScenarioEditor::text() const { return yaml_->toPlainText(); }

void ScenarioEditor::SetText(const QString& yaml, const QString& path) {
  path_ = path;
  filling_ = true;
  yaml_->setPlainText(yaml);
  filling_ = false;
  Reparse();
  SetModified(false);
}

// A scalar value written in place on the key's own line, keeping the text's comments and layout: the plain or
// quoted value after `leaf:` on line `line` (1-based) replaced, when that line holds the leaf key exactly once
// with such a value. "" when it cannot.
static std::string EditLineInPlace(const std::string& text, long line, const std::string& leaf,
                                   const std::string& value) {
  QStringList lines = QString::fromStdString(text).split('\n');
  if (line < 1 || line > lines.size()) return "";
  const QString& l = lines[line - 1];
  const QRegularExpression re(
      QStringLiteral("(?:^|[\\s{,])") + QRegularExpression::escape(QString::fromStdString(leaf)) +
      QStringLiteral(R"re(:[ \t]*([^,}#'"\s{\[][^,}#'"]*?|'[^']*'|"[^"]*")[ \t]*(?=$|[,}#]))re"));
  QRegularExpressionMatchIterator it = re.globalMatch(l);
  if (!it.hasNext()) return "";
  const QRegularExpressionMatch m = it.next();
  if (it.hasNext()) return "";
  lines[line - 1] = l.left(m.capturedStart(1)) + QString::fromStdString(value) + l.mid(m.capturedEnd(1));
  return lines.join('\n').toStdString();
}

void ScenarioEditor::FormEdited(const std::string& dotted_key, const std::string& yaml_value) {
  if (filling_) return;
  const std::string current = text().toStdString();
  Result<std::string> edited = OverrideScenarioYaml(current, {{dotted_key, yaml_value}});
  if (!edited.ok()) {
    SetError(QString::fromStdString(Name() + ": " + edited.error().message()));
    return;
  }
  // Prefer the edit in place (comments and layout kept) when the current text parses, the key is written on a
  // line of its own text, and the result reads exactly as the core's override does. Parsing alone (ReadScenario):
  // the comparison holds for a value the checks refuse as well.
  std::string chosen = *edited;
  Result<Scenario> read = ReadScenario(*edited, Name(), BaseDir());
  if (yaml_value.empty() || yaml_value[0] != '{') {
    Result<Scenario> now = ReadScenario(current, Name(), BaseDir());
    auto line = now.ok() ? now->lines.find(dotted_key) : std::map<std::string, long>::const_iterator();
    if (now.ok() && line != now->lines.end()) {
      const std::string leaf = dotted_key.substr(dotted_key.rfind('.') + 1);
      const std::string in_place = EditLineInPlace(current, line->second, leaf, yaml_value);
      if (!in_place.empty()) {
        Result<Scenario> a = ReadScenario(in_place, Name(), BaseDir());
        if (a.ok() && read.ok() && *a == *read) {
          chosen = in_place;
          read = std::move(a);  // with the lines of the text shown
        }
      }
    }
  }
  filling_ = true;
  yaml_->setPlainText(QString::fromStdString(chosen));
  filling_ = false;
  SetModified(true);
  Check(std::move(read));  // the struct just read from the text shown: checked, not printed and parsed again
}

void ScenarioEditor::CommitPendingEdits() {
  // Spin boxes track the keyboard off (valueChanged once the number is entered): interpretText() enters it,
  // emitting valueChanged (and so FormEdited) only when the typed text differs from the value.
  for (QAbstractSpinBox* spin : findChildren<QAbstractSpinBox*>()) spin->interpretText();
  for (QLineEdit* edit : findChildren<QLineEdit*>())
    if (edit->isModified() && !qobject_cast<QAbstractSpinBox*>(edit->parentWidget()) &&
        !qobject_cast<QComboBox*>(edit->parentWidget())) {
      edit->setModified(false);
      emit edit->editingFinished();
    }
}

void ScenarioEditor::Reparse() { Check(ReadScenario(text().toStdString(), Name(), BaseDir())); }

void ScenarioEditor::Check(Result<Scenario> read) {
  reparse_timer_.stop();
  const bool was_valid = valid_;
  Status st = read.status();
  if (read.ok()) {
    Result<Scenario> checked = CheckAndResolveScenario(std::move(*read));
    st = checked.status();
    if (checked.ok()) scenario_ = std::move(*checked);
  }
  if (!st.ok()) {
    valid_ = false;
    SetError(QString::fromStdString(st.error().message()));
  } else {
    valid_ = true;
    SetError(QString());
    FillForm();
    emit scenarioChanged();
  }
  if (was_valid != valid_) emit validityChanged(valid_);
}

void ScenarioEditor::SetError(const QString& message) {
  error_ = message;
  error_line_ = message.isEmpty() ? 0 : LineOf(message, QString::fromStdString(Name()));
  error_label_->setText(message);
  error_label_->setVisible(!message.isEmpty());
  QList<QTextEdit::ExtraSelection> marks;
  if (error_line_ > 0) {
    QTextEdit::ExtraSelection sel;
    sel.format.setBackground(QColor(0xf9, 0xd6, 0xd5));
    sel.format.setProperty(QTextFormat::FullWidthSelection, true);
    sel.cursor = QTextCursor(yaml_->document()->findBlockByLineNumber(error_line_ - 1));
    marks.append(sel);
  }
  yaml_->setExtraSelections(marks);
}

void ScenarioEditor::FillForm() {
  filling_ = true;
  const Scenario& s = scenario_;
  Form& f = form_;
  f.name->setText(QString::fromStdString(s.name));
  f.model->setCurrentText(QString::fromStdString(s.model));
  f.cluster->setCurrentText(QString::fromStdString(s.cluster));
  const std::string written_nodes = s.lines.count("cluster.nodes") ? "x" : "";
  f.nodes->setValue(written_nodes.empty() ? 0 : s.nodes);
  f.trace_samples->setValue(static_cast<int>(std::min<int64_t>(s.trace.samples, 2000000000)));
  f.trace_samples->setEnabled(!s.trace.preset.empty());
  f.dp->setValue(s.parallel.dp);
  f.tp->setValue(s.parallel.tp);
  f.pp->setValue(s.parallel.pp);
  f.vpp->setValue(s.parallel.vpp);
  f.sp->setValue(s.parallel.sp);
  f.micro_batches->setValue(s.parallel.micro_batches);
  f.zero_stage->setValue(s.parallel.zero_stage);
  f.iterations->setValue(static_cast<int>(std::min<int64_t>(s.iterations, 1 << 30)));
  f.epoch->setChecked(s.epoch);
  f.iterations->setEnabled(!s.epoch);
  f.seed->setValue(static_cast<int>(std::min<uint64_t>(s.seed, 2147483647)));
  f.engine->setCurrentText(QString::fromStdString(s.engine));
  for (const std::string& kind : PolicyKinds()) {
    const PolicyRef& ref = PolicyOf(s, kind);
    QComboBox* combo = f.policy[kind];
    if (combo->currentText().toStdString() != ref.name || f.params[kind].empty()) {
      combo->setCurrentText(QString::fromStdString(ref.name));
      BuildPolicyParams(kind);
    }
    for (auto& [pname, edit] : f.params[kind]) {
      auto it = ref.params.find(pname);
      edit->setText(it == ref.params.end() ? QString() : QString::fromStdString(it->second));
    }
  }
  filling_ = false;
}

}  // namespace mmtwin::gui
