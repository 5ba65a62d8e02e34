#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/messages/make_corpus.py: writes the bad-input corpus of tests/messages/ (issue 34, acceptance 5).

Each case is one bad file of one input kind, made from a valid file of the repository by one mutation of one line
(a value of the wrong type, out of range, an unknown name, a typo'd or duplicated key, a deleted required key, a
broken field count, ...), and the command that reads it. corpus/cases.tsv lists them:
    id <TAB> kind <TAB> file (relative to tests/messages/corpus) <TAB> line <TAB> command
`line` is the 1-based line the mutation touched; `command` is an mmtwin command line with {file} (the case's
file), {src} (the repository) and {out} (a fresh temporary folder). messages_slow_test.cc runs every case, expects
exit 2, and measures how many messages name `FILE:LINE:` (the file's name followed by a line number).

Run from the repository root; it rewrites corpus/ entirely. Mutations that leave a file valid are kept out by
listing only what the test then finds exiting 2: run the test once after regenerating and drop the cases it
reports as accepted (KEEP_OUT below), so the corpus holds bad inputs only.
"""
import os
import re
import shutil

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "messages", "corpus")
# Mutations found valid (exit 0 or 1) by the test: optional keys deleted, values that happen to be legal.
KEEP_OUT = set()
if os.path.exists(os.path.join(os.path.dirname(__file__), "keep_out.txt")):
    with open(os.path.join(os.path.dirname(__file__), "keep_out.txt")) as f:
        KEEP_OUT = {l.strip() for l in f if l.strip() and not l.startswith("#")}

cases = []


def rel_to_corpus_dir(kind, path):
    """A repository path as seen from corpus/KIND/."""
    return os.path.relpath(os.path.join(ROOT, path), os.path.join(CORPUS, kind))


def add(kind, name, ext, text, line, command):
    if f"{kind}:{name}" in KEEP_OUT:
        return
    cid = f"{kind}-{len(cases):03d}-{name}"
    d = os.path.join(CORPUS, kind)
    os.makedirs(d, exist_ok=True)
    fname = f"{cid}.{ext}"
    with open(os.path.join(d, fname), "w") as f:
        f.write(text)
    cases.append((cid, kind, f"{kind}/{fname}", line, command))


# ---- YAML: one mutation per "key: value" item, block lines and flow mappings alike ---------------------------
ITEM = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_.]*)\s*:\s*(?P<val>[^,{}\[\]#]+?)\s*(?=[,}]|$|\s#)")

VALUE_MUTATIONS = [
    ("word", "not-a-valid-value"),
    ("neg", "-7"),
    ("huge", "1e999"),
    ("seq", "[1, 2]"),
    ("float", "2.5"),
]


def yaml_cases(kind, base_text, command, skip_keys=(), limit=None, ext="yaml"):
    lines = base_text.split("\n")
    made = 0
    folded_indent = None  # inside a folded or literal scalar (free text): no keys there
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if folded_indent is not None:
            if line.strip() and indent <= folded_indent:
                folded_indent = None
            else:
                continue
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if re.search(r":\s*[>|][-+]?\s*$", line):
            folded_indent = indent
            continue
        code = line.split(" #", 1)[0]  # a trailing comment holds no keys
        for m in ITEM.finditer(code):
            key, val = m.group("key"), m.group("val")
            if key in skip_keys or val.startswith(">") or val.startswith("|"):
                continue
            for label, new in VALUE_MUTATIONS:
                if new == val:
                    continue
                mutated = line[:m.start("val")] + new + line[m.end("val"):]
                text = "\n".join(lines[:i] + [mutated] + lines[i + 1:])
                add(kind, f"{key}-{label}", ext, text, i + 1, command)
                made += 1
            # A typo'd key.
            mutated = line[:m.start("key")] + key + "_typo" + line[m.end("key"):]
            add(kind, f"{key}-typo", ext, "\n".join(lines[:i] + [mutated] + lines[i + 1:]), i + 1, command)
            made += 1
            if limit and made >= limit:
                return
    # A duplicated top-level line and a deleted one, for each top-level key.
    for i, line in enumerate(lines):
        if re.match(r"^[A-Za-z_]+:", line) and not line.rstrip().endswith(":") and not line.rstrip().endswith(">-"):
            key = line.split(":")[0]
            add(kind, f"{key}-dup", ext, "\n".join(lines[:i + 1] + [line] + lines[i + 1:]), i + 2, command)
            add(kind, f"{key}-deleted", ext, "\n".join(lines[:i] + lines[i + 1:]), max(1, i), command)


# ---- CSV: one mutation per cell of a few rows -------------------------------------------------------------------
def csv_cases(kind, base_text, command, rows, columns=None, ext="csv", text_columns=()):
    lines = base_text.split("\n")
    header_i = next(i for i, l in enumerate(lines) if l and not l.startswith("#"))
    header = lines[header_i].split(",")
    data = [i for i, l in enumerate(lines) if i > header_i and l and not l.startswith("#")]
    for r in rows:
        i = data[r]
        cells = lines[i].split(",")
        for c, name in enumerate(header):
            if (columns and name not in columns) or name in text_columns:
                continue  # free-text columns (ids, names) take any value
            for label, new in [("word", "xyz"), ("neg", "-3"), ("inf", "inf")]:
                if c >= len(cells) or cells[c] == new:
                    continue
                mutated = cells[:c] + [new] + cells[c + 1:]
                add(kind, f"r{r}-{name}-{label}", ext,
                    "\n".join(lines[:i] + [",".join(mutated)] + lines[i + 1:]), i + 1, command)
        # A row with a field too few.
        add(kind, f"r{r}-short", ext, "\n".join(lines[:i] + [",".join(cells[:-2])] + lines[i + 1:]), i + 1,
            command)


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def main():
    if os.path.exists(CORPUS):
        shutil.rmtree(CORPUS)
    os.makedirs(CORPUS)
    # Scenarios (mmtwin plan): the README's default scenario.
    yaml_cases("scenario", read("scenarios/default.yaml"), "plan {file}", skip_keys=("name", "description"))
    # A scenario with a model spec file, a cluster file and a cost profile next to it is covered by the kinds below.
    # Models (mmtwin trace stats --model FILE): the zoo's InternLM2-20B.
    yaml_cases("model", read("traces/models/internlm2-20b.yaml"),
               "trace stats {src}/scenarios/validation/traces/vision-audio-mix.csv --model {file}",
               skip_keys=("name", "description", "reference"))
    # Clusters (mmtwin kernels --cluster FILE): the H200 preset.
    yaml_cases("cluster", read("traces/clusters/h200-8x400g.yaml"),
               "kernels {src}/traces/clusters/profiles/h200-kernels.csv --cluster {file}",
               skip_keys=("name", "description", "reference"))
    # Sweeps (mmtwin sweep --dry-run): LongVILA's 32-GPU sweep, its base seen from the corpus folder.
    sweep = read("scenarios/sweeps/longvila-32gpu.yaml").replace(
        "base: ../longvila/mmsp-32gpu.yaml", "base: " + rel_to_corpus_dir("sweep", "scenarios/longvila/mmsp-32gpu.yaml"))
    yaml_cases("sweep", sweep, "sweep {file} --dry-run", skip_keys=("name", "description"))
    # Tune spaces (mmtwin tune --dry-run).
    tune = read("scenarios/tune/default-16gpu.yaml").replace(
        "base: ../default.yaml", "base: " + rel_to_corpus_dir("tune", "scenarios/default.yaml"))
    yaml_cases("tune", tune, "tune {file} --dry-run -o {out}/tune", skip_keys=("name", "description"))
    # Validation suites (mmtwin validate; a suite left valid would fail at the missing backend, exit 1).
    suite = read("scenarios/validation/cpu-ws2.suite.yaml")
    for n in re.findall(r"cpu-ws2/[a-z0-9-]+\.yaml", suite):
        suite = suite.replace(n, rel_to_corpus_dir("suite", "scenarios/validation/" + n), 1)
    yaml_cases("suite", suite, "validate {file} -o {out}/v --train /bin/false", skip_keys=("name", "description"))
    # By hand: the groups issue 34 named (out-of-range values, device figures that would overflow the engine's
    # times, limits hidden behind a preset), each one edit of the default scenario.
    base = read("scenarios/default.yaml")
    for name, old_text, new_text in [
        ("dp-beyond-int", "dp: 2,", "dp: 3000000000,"),
        ("tp-zero", "tp: 2,", "tp: 0,"),
        ("pp-beyond-layers", "pp: 4,", "pp: 4096,"),
        ("peak-tiny", "nodes: 2}", "nodes: 2, device: {peak_flops: 1e-300}}"),
        ("hbm-tiny", "nodes: 2}", "nodes: 2, device: {hbm_bytes_per_s: 1e-300}}"),
        ("memory-one-byte", "nodes: 2}", "nodes: 2, device: {memory_bytes: 1}}"),
        ("efficiency-huge", "nodes: 2}", "nodes: 2, device: {efficiency: 1e300}}"),
        ("device-unknown-key", "nodes: 2}", "nodes: 2, device: {flops: 1e15}}"),
        ("samples-beyond-limit", "samples: 20000", "samples: 2000000000"),
        ("seed-negative", "seed: 1}", "seed: -1}"),
        ("zero-stage-4", "zero_stage: 1}", "zero_stage: 4}"),
        ("vpp-zero", "vpp: 1,", "vpp: 0,"),
        ("micro-batches-huge", "micro_batches: 8,", "micro_batches: 99999999999999999999,"),
        ("engine-unknown", "engine: analytic", "engine: quantum"),
        ("schedule-unknown", "schedule: 1f1b", "schedule: 2f2b"),
        ("preset-unknown", "preset: a100-4x200g", "preset: a100-4x200"),
    ]:
        assert old_text in base, old_text
        i = base[:base.index(old_text)].count("\n")
        add("scenario", "hand-" + name, "yaml", base.replace(old_text, new_text, 1), i + 1, "plan {file}")
    # Traces (mmtwin trace stats).
    trace = "\n".join(read("scenarios/validation/traces/vision-audio-mix.csv").split("\n")[:40]) + "\n"
    csv_cases("trace", trace, "trace stats {file}", rows=[0, 5, 17], text_columns=("sample_id", "subset", "meta"))
    # Cost profiles (a scenario's cost: FILE, mmtwin simulate --cost).
    profile = read("traces/clusters/profiles/h200-fp32-eager-internvl-llama3-8b.csv")
    csv_cases("cost", profile,
              "simulate {src}/scenarios/validation/gpu-h200/b4-mb1.yaml --cost {file} -o {out}/run", rows=[0, 3])
    # Kernel tables (mmtwin kernels).
    kernels = "\n".join(read("traces/clusters/profiles/h200-kernels.csv").split("\n")[:12]) + "\n"
    csv_cases("kernels", kernels, "kernels {file} --cluster h200-8x400g", rows=[0, 4],
              columns=["family", "m", "n", "k", "pass", "median_us", "span", "heads"])
    with open(os.path.join(CORPUS, "cases.tsv"), "w") as f:
        f.write("# tests/messages/make_corpus.py: id, kind, file, line, command\n")
        for c in cases:
            f.write("\t".join(str(x) for x in c) + "\n")
    print(f"{len(cases)} cases in {CORPUS}")


if __name__ == "__main__":
    main()
