// SPDX-License-Identifier: Apache-2.0
// A folder of files written as a unit: a run folder (core/records/run_folder.h RunFolderWriter writes through
// this) is either the complete old one or the complete new one at every moment, whatever kills the process or
// fails in between.
//
//   MMTWIN_RETURN_IF_ERROR(WriteFolderAtomic("runs/default", {{"notes.txt", text}, {"plot.csv", csv}}));
//
// How: the files are written and fsync'ed into a staging sibling `NAME.tmp-PID`, which is then swapped with the
// target in one step (Linux renameat2 RENAME_EXCHANGE; a plain rename when there is no target yet), and the old
// contents, now in the staging path, are removed. Other files of the old folder (a user's notes, a plot) are
// carried into the new one (hard links, or copies). For safety it replaces only a run folder: an existing target
// must be empty or hold one of the files written here and no subfolder; ".", "..", the working folder or an
// ancestor of it are refused. A symbolic link to a folder is written through (the folder it names is replaced,
// the link stays). Writers hold an exclusive flock on the parent folder for the whole write, so concurrent
// writers of one folder (or of siblings) take turns and each ends with a complete folder; under that lock, a
// staging folder `NAME.tmp-<digits>` left by a killed writer is removed. Other `NAME.tmp-*` names (a user's
// `NAME.tmp-backup/`) are never touched.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace mmtwin {

// `files`: (name inside the folder, content); names are plain file names (no '/', not "." or "..").
Status WriteFolderAtomic(const std::string& dir,
                         const std::vector<std::pair<std::string, std::string_view>>& files);

// Removes `path` and, for a folder, everything in it (symbolic links removed, never followed); a path that is not
// there is not an error. POSIX nftw, not std::filesystem::remove_all: in a process that loads pip's LibTorch
// (mmtwin-train on the GPU machine) the std::filesystem functions LibTorch linked statically and exports
// (pytorch/pytorch#133437) can take the place of libstdc++'s, and remove_all crashed there (backend/gpu/README.md).
Status RemoveTree(const std::string& path);

}  // namespace mmtwin
