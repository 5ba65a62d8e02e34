// SPDX-License-Identifier: Apache-2.0
// Chakra trace files (chakra.h): et_def.proto's messages in Chakra's framing, and comm_group.json. Built with the
// generated protobuf code when protobuf (protoc and libprotobuf) was found at configure time; without it every
// call says how to get it.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/atomic_dir.h"
#include "core/util/csv.h"
#include "interop/chakra.h"

#ifdef MMTWIN_WITH_PROTOBUF
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "et_def.pb.h"
#endif

namespace mmtwin {

#ifdef MMTWIN_WITH_PROTOBUF

namespace {

namespace pb = ChakraProtoMsg;
namespace pio = google::protobuf::io;

void AddString(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs, const char* name,
               const std::string& v) {
  pb::AttributeProto* a = attrs->Add();
  a->set_name(name);
  a->set_string_val(v);
}
void AddInt64(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs, const char* name, int64_t v) {
  pb::AttributeProto* a = attrs->Add();
  a->set_name(name);
  a->set_int64_val(v);
}
void AddInt32(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs, const char* name, int32_t v) {
  pb::AttributeProto* a = attrs->Add();
  a->set_name(name);
  a->set_int32_val(v);
}

// Appends `m` with its varint32 size (Chakra's protoio framing).
void Frame(const google::protobuf::MessageLite& m, std::string& out) {
  pio::StringOutputStream s(&out);
  pio::CodedOutputStream c(&s);
  c.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&c);
}

std::string RankFile(const std::string& prefix, size_t rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

}  // namespace

bool ChakraAvailable() { return true; }

Status WriteChakra(const ChakraTrace& t, const std::string& dir, const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> files;
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    std::string out;
    pb::GlobalMetadata meta;
    meta.set_version(kChakraVersion);
    AddString(meta.mutable_attr(), "schema", kChakraSchema);
    AddInt64(meta.mutable_attr(), "mmtwin_ranks", static_cast<int64_t>(t.ranks.size()));
    AddInt64(meta.mutable_attr(), "mmtwin_pp", t.pp);
    AddString(meta.mutable_attr(), "mmtwin_source", t.source);
    AddInt64(meta.mutable_attr(), "mmtwin_iteration", t.iteration);
    Frame(meta, out);
    pb::Node node;
    for (const ChakraNode& n : t.ranks[r].nodes) {
      node.Clear();
      node.set_id(n.id);
      node.set_name(n.name);
      node.set_type(static_cast<pb::NodeType>(static_cast<int>(n.type)));
      for (uint64_t d : n.data_deps) node.add_data_deps(d);
      for (uint64_t d : n.ctrl_deps) node.add_ctrl_deps(d);
      node.set_duration_micros(n.duration_micros);
      auto* attrs = node.mutable_attr();
      pb::AttributeProto* a = attrs->Add();
      a->set_name("is_cpu_op");
      a->set_bool_val(false);
      a = attrs->Add();
      a->set_name("mmtwin_duration_us");
      a->set_double_val(n.duration_us);
      AddString(attrs, "mmtwin_kind", n.kind);
      AddInt32(attrs, "mmtwin_micro_batch", n.micro_batch);
      AddInt32(attrs, "mmtwin_chunk", n.chunk);
      AddInt32(attrs, "mmtwin_lane", n.lane);
      AddInt32(attrs, "mmtwin_pass", n.pass);
      AddInt32(attrs, "mmtwin_bucket", n.bucket);
      AddInt32(attrs, "mmtwin_peer", n.peer);
      if (n.type == ChakraNodeType::kColl) {
        AddInt64(attrs, "comm_type", n.comm_type);
        AddInt64(attrs, "comm_size", n.comm_size);
        AddString(attrs, "pg_name", n.pg_name);
      } else if (n.type == ChakraNodeType::kSend || n.type == ChakraNodeType::kRecv) {
        AddInt64(attrs, "comm_size", n.comm_size);
        if (n.type == ChakraNodeType::kSend) AddInt32(attrs, "comm_dst", n.comm_dst);
        if (n.type == ChakraNodeType::kRecv) AddInt32(attrs, "comm_src", n.comm_src);
        AddInt32(attrs, "comm_tag", n.comm_tag);
      }
      Frame(node, out);
    }
    files.emplace_back(RankFile(prefix, r), std::move(out));
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (const auto& [pg, ranks] : t.groups) groups[pg] = ranks;
  files.emplace_back("comm_group.json", groups.dump(1) + "\n");
  std::vector<std::pair<std::string, std::string_view>> views;
  for (const auto& [name, content] : files) views.emplace_back(name, content);
  return WriteFolderAtomic(dir, views);
}

Result<ChakraTrace> ReadChakra(const std::string& dir, const std::string& prefix) {
  ChakraTrace t;
  std::error_code ec;
  for (size_t r = 0;; ++r) {
    const std::string path = dir + "/" + RankFile(prefix, r);
    if (!std::filesystem::exists(path, ec)) {
      if (r == 0)
        return Error(path + ": no such file (rank 0 of the trace " + dir + "/" + prefix + ".RANK.et)");
      break;
    }
    MMTWIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
    pio::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
    pio::CodedInputStream c(&in);
    c.SetTotalBytesLimit(INT32_MAX);
    auto next = [&](google::protobuf::MessageLite& m) -> Result<bool> {
      uint32_t size = 0;
      if (!c.ReadVarint32(&size)) return false;  // the end
      const auto limit = c.PushLimit(static_cast<int>(size));
      if (!m.ParseFromCodedStream(&c) || !c.ConsumedEntireMessage()) return Error("does not parse");
      c.PopLimit(limit);
      return true;
    };
    pb::GlobalMetadata meta;
    auto got = next(meta);
    if (!got.ok() || !*got) return Error(path + ": message 0 (GlobalMetadata): does not parse");
    for (const pb::AttributeProto& a : meta.attr()) {
      if (a.name() == "mmtwin_pp") t.pp = static_cast<int>(a.int64_val());
      if (a.name() == "mmtwin_source") t.source = a.string_val();
      if (a.name() == "mmtwin_iteration") t.iteration = a.int64_val();
    }
    ChakraRank rank;
    pb::Node node;
    for (size_t i = 0;; ++i) {
      node.Clear();
      auto more = next(node);
      if (!more.ok())
        return Error(path + ": node " + std::to_string(i) + ": does not parse as a Chakra Node");
      if (!*more) break;
      ChakraNode n;
      n.id = node.id();
      if (n.id != i)
        return Error(path + ": node " + std::to_string(i) + ": id " + std::to_string(n.id) +
                     " (mmtwin numbers a rank's nodes 0, 1, ... in order)");
      n.name = node.name();
      switch (node.type()) {
        case pb::COMP_NODE:
        case pb::COMM_SEND_NODE:
        case pb::COMM_RECV_NODE:
        case pb::COMM_COLL_NODE:
          n.type = static_cast<ChakraNodeType>(static_cast<int>(node.type()));
          break;
        default:
          return Error(path + ": node " + std::to_string(i) + " (" + n.name + "): type " +
                       pb::NodeType_Name(node.type()) +
                       " (mmtwin reads COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE and COMM_COLL_NODE)");
      }
      n.data_deps.assign(node.data_deps().begin(), node.data_deps().end());
      n.ctrl_deps.assign(node.ctrl_deps().begin(), node.ctrl_deps().end());
      n.duration_micros = node.duration_micros();
      n.duration_us = static_cast<double>(n.duration_micros);  // unless mmtwin_duration_us says more exactly
      for (const pb::AttributeProto& a : node.attr()) {
        const std::string& k = a.name();
        if (k == "mmtwin_duration_us")
          n.duration_us = a.double_val();
        else if (k == "mmtwin_kind")
          n.kind = a.string_val();
        else if (k == "mmtwin_micro_batch")
          n.micro_batch = a.int32_val();
        else if (k == "mmtwin_chunk")
          n.chunk = a.int32_val();
        else if (k == "mmtwin_lane")
          n.lane = a.int32_val();
        else if (k == "mmtwin_pass")
          n.pass = a.int32_val();
        else if (k == "mmtwin_bucket")
          n.bucket = a.int32_val();
        else if (k == "mmtwin_peer")
          n.peer = a.int32_val();
        else if (k == "comm_type")
          n.comm_type = static_cast<int>(a.int64_val());
        else if (k == "comm_size")
          n.comm_size = a.int64_val();
        else if (k == "comm_src")
          n.comm_src = a.int32_val();
        else if (k == "comm_dst")
          n.comm_dst = a.int32_val();
        else if (k == "comm_tag")
          n.comm_tag = a.int32_val();
        else if (k == "pg_name")
          n.pg_name = a.string_val();
      }
      rank.nodes.push_back(std::move(n));
    }
    t.ranks.push_back(std::move(rank));
  }
  const std::string groups_path = dir + "/comm_group.json";
  MMTWIN_ASSIGN_OR_RETURN(std::string text, ReadFile(groups_path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error(groups_path + ": expected a JSON object {\"PG\": [ranks...]}");
  for (const auto& [pg, ranks] : j.items()) {
    if (!ranks.is_array()) return Error(groups_path + ": " + pg + ": expected a list of ranks");
    std::vector<int> members;
    for (const auto& r : ranks) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 ||
          r.get<int64_t>() >= static_cast<int64_t>(t.ranks.size()))
        return Error(groups_path + ": " + pg + ": " + r.dump() + " is not a rank of the trace (0.." +
                     std::to_string(t.ranks.size() - 1) + ")");
      members.push_back(r.get<int>());
    }
    t.groups[pg] = std::move(members);
  }
  return t;
}

#else  // without protobuf

namespace {
Error NoProtobuf() {
  return Error(
      "this mmtwin was built without protobuf, so it cannot write or read Chakra traces: install "
      "protobuf-compiler "
      "and libprotobuf-dev (Debian) and configure again");
}
}  // namespace

bool ChakraAvailable() { return false; }
Status WriteChakra(const ChakraTrace&, const std::string&, const std::string&) { return NoProtobuf(); }
Result<ChakraTrace> ReadChakra(const std::string&, const std::string&) { return NoProtobuf(); }

#endif

}  // namespace mmtwin
