// SPDX-License-Identifier: Apache-2.0
// One rank of a backend job, and the single-process reference (train.h). The only translation unit besides
// model.cc that includes LibTorch; c10d (Gloo) carries every transfer between processes.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "backend/measure.h"
#include "backend/model.h"
#include "backend/train.h"
#include "driver/planner.h"
#include "core/plan/mesh.h"
#include "core/records/pingpong.h"
#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"

namespace mmtwin::backend {
namespace {

using Clock = std::chrono::steady_clock;
double NowUs() { return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count(); }

// ---- Peak memory: a counting wrapper around the default CPU allocator ----

std::atomic<int64_t> g_live_bytes{0}, g_peak_bytes{0};
// The peak since the last StartWindow(): a layer's backward working memory is its window's peak less the live
// bytes at its start.
std::atomic<int64_t> g_window_peak_bytes{0};
int64_t StartWindow() {
  const int64_t live = g_live_bytes.load(std::memory_order_relaxed);
  g_window_peak_bytes.store(live, std::memory_order_relaxed);
  return live;
}
int64_t WindowGrowth(int64_t start) {
  return std::max<int64_t>(0, g_window_peak_bytes.load(std::memory_order_relaxed) - start);
}

// The default allocator's deleter frees the pointer itself (context == data, which raw_allocate requires), so
// the sizes live in a table keyed by the pointer.
std::mutex g_sizes_mu;
std::unordered_map<void*, size_t>* g_sizes = new std::unordered_map<void*, size_t>();
c10::DeleterFnPtr g_inner_delete = nullptr;

void DeleteCounted(void* ptr) {
  if (ptr) {
    std::lock_guard<std::mutex> lock(g_sizes_mu);
    auto it = g_sizes->find(ptr);
    if (it != g_sizes->end()) {
      g_live_bytes.fetch_sub(static_cast<int64_t>(it->second), std::memory_order_relaxed);
      g_sizes->erase(it);
    }
  }
  g_inner_delete(ptr);
}
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) { g_inner_delete = inner->raw_deleter(); }
  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr p = inner_->allocate(n);
    void* data = p.release_context();
    if (data) {
      std::lock_guard<std::mutex> lock(g_sizes_mu);
      (*g_sizes)[data] = n;
    }
    const int64_t live = g_live_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed) + n;
    int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
    while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
    }
    int64_t window = g_window_peak_bytes.load(std::memory_order_relaxed);
    while (live > window && !g_window_peak_bytes.compare_exchange_weak(window, live)) {
    }
    return {data, data, &DeleteCounted, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &DeleteCounted; }

 private:
  c10::Allocator* inner_;
};
void InstallCountingAllocator() {
  if (!c10::GetDefaultCPUAllocator()->raw_deleter()) return;  // cannot wrap: no peak memory
  static CountingAllocator* alloc = new CountingAllocator(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(alloc, /*priority=*/100);
}

// Intra-op threads: Torch's own pool and, when the BLAS behind Torch is OpenBLAS (Debian's libblas.so.3
// alternative), OpenBLAS's pool, which at::set_num_threads does not reach.
void SetThreads(int n) {
  // oneDNN (mkldnn) convolutions are off: Debian's Torch 1.13 returns nondeterministic garbage in the audio front
  // end's conv1d weight and bias gradients with them (seen as 1e17..1e35 values from run to run; the native
  // kernels agree with the reference every time: BackendOracle.Audio*).
  at::globalContext().setUserEnabledMkldnn(false);
  at::set_num_threads(n);
  using SetFn = void (*)(int);
  if (auto f = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

// ---- Failures that end the job: a peer gone, a timeout ----

struct PeerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What this rank is doing, for messages and for the launcher ($MMTWIN_STATUS_DIR/rankR, one fixed-size line).
class StatusBoard {
 public:
  // `dir` = $MMTWIN_STATUS_DIR (set by mmtwin-train launch); none: messages only.
  void Open(int rank) {
    const char* dir = std::getenv("MMTWIN_STATUS_DIR");
    if (!dir || !*dir) return;
    fd_ = ::open((std::string(dir) + "/rank" + std::to_string(rank)).c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                 0644);
  }
  ~StatusBoard() {
    if (fd_ >= 0) ::close(fd_);
  }
  void Set(const std::string& what) {
    current_ = what;
    if (fd_ < 0) return;
    char buf[160];
    std::memset(buf, ' ', sizeof buf);
    std::memcpy(buf, what.data(), std::min(what.size(), sizeof buf - 1));
    buf[sizeof buf - 1] = '\n';
    if (::pwrite(fd_, buf, sizeof buf, 0) < 0) {
    }
  }
  const std::string& current() const { return current_; }

 private:
  int fd_ = -1;
  std::string current_;
};

// ---- Layer groups of a chunk: a kept layer alone, or a recomputed group (a 1 followed by 2s) ----

struct Group {
  int first = 0, last = 0;  // layers [first, last)
  bool recompute = false;
};

std::vector<Group> GroupsOf(const Plan& plan, int chunk) {
  std::vector<Group> g;
  const int a = plan.partition.bounds[chunk], b = plan.partition.bounds[chunk + 1];
  const auto& rc = plan.recompute.layers;
  for (int l = a; l < b;) {
    const uint8_t f = l < static_cast<int>(rc.size()) ? rc[l] : 0;
    if (f == 0) {
      g.push_back({l, l + 1, false});
      ++l;
      continue;
    }
    int e = l + 1;
    while (e < b && e < static_cast<int>(rc.size()) && rc[e] == 2) ++e;
    g.push_back({l, e, true});
    l = e;
  }
  return g;
}

// Parts with fresh leaves: detached, requiring grad (the cut between layers).
State Cut(const State& s) {
  State c;
  for (const at::Tensor& t : s.done) c.done.push_back(t.detach().requires_grad_(true));
  if (s.x.defined()) c.x = s.x.detach().requires_grad_(true);
  return c;
}

// Layer workload for the profile: the simulator's own (MicroBatch::workloads), so calibration fits the features
// the cost model prices.
void Workload(const mmtwin::Layer& l, const MicroBatch& mb, LayerTiming& p) {
  const LayerWorkload& w = mb.workloads.at(static_cast<size_t>(l.component));
  p.tokens = w.tokens;
  p.spans = static_cast<int32_t>(w.sequences);
  p.attention_pairs = w.attn_pairs;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  while (true) {
    const size_t c = line.find(',', start);
    f.push_back(line.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return f;
}

// ---- The grads file (train.h: dump_grads) ----

void WriteGrads(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& named,
                double loss, bool values = false) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("MMTG", 4);
  auto put = [&](const std::string& name, const float* data, uint64_t n) {
    const uint32_t len = static_cast<uint32_t>(name.size());
    out.write(reinterpret_cast<const char*>(&len), 4);
    out.write(name.data(), len);
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * 4));
  };
  const float l = static_cast<float>(loss);
  put("__loss__", &l, 1);
  for (const auto& [name, p] : named) {
    at::Tensor g = values               ? p.detach().contiguous()
                   : p.grad().defined() ? p.grad().contiguous()
                                        : at::zeros_like(p);
    put(name, g.data_ptr<float>(), static_cast<uint64_t>(g.numel()));
  }
}

// ---- Plan distribution: rank 0 plans, every rank reads the plan and the shapes of its samples ----

std::string SamplesText(const Trace& t, const Plan& plan) {
  std::vector<uint8_t> used(t.size(), 0);
  for (const IterationData& it : plan.iterations)
    for (const auto& dp : it.micro_batches)
      for (const auto& mb : dp)
        for (uint32_t i : mb) used[i] = 1;
  std::ostringstream o;
  o.precision(17);
  o << t.size() << "\n";
  for (size_t i = 0; i < t.size(); ++i)
    if (used[i]) {
      const Sample& s = t.samples[i];
      o << i << "," << s.image_tiles << "," << s.video_frames << "," << s.audio_seconds << ","
        << s.text_tokens << "\n";
    }
  return o.str();
}

Result<Trace> TraceFromText(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  Trace t;
  if (!std::getline(in, line)) return Error("plan samples: empty");
  int64_t n = 0;
  if (!ParseInt64(line, n) || n < 0) return Error("plan samples: bad size");
  t.samples.resize(static_cast<size_t>(n));
  t.ids.PushNumbered("", 1, 0, t.samples.size());  // the plan's sample indices: the backend needs no ids
  while (std::getline(in, line)) {
    std::vector<std::string> f = SplitCsvLine(line);
    int64_t i = 0, tiles = 0, frames = 0, text_tokens = 0;
    double audio = 0;
    if (f.size() != 5 || !ParseInt64(f[0], i) || !ParseInt64(f[1], tiles) || !ParseInt64(f[2], frames) ||
        !ParseDouble(f[3], audio) || !ParseInt64(f[4], text_tokens) || i < 0 || i >= n)
      return Error("plan samples: bad line '" + line + "'");
    Sample& s = t.samples[i];
    s.image_tiles = static_cast<uint32_t>(tiles);
    s.video_frames = static_cast<uint32_t>(frames);
    s.audio_seconds = audio;
    s.text_tokens = static_cast<uint32_t>(text_tokens);
  }
  return t;
}

// AdamW (lr 1e-4, betas 0.9 / 0.95, eps 1e-8, weight decay 0.1), fp32, step `step` (from 1), in place on
// `p` (a parameter or a ZeRO-1 shard of one) with its moments `m`, `v`. Element-wise: a shard updated alone is
// the same as the shard of the whole update.
void AdamW(at::Tensor p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, int64_t step) {
  const double lr = 1e-4, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const double c1 = 1 - std::pow(b1, static_cast<double>(step)),
               c2 = 1 - std::pow(b2, static_cast<double>(step));
  m.mul_(b1).add_(g, 1 - b1);
  v.mul_(b2).addcmul_(g, g, 1 - b2);
  p.mul_(1 - lr * wd);
  p.addcdiv_(m / c1, (v / c2).sqrt_().add_(eps), -lr);
}

int64_t LossTokens(const ModelSpec& m, const Trace& t, const IterationData& it) {
  int64_t n = 0;
  for (const auto& dp : it.micro_batches)
    for (const auto& mb : dp)
      for (uint32_t i : mb) n += TokensFor(m, t.samples[i]).llm_tokens;
  return n;
}

// ---- The rank ----

struct Held {  // what the forward of (micro-batch, chunk) keeps for its backward
  struct Entry {
    Group group;
    State in, out;  // out is empty for a recomputed group
    double fwd_us = 0;
  };
  std::vector<Entry> entries;
  State out;  // the chunk's output (or the loss)
};

struct PendingSend {
  c10::intrusive_ptr<c10d::Work> header, payload;
  at::Tensor header_t, payload_t;
};

// One DP gradient bucket of a chunk: all-reduced (ZeRO 0), or reduce-scattered (ZeRO-1: an all-to-all of the
// padded flat gradient, each rank summing the dp pieces of its own shard; Gloo has no reduce-scatter).
struct PendingBucket {
  c10::intrusive_ptr<c10d::Work> work;
  at::Tensor flat;                 // the bucket's gradients, flat (ZeRO-1: padded to a multiple of dp)
  at::Tensor recv;                 // ZeRO-1: the dp pieces of this rank's shard
  at::Tensor shard;                // ZeRO-1: this rank's shard of the summed gradient, after FinishReduce
  int64_t numel = 0;               // gradient elements (without the padding)
  std::vector<at::Tensor> grads;   // written back after the all-reduce (ZeRO 0)
  std::vector<at::Tensor> params;  // the bucket's parameters, in order
  OpRecord rec;
  bool done = false;
};

// Rank 0 keeps its finished iterations when the launcher, torchrun or Ctrl-C stops the job. SIGTERM, SIGINT
// and SIGHUP are blocked (threads inherit the mask: this runs before Torch starts any) and taken by one thread
// with sigwait, which lets the record writer finish its write (at most 4 s; the launcher kills after 5 s) and
// exits 128 + signal. g_writer_mu keeps the writer alive while that thread uses it.
std::mutex g_writer_mu;
RecordWriter* g_writer = nullptr;  // guarded by g_writer_mu

void TakeTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return;
  std::thread([set] {
    int sig = SIGTERM;
    (void)::sigwait(&set, &sig);
    {
      std::lock_guard<std::mutex> lock(g_writer_mu);
      if (g_writer) (void)g_writer->Flush(std::chrono::seconds(4));
    }
    ::_exit(128 + sig);
  }).detach();
}

class Rank {
 public:
  Rank(const TrainOptions& o, const Rendezvous& rv, std::ostream& out, std::ostream& err)
      : opt_(o), rv_(rv), out_(out), err_(err) {}
  ~Rank() {  // before writer_ goes (it flushes in its destructor)
    std::lock_guard<std::mutex> lock(g_writer_mu);
    g_writer = nullptr;
  }

  int Run();

 private:
  Status Setup();
  void RunIteration(int index, const IterationData& it, bool measured, bool dump);
  void Forward(int m, int chunk, const IterationData& it);
  // The forward dispatch (pass forward) or the backward all-to-all (pass backward) of micro-batch m.
  void Dispatch(int m, const std::vector<std::vector<DispatchTransfer>>& lists, PassKind pass);
  void Backward(int m, int chunk);
  void SendState(const std::vector<at::Tensor>& parts, bool has_x, int peer_pp, int tag, OpKind kind, int m,
                 int chunk);
  std::vector<at::Tensor> RecvState(int peer_pp, int tag, bool& has_x, PassKind pass, int m, int chunk);
  void StartChunkReduce(int chunk);
  void PollBuckets();
  void FinishReduce();
  void OptimizerStep();
  std::vector<std::pair<std::string, at::Tensor>> Whole(bool values);
  double DumpLoss() const;
  static void WriteBack(std::vector<at::Tensor>& tensors, const at::Tensor& flat);
  at::Tensor GatherShards(const at::Tensor& shard, int chunk, const std::string& what);
  void AlignClocks();
  void PingPong();
  void Record(OpKind kind, Lane lane, int m, int chunk, double t0, double t1, int64_t bytes = 0,
              PassKind pass = PassKind::kForward);
  void Publish(int index);

  int Tag(int dir, int m, int chunk) const {
    return ((dir * plan_.parallel.micro_batches + m) * plan_.parallel.chunks() + chunk);
  }

  TrainOptions opt_;
  Rendezvous rv_;
  std::ostream& out_;
  std::ostream& err_;
  StatusBoard status_;

  Scenario scenario_;
  ModelSpec model_;
  Plan plan_;
  Trace trace_;
  std::unique_ptr<PlannedRun> run_;  // rank 0 only
  std::unique_ptr<DeviceMesh> mesh_;
  MeshCoord coord_;
  int device_ = 0;

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> world_, dp_, pp_, tp_;
  TpGroup tp_group_;  // what the model's tensor-parallel blocks use (model.h)

  std::map<int, std::vector<std::unique_ptr<Layer>>> layers_;  // chunk -> its layers
  std::vector<std::pair<std::string, at::Tensor>> named_;      // this rank's parameters
  std::vector<int> shard_dims_;                                // per parameter: its TP split (-1: none)
  std::map<int, std::vector<at::Tensor>> chunk_params_;
  std::vector<at::Tensor> adam_m_, adam_v_;  // ZeRO 0: per parameter
  // ZeRO-1: the moments of this rank's shard of each bucket, by (chunk, bucket); buckets are the same in every
  // iteration (chunk parameters in order, cut at dp_bucket_bytes).
  std::map<std::pair<int, int>, std::pair<at::Tensor, at::Tensor>> shard_m_v_;
  bool zero1_ = false;  // zero_stage 1 with dp > 1
  int64_t step_ = 0;

  // Per iteration.
  std::vector<MicroBatch> mbs_;
  std::map<std::pair<int, int>, Held> held_;
  const IterationData* running_ = nullptr;  // the iteration being run (its backward all-to-alls)
  std::map<std::pair<int, int>, std::vector<at::Tensor>> local_acts_, local_grads_;  // same-rank handoff
  std::map<std::pair<int, int>, bool> local_has_x_;
  std::vector<PendingSend> sends_;
  std::vector<PendingBucket> buckets_;
  std::vector<PendingBucket> reduced_;  // ZeRO-1: buckets reduced this iteration, for the sharded step
  std::map<int, int> backwards_left_;   // chunk -> backwards still to run this iteration
  double loss_sum_ = 0;
  int64_t iteration_ = 0;
  std::string label_;  // "warm-up iteration 1" / "measured iteration 2 (epoch index 49)"
  bool measuring_ = false;
  bool dumping_ = false;        // this iteration's gradients and updated parameters are written (dump_grads)
  double clock_offset_us_ = 0;  // add to local times to get rank 0's clock
  double iter_start_us_ = 0;
  std::vector<OpRecord> ops_;
  std::vector<LayerTiming> profile_;

  // Rank 0: the measured records' writer (declared after run_, which it reads: destroyed first).
  std::unique_ptr<RecordWriter> writer_;
  std::vector<int64_t> stage_peak_;  // the largest peak of any rank per stage so far
  int64_t published_ = 0;
  bool write_error_reported_ = false;
};

void Rank::Record(OpKind kind, Lane lane, int m, int chunk, double t0, double t1, int64_t bytes,
                  PassKind pass) {
  if (!measuring_) return;
  OpRecord r;
  r.source = RecordSource::kMeasured;
  r.iteration = iteration_;
  r.kind = kind;
  r.lane = lane;
  r.device = device_;
  r.micro_batch = m;
  r.chunk = chunk;
  r.start_us = t0 + clock_offset_us_;
  r.duration_us = std::max(0.0, t1 - t0);
  r.bytes = bytes;
  r.pass = pass;
  if (m >= 0 && m < static_cast<int>(mbs_.size()) &&
      (kind == OpKind::kForward || kind == OpKind::kBackward || kind == OpKind::kRecompute)) {
    r.tokens = mbs_[m].llm_tokens;
    r.attention_pairs = mbs_[m].attention_pairs;
    r.spans = static_cast<int32_t>(mbs_[m].samples.size());
  }
  ops_.push_back(r);
}

Status Rank::Setup() {
  // Rendezvous: the TCPStore on MASTER_ADDR:MASTER_PORT (rank 0 serves it).
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(rv_.master_port);
  so.isServer = rv_.rank == 0;
  so.numWorkers = rv_.world_size;
  so.waitWorkers = true;
  // The scenario (timeout) is not read yet: generous rendezvous timeout.
  so.timeout = std::chrono::milliseconds(600000);
  store_ = c10::make_intrusive<c10d::TCPStore>(rv_.master_addr, so);

  // Rank 0 plans; the others read the plan and the samples' shapes.
  MMTWIN_ASSIGN_OR_RETURN(scenario_, LoadScenario(opt_.scenario));
  MMTWIN_ASSIGN_OR_RETURN(model_, LoadScenarioModel(scenario_));
  if (rv_.rank == 0) {
    PlanOptions po;
    po.memory_report = true;
    auto planned = BuildPlan(scenario_, po);
    if (!planned) {
      store_->set("mmtwin/plan", std::vector<uint8_t>{'!'});
      return planned.error();
    }
    run_ = std::make_unique<PlannedRun>(std::move(*planned));
    if (opt_.measure && !opt_.pingpong) {
      writer_ = std::make_unique<RecordWriter>(opt_.rundir, *run_, scenario_.backend.warmup_iterations,
                                               "libtorch-gloo");
      std::lock_guard<std::mutex> lock(g_writer_mu);
      g_writer = writer_.get();
    }
    const std::string p = PlanToJson(run_->plan), t = SamplesText(*run_->trace, run_->plan);
    store_->set("mmtwin/samples", std::vector<uint8_t>(t.begin(), t.end()));
    store_->set("mmtwin/plan", std::vector<uint8_t>(p.begin(), p.end()));
  }
  const std::vector<uint8_t> pb = store_->get("mmtwin/plan");
  if (pb.size() == 1 && pb[0] == '!') return Error("rank 0 could not plan the scenario");
  MMTWIN_ASSIGN_OR_RETURN(plan_, PlanFromJson(std::string(pb.begin(), pb.end()), "plan (from rank 0)"));
  const std::vector<uint8_t> tb = store_->get("mmtwin/samples");
  MMTWIN_ASSIGN_OR_RETURN(trace_, TraceFromText(std::string(tb.begin(), tb.end())));
  if (plan_.parallel.world_size() != rv_.world_size)
    return Error("WORLD_SIZE " + std::to_string(rv_.world_size) + " is not dp * tp * pp = " +
                 std::to_string(plan_.parallel.world_size()) + " of the scenario");

  mesh_ = std::make_unique<DeviceMesh>(plan_.parallel);
  coord_ = mesh_->Coord(rv_.rank);
  device_ = mesh_->DeviceOfRank(rv_.rank);

  // Process groups: the world, this rank's DP group and its pipeline (each over its own store prefix).
  auto opts = c10d::ProcessGroupGloo::Options::create(
      std::chrono::milliseconds(static_cast<int64_t>(scenario_.backend.timeout_s * 1000)));
  const bool loopback = rv_.master_addr == "127.0.0.1" || rv_.master_addr == "localhost";
  opts->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                   : c10d::ProcessGroupGloo::createDefaultDevice());
  opts->threads = 2;
  world_ = c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>("world", store_), rv_.rank, rv_.world_size, opts);
  auto group = [&](MeshDim dim, const std::string& name) {
    const RankGroup g = mesh_->Group(dim, rv_.rank);
    int me = 0;
    for (size_t i = 0; i < g.ranks.size(); ++i)
      if (g.ranks[i] == rv_.rank) me = static_cast<int>(i);
    return c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>(name + "/" + std::to_string(g.ranks[0]), store_), me,
        static_cast<int>(g.ranks.size()), opts);
  };
  dp_ = group(MeshDim::kDp, "dp");
  pp_ = group(MeshDim::kPp, "pp");
  if (plan_.parallel.tp > 1) {
    tp_ = group(MeshDim::kTp, "tp");
    tp_group_.size = plan_.parallel.tp;
    tp_group_.rank = coord_.tp;
    tp_group_.all_reduce = [this](at::Tensor& t) {
      std::vector<at::Tensor> v{t};
      try {
        tp_->allreduce(v)->wait();
      } catch (const std::exception& e) {
        throw PeerFailure(label_ + ": tensor-parallel all-reduce: " + std::string(e.what()).substr(0, 300));
      }
    };
  }

  // The layers of this rank's chunks.
  const int chunks = plan_.parallel.chunks();
  for (int c = 0; c < chunks; ++c) {
    if (PipeRankOfChunk(c, plan_.parallel.pp) != coord_.pp) continue;
    for (int l = plan_.partition.bounds[c]; l < plan_.partition.bounds[c + 1]; ++l) {
      layers_[c].push_back(MakeLayer(model_, l, plan_.seed, &tp_group_));
      const std::vector<int>& dims = layers_[c].back()->shard_dims();
      for (size_t i = 0; i < layers_[c].back()->params().size(); ++i) {
        const auto& np = layers_[c].back()->params()[i];
        named_.push_back(np);
        shard_dims_.push_back(dims[i]);
        chunk_params_[c].push_back(np.second);
      }
    }
  }
  zero1_ = plan_.parallel.zero_stage == 1 && plan_.parallel.dp > 1;
  if (!zero1_)
    for (const auto& np : named_) {
      adam_m_.push_back(at::zeros_like(np.second));
      adam_v_.push_back(at::zeros_like(np.second));
    }
  return Status();
}

void Rank::SendState(const std::vector<at::Tensor>& parts, bool has_x, int peer_pp, int tag, OpKind kind,
                     int m, int chunk) {
  const double t0 = NowUs();
  PendingSend ps;
  ps.header_t = at::zeros({64}, at::TensorOptions().dtype(at::kLong));
  auto* h = ps.header_t.data_ptr<int64_t>();
  h[0] = static_cast<int64_t>(parts.size());
  h[1] = has_x ? 1 : 0;
  std::vector<at::Tensor> flat;
  for (size_t i = 0; i < parts.size() && i < 30; ++i) {
    h[2 + 2 * i] = parts[i].size(0);
    h[3 + 2 * i] = parts[i].dim() > 1 ? parts[i].size(1) : 1;
    flat.push_back(parts[i].detach().reshape({-1}));
  }
  ps.payload_t = flat.empty() ? at::zeros({0}) : at::cat(flat, 0).contiguous();
  std::vector<at::Tensor> hv{ps.header_t}, pv{ps.payload_t};
  ps.header = pp_->send(hv, peer_pp, 2 * tag);
  ps.payload = pp_->send(pv, peer_pp, 2 * tag + 1);
  const int64_t bytes = ps.payload_t.numel() * 4;
  sends_.push_back(std::move(ps));
  Record(kind, kind == OpKind::kP2pSendActivation ? Lane::kP2pForward : Lane::kP2pBackward, m, chunk, t0,
         NowUs(), bytes);
}

std::vector<at::Tensor> Rank::RecvState(int peer_pp, int tag, bool& has_x, PassKind pass, int m, int chunk) {
  const double t0 = NowUs();
  const RankGroup pipe = mesh_->Group(MeshDim::kPp, rv_.rank);
  const std::string what = std::string(pass == PassKind::kForward ? "activation" : "gradient") + " of mb " +
                           std::to_string(m) + " chunk " + std::to_string(chunk) + " from rank " +
                           std::to_string(pipe.ranks[peer_pp]);
  status_.Set(label_ + ": waiting for the " + what);
  at::Tensor header = at::zeros({64}, at::TensorOptions().dtype(at::kLong));
  std::vector<at::Tensor> hv{header};
  try {
    pp_->recv(hv, peer_pp, 2 * tag)->wait();
    const int64_t* h = header.data_ptr<int64_t>();
    const int64_t n = h[0];
    has_x = h[1] != 0;
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += h[2 + 2 * i] * h[3 + 2 * i];
    at::Tensor payload = at::empty({total}, at::TensorOptions().dtype(at::kFloat));
    std::vector<at::Tensor> pv{payload};
    pp_->recv(pv, peer_pp, 2 * tag + 1)->wait();
    std::vector<at::Tensor> parts;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = h[2 + 2 * i], c = h[3 + 2 * i];
      parts.push_back(payload.narrow(0, at, r * c).view({r, c}));
      at += r * c;
    }
    Record(OpKind::kP2pRecv, pass == PassKind::kForward ? Lane::kP2pForward : Lane::kP2pBackward, m, chunk,
           t0, NowUs(), total * 4, pass);
    return parts;
  } catch (const std::exception& e) {
    throw PeerFailure(label_ + ": waiting for the " + what + ": " + std::string(e.what()).substr(0, 300));
  }
}

// The data-dispatch all-to-all of post-balancing and the orchestrator before micro-batch m's first forward, among
// the stage-0 ranks of the DP replicas (this rank's DP group): each sends and receives the plan's bytes
// (IterationData::dispatch[m], core/plan/dispatch.h) with c10d's all-to-all. The payload is the planned volume;
// the synthetic inputs themselves are drawn at the destination from (seed, sample), so what arrives is not read.
// The orchestrator's backward all-to-all (IterationData::dispatch_backward[m], the encoder outputs' gradients
// going back) runs the same way at the start of chunk 0's backward of m, once its gradient has arrived.
void Rank::Dispatch(int m, const std::vector<std::vector<DispatchTransfer>>& lists, PassKind pass) {
  if (plan_.parallel.dp == 1 || m >= static_cast<int>(lists.size()) || lists[m].empty()) return;
  const int dp = plan_.parallel.dp, me = coord_.dp;
  const std::string what = pass == PassKind::kForward ? "dispatch all-to-all" : "backward all-to-all";
  std::vector<int64_t> send(dp, 0), recv(dp, 0);
  for (const DispatchTransfer& t : lists[m]) {
    const int64_t floats = (t.bytes + 3) / 4;
    if (t.src_rank == me) send[t.dst_rank] += floats;
    if (t.dst_rank == me) recv[t.src_rank] += floats;
  }
  int64_t n_send = 0, n_recv = 0;
  for (int r = 0; r < dp; ++r) n_send += send[r], n_recv += recv[r];
  status_.Set(label_ + ": " + what + " of mb " + std::to_string(m));
  at::Tensor out = at::empty({n_send}, at::TensorOptions().dtype(at::kFloat)).fill_(static_cast<float>(me));
  at::Tensor in = at::empty({n_recv}, at::TensorOptions().dtype(at::kFloat));
  const double t0 = NowUs();
  try {
    dp_->alltoall_base(in, out, recv, send)->wait();
  } catch (const std::exception& e) {
    throw PeerFailure(label_ + ": " + what + " of mb " + std::to_string(m) + ": " +
                      std::string(e.what()).substr(0, 300));
  }
  Record(OpKind::kDispatch, Lane::kDispatch, m, 0, t0, NowUs(), n_send * 4, pass);
}

void Rank::Forward(int m, int chunk, const IterationData& it) {
  const int pp = plan_.parallel.pp;
  const MicroBatch& mb = mbs_[m];
  if (chunk == 0) Dispatch(m, it.dispatch, PassKind::kForward);
  status_.Set(label_ + ": forward mb " + std::to_string(m) + " chunk " + std::to_string(chunk));
  State s;
  if (chunk > 0) {
    const int prev = PipeRankOfChunk(chunk - 1, pp);
    bool has_x = false;
    std::vector<at::Tensor> parts;
    if (prev == coord_.pp) {
      parts = local_acts_[{m, chunk}];
      has_x = local_has_x_[{m, chunk}];
      local_acts_.erase({m, chunk});
    } else {
      parts = RecvState(prev, Tag(0, m, chunk), has_x, PassKind::kForward, m, chunk);
    }
    s = State::FromParts(std::move(parts), has_x);
  }
  const double t0 = NowUs();
  Held held;
  auto& layers = layers_[chunk];
  const int first = plan_.partition.bounds[chunk];
  const std::vector<mmtwin::Layer> all = Layers(model_);
  for (const Group& g : GroupsOf(plan_, chunk)) {
    Held::Entry e;
    e.group = g;
    e.in = Cut(s);
    const int64_t live0 = g_live_bytes.load(std::memory_order_relaxed);
    const double g0 = NowUs();
    if (g.recompute) {
      at::NoGradGuard no_grad;
      State x = e.in;
      for (int l = g.first; l < g.last; ++l) x = layers[l - first]->Forward(std::move(x), mb);
      s = x;
    } else {
      e.out = layers[g.first - first]->Forward(e.in, mb);
      s = e.out;
    }
    e.fwd_us = NowUs() - g0;
    if (measuring_)
      for (int l = g.first; l < g.last; ++l) {
        LayerTiming p;
        p.iteration = iteration_;
        p.device = device_;
        p.micro_batch = m;
        p.layer = l;
        p.fwd_us = e.fwd_us / (g.last - g.first);
        if (!g.recompute) {
          // Memory the forward left allocated (what it saved for its backward, and its output), and the
          // output's own bytes (the next layer's input: what a recomputed layer keeps).
          p.act_bytes = std::max<int64_t>(0, g_live_bytes.load(std::memory_order_relaxed) - live0);
          p.out_bytes = s.x.defined() ? static_cast<int64_t>(s.x.nbytes()) : 0;
        }
        Workload(all[l], mb, p);
        profile_.push_back(p);
      }
    held.entries.push_back(std::move(e));
  }
  held.out = s;
  const double t1 = NowUs();
  Record(OpKind::kForward, Lane::kCompute, m, chunk, t0, t1);
  if (s.loss.defined()) loss_sum_ += s.loss.item<double>();
  const bool last = chunk == plan_.parallel.chunks() - 1;
  if (!last) {
    const int next = PipeRankOfChunk(chunk + 1, pp);
    std::vector<at::Tensor> parts = s.Parts();
    if (next == coord_.pp) {
      local_acts_[{m, chunk + 1}] = parts;
      local_has_x_[{m, chunk + 1}] = s.x.defined();
    } else {
      SendState(parts, s.x.defined(), next, Tag(0, m, chunk + 1), OpKind::kP2pSendActivation, m, chunk);
    }
  }
  held_[{m, chunk}] = std::move(held);
}

// Backward of one layer cut: outputs `out` with gradients `grads` (empty: the loss); returns the gradients of
// `in`'s parts (zeros where a part received none).
std::vector<at::Tensor> BackwardCut(const State& in, const State& out, const std::vector<at::Tensor>& grads) {
  if (out.loss.defined()) {
    torch::autograd::backward({out.loss}, {});
  } else {
    const std::vector<at::Tensor> outs = out.Parts();
    std::vector<at::Tensor> o, g;
    for (size_t i = 0; i < outs.size() && i < grads.size(); ++i)
      if (outs[i].requires_grad() && grads[i].defined()) {
        o.push_back(outs[i]);
        g.push_back(grads[i]);
      }
    if (!o.empty()) torch::autograd::backward(o, g);
  }
  std::vector<at::Tensor> r;
  for (const at::Tensor& t : in.Parts()) r.push_back(t.grad().defined() ? t.grad() : at::zeros_like(t));
  return r;
}

void Rank::Backward(int m, int chunk) {
  const int pp = plan_.parallel.pp;
  const MicroBatch& mb = mbs_[m];
  const bool last = chunk == plan_.parallel.chunks() - 1;
  std::vector<at::Tensor> grads;
  if (!last) {
    const int next = PipeRankOfChunk(chunk + 1, pp);
    bool has_x = false;
    if (next == coord_.pp) {
      grads = local_grads_[{m, chunk}];
      local_grads_.erase({m, chunk});
    } else {
      grads = RecvState(next, Tag(1, m, chunk), has_x, PassKind::kBackward, m, chunk);
    }
  }
  if (chunk == 0 && running_) Dispatch(m, running_->dispatch_backward, PassKind::kBackward);
  status_.Set(label_ + ": backward mb " + std::to_string(m) + " chunk " + std::to_string(chunk));
  Held held = std::move(held_[{m, chunk}]);
  held_.erase({m, chunk});
  auto& layers = layers_[chunk];
  const int first = plan_.partition.bounds[chunk];
  const double t0 = NowUs();
  double rc_us = 0;
  std::map<int, double> layer_bwd, layer_rc;
  std::map<int, int64_t> layer_work;  // the backward's working memory per layer (bytes above its start)
  for (int e = static_cast<int>(held.entries.size()) - 1; e >= 0; --e) {
    Held::Entry& en = held.entries[e];
    if (!en.group.recompute) {
      const double b0 = NowUs();
      const int64_t live0 = StartWindow();
      grads = BackwardCut(en.in, en.out, grads);
      layer_bwd[en.group.first] += NowUs() - b0;
      layer_work[en.group.first] = WindowGrowth(live0);
      continue;
    }
    // Recompute the group from its kept input, one cut per layer, then run their backwards.
    const double r0 = NowUs();
    std::vector<std::pair<State, State>> cuts;
    State x = en.in;
    for (int l = en.group.first; l < en.group.last; ++l) {
      State in = Cut(x);
      const double l0 = NowUs();
      State out = layers[l - first]->Forward(in, mb);
      layer_rc[l] += NowUs() - l0;
      cuts.emplace_back(in, out);
      x = out;
    }
    rc_us += NowUs() - r0;
    for (int i = static_cast<int>(cuts.size()) - 1; i >= 0; --i) {
      const double b0 = NowUs();
      const int64_t live0 = StartWindow();
      grads = BackwardCut(cuts[i].first, cuts[i].second, grads);
      layer_bwd[en.group.first + i] += NowUs() - b0;
      layer_work[en.group.first + i] = WindowGrowth(live0);
    }
  }
  const double t1 = NowUs();
  if (rc_us > 0) Record(OpKind::kRecompute, Lane::kCompute, m, chunk, t0, t0 + rc_us);
  Record(OpKind::kBackward, Lane::kCompute, m, chunk, t0 + rc_us, t1, 0, PassKind::kBackward);
  if (measuring_)
    for (LayerTiming& p : profile_)
      if (p.iteration == iteration_ && p.micro_batch == m && p.layer >= first &&
          p.layer < plan_.partition.bounds[chunk + 1]) {
        p.bwd_us = layer_bwd.count(p.layer) ? layer_bwd[p.layer] : 0;
        p.recompute_us = layer_rc.count(p.layer) ? layer_rc[p.layer] : 0;
        p.bwd_work_bytes = layer_work.count(p.layer) ? layer_work[p.layer] : 0;
      }
  if (chunk > 0) {
    const int prev = PipeRankOfChunk(chunk - 1, pp);
    const bool has_x = held.entries.front().in.x.defined();
    if (prev == coord_.pp) {
      local_grads_[{m, chunk - 1}] = grads;
    } else {
      SendState(grads, has_x, prev, Tag(1, m, chunk - 1), OpKind::kP2pSendGradient, m, chunk);
    }
  }
  if (--backwards_left_[chunk] == 0) StartChunkReduce(chunk);
  PollBuckets();
}

void Rank::StartChunkReduce(int chunk) {
  if (plan_.parallel.dp == 1) return;
  const int64_t cap = std::max<int64_t>(4, plan_.dp_bucket_bytes / 4);  // fp32 elements per bucket
  std::vector<at::Tensor> cur, cur_params;
  int64_t n = 0;
  int bucket = 0;
  auto flush = [&] {
    if (cur.empty()) return;
    PendingBucket b;
    std::vector<at::Tensor> flat;
    for (const at::Tensor& g : cur) flat.push_back(g.reshape({-1}));
    b.numel = n;
    b.grads = cur;
    b.params = cur_params;
    const double t0 = NowUs();
    if (zero1_) {
      const int64_t dp = plan_.parallel.dp, padded = (n + dp - 1) / dp * dp;
      if (padded > n) flat.push_back(at::zeros({padded - n}, at::TensorOptions().dtype(at::kFloat)));
      b.flat = at::cat(flat, 0);
      b.recv = at::empty({padded}, at::TensorOptions().dtype(at::kFloat));
      std::vector<int64_t> equal;  // empty: equal splits
      b.work = dp_->alltoall_base(b.recv, b.flat, equal, equal);
    } else {
      b.flat = at::cat(flat, 0);
      std::vector<at::Tensor> v{b.flat};
      b.work = dp_->allreduce(v);
    }
    b.rec.kind = OpKind::kDpCollective;
    b.rec.lane = Lane::kDp;
    b.rec.chunk = chunk;
    b.rec.bucket = bucket++;
    b.rec.bytes = b.flat.numel() * 4;
    b.rec.start_us = t0;
    buckets_.push_back(std::move(b));
    cur.clear();
    cur_params.clear();
    n = 0;
  };
  for (const at::Tensor& p : chunk_params_[chunk]) {
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    cur.push_back(p.grad());
    cur_params.push_back(p);
    n += p.numel();
    if (n >= cap) flush();
  }
  flush();
}

void Rank::PollBuckets() {
  for (PendingBucket& b : buckets_)
    if (!b.done && b.work->isCompleted()) {
      b.done = true;
      b.rec.duration_us = NowUs() - b.rec.start_us;
    }
}

void Rank::FinishReduce() {
  const double t0 = NowUs();
  status_.Set(label_ + ": DP gradient all-reduce");
  for (PendingBucket& b : buckets_) {
    try {
      b.work->wait();
    } catch (const std::exception& e) {
      throw PeerFailure(label_ + ": DP gradient all-reduce of chunk " + std::to_string(b.rec.chunk) + ": " +
                        std::string(e.what()).substr(0, 300));
    }
    if (!b.done) b.rec.duration_us = NowUs() - b.rec.start_us;
    if (zero1_) {
      b.shard = b.recv.view({plan_.parallel.dp, -1}).sum(0);
      // Tests (dump_grads) read every gradient whole: gather the reduced shards back (not done in training).
      if (dumping_) WriteBack(b.grads, GatherShards(b.shard, b.rec.chunk, "gradient"));
    } else {
      WriteBack(b.grads, b.flat);
    }
    if (measuring_) {
      OpRecord r = b.rec;
      r.source = RecordSource::kMeasured;
      r.iteration = iteration_;
      r.device = device_;
      r.micro_batch = -1;
      r.peer = mesh_->DpNeighbor(device_, 1);
      r.start_us += clock_offset_us_;
      ops_.push_back(r);
    }
  }
  if (zero1_)
    for (PendingBucket& b : buckets_) reduced_.push_back(std::move(b));
  buckets_.clear();
  if (plan_.parallel.dp > 1) Record(OpKind::kDpWait, Lane::kDp, -1, 0, t0, NowUs());
  for (PendingSend& s : sends_) {
    try {
      s.header->wait();
      s.payload->wait();
    } catch (const std::exception& e) {
      throw PeerFailure(label_ + ": completing a pipeline send: " + std::string(e.what()).substr(0, 300));
    }
  }
  sends_.clear();
}

void Rank::WriteBack(std::vector<at::Tensor>& tensors, const at::Tensor& flat) {
  int64_t at = 0;
  for (at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, at, t.numel()).view_as(t));
    at += t.numel();
  }
}

// All-gather of equal shards over the DP group: the whole (padded) flat tensor.
at::Tensor Rank::GatherShards(const at::Tensor& shard, int chunk, const std::string& what) {
  const int dp = plan_.parallel.dp;
  std::vector<at::Tensor> outs;
  for (int i = 0; i < dp; ++i) outs.push_back(at::empty_like(shard));
  std::vector<std::vector<at::Tensor>> out{outs};
  std::vector<at::Tensor> in{shard.contiguous()};
  try {
    dp_->allgather(out, in)->wait();
  } catch (const std::exception& e) {
    throw PeerFailure(label_ + ": ZeRO-1 all-gather of the " + what + " shards of chunk " +
                      std::to_string(chunk) + ": " + std::string(e.what()).substr(0, 300));
  }
  return at::cat(out[0], 0);
}

// AdamW on every parameter (ZeRO 0), or on this rank's shard of every bucket followed by an all-gather of the
// updated shards (ZeRO-1: the optimizer state exists only for the shard).
void Rank::OptimizerStep() {
  const double t0 = NowUs();
  at::NoGradGuard no_grad;
  ++step_;
  if (!zero1_) {
    for (size_t i = 0; i < named_.size(); ++i) {
      at::Tensor p = named_[i].second;
      if (p.grad().defined()) AdamW(p, p.grad(), adam_m_[i], adam_v_[i], step_);
    }
    Record(OpKind::kOptimizer, Lane::kCompute, -1, 0, t0, NowUs());
    return;
  }
  status_.Set(label_ + ": ZeRO-1 optimizer step");
  const int64_t me = coord_.dp, dp = plan_.parallel.dp;
  std::vector<std::pair<PendingBucket*, at::Tensor>> updated;
  for (PendingBucket& b : reduced_) {
    const int64_t shard = b.shard.numel();
    std::vector<at::Tensor> flat;
    for (const at::Tensor& p : b.params) flat.push_back(p.detach().reshape({-1}));
    if (shard * dp > b.numel) flat.push_back(at::zeros({shard * dp - b.numel}, b.shard.options()));
    at::Tensor mine = at::cat(flat, 0).narrow(0, me * shard, shard).clone();
    auto& mv = shard_m_v_[{b.rec.chunk, b.rec.bucket}];
    if (!mv.first.defined()) mv = {at::zeros_like(mine), at::zeros_like(mine)};
    AdamW(mine, b.shard, mv.first, mv.second, step_);
    updated.emplace_back(&b, mine);
  }
  Record(OpKind::kOptimizer, Lane::kCompute, -1, 0, t0, NowUs());
  status_.Set(label_ + ": ZeRO-1 all-gather of the updated parameters");
  for (auto& [b, mine] : updated) {
    const double g0 = NowUs();
    const at::Tensor all = GatherShards(mine, b->rec.chunk, "parameter");
    WriteBack(b->params, all);
    Record(OpKind::kDpAllGather, Lane::kDp, -1, b->rec.chunk, g0, NowUs(), all.numel() * 4);
    if (measuring_) {
      ops_.back().bucket = b->rec.bucket;
      ops_.back().peer = mesh_->DpNeighbor(device_, 1);
    }
  }
  reduced_.clear();
}

// The tests' view of this rank's parameters (values) or gradients: TP-split ones gathered whole over the TP
// group (a dump-only all-gather), as fresh tensors whose .grad() is the gathered gradient.
std::vector<std::pair<std::string, at::Tensor>> Rank::Whole(bool values) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < named_.size(); ++i) {
    const at::Tensor& p = named_[i].second;
    if (shard_dims_[i] < 0 || !tp_) {
      out.push_back(named_[i]);
      continue;
    }
    auto gather = [&](const at::Tensor& t) {
      std::vector<at::Tensor> outs;
      for (int k = 0; k < plan_.parallel.tp; ++k) outs.push_back(at::empty_like(t));
      std::vector<std::vector<at::Tensor>> o{outs};
      std::vector<at::Tensor> in{t.contiguous()};
      tp_->allgather(o, in)->wait();
      return at::cat(o[0], shard_dims_[i]);
    };
    at::Tensor whole = gather(p.detach());
    if (!values) whole.mutable_grad() = gather(p.grad().defined() ? p.grad() : at::zeros_like(p));
    out.emplace_back(named_[i].first, whole);
  }
  return out;
}

// Every TP rank computes the same loss: only TP rank 0 reports it, so the ranks' losses sum to the reference's.
double Rank::DumpLoss() const { return coord_.tp == 0 ? loss_sum_ : 0.0; }

void Rank::AlignClocks() {
  // Cristian's algorithm against rank 0 over the world group: 8 round trips, the offset of the shortest.
  at::Tensor t = at::zeros({1}, at::TensorOptions().dtype(at::kDouble));
  std::vector<at::Tensor> v{t};
  for (int r = 1; r < rv_.world_size; ++r) {
    if (rv_.rank == 0) {
      for (int k = 0; k < 8; ++k) {
        world_->recv(v, r, 1000 + k)->wait();
        t.fill_(NowUs());
        world_->send(v, r, 2000 + k)->wait();
      }
    } else if (rv_.rank == r) {
      double best_rtt = 1e300;
      for (int k = 0; k < 8; ++k) {
        const double a = NowUs();
        world_->send(v, 0, 1000 + k)->wait();
        world_->recv(v, 0, 2000 + k)->wait();
        const double b = NowUs();
        if (b - a < best_rtt) {
          best_rtt = b - a;
          clock_offset_us_ = t.item<double>() - 0.5 * (a + b);
        }
      }
    }
  }
}

void Rank::PingPong() {
  // Rank 0 and each peer in turn; the others wait at the next peer's turn. Tags: 3000 + 2 * exchange (+1 back).
  constexpr int kWarmup = 3;
  std::vector<PingPongSample> rows;
  for (int peer = 1; peer < rv_.world_size; ++peer) {
    int exchange = 0;
    for (int64_t bytes = 4096; bytes <= (int64_t{64} << 20); bytes *= 4) {
      status_.Set("ping-pong with rank " + std::to_string(peer) + ": " + std::to_string(bytes) + " bytes");
      at::Tensor t = at::zeros({bytes / 4});
      std::vector<at::Tensor> v{t};
      for (int k = 0; k < kWarmup + opt_.pingpong_reps; ++k, ++exchange) {
        const int tag = 3000 + 2 * exchange;
        if (rv_.rank == 0) {
          const double t0 = NowUs();
          world_->send(v, peer, tag)->wait();
          world_->recv(v, peer, tag + 1)->wait();
          const double rtt = NowUs() - t0;
          if (k >= kWarmup) rows.push_back({peer, bytes, rtt, 0});
        } else if (rv_.rank == peer) {
          world_->recv(v, 0, tag)->wait();
          world_->send(v, 0, tag + 1)->wait();
        }
      }
    }
  }
  if (rv_.rank != 0) return;
  status_.Set("writing pingpong.csv");
  Scenario s = WithPathsRelativeTo(scenario_, opt_.rundir);
  if (Status st = RunFolderWriter().AddPingPong(rows).AddScenario(FormatScenario(s)).Write(opt_.rundir);
      !st.ok())
    throw std::runtime_error(st.error().message());
  out_ << "wrote " << RunFilePath(opt_.rundir, RunFile::kPingPong) << " (" << rows.size()
       << " round trips)\n";
}

void Rank::RunIteration(int index, const IterationData& it, bool measured, bool dump) {
  measuring_ = measured && opt_.measure;
  dumping_ = dump;
  iteration_ = it.epoch_index;
  const int warm = scenario_.backend.warmup_iterations;
  label_ = measured ? "measured iteration " + std::to_string(index - warm) + " (epoch index " +
                          std::to_string(it.epoch_index) + ")"
                    : "warm-up iteration " + std::to_string(index);
  ops_.clear();
  profile_.clear();
  loss_sum_ = 0;
  const int M = plan_.parallel.micro_batches;
  const int64_t loss_tokens = LossTokens(model_, trace_, it);
  mbs_.clear();
  for (int m = 0; m < M; ++m)
    mbs_.push_back(MakeMicroBatch(model_, trace_, it.micro_batches[coord_.dp][m], plan_.seed, loss_tokens,
                                  plan_.packed));
  for (auto& np : named_)
    if (np.second.grad().defined()) np.second.mutable_grad().zero_();
  backwards_left_.clear();
  for (const PipeOp& op : plan_.schedule.per_rank[coord_.pp])
    if (EndsBackward(op.kind)) ++backwards_left_[op.chunk];
  g_peak_bytes.store(g_live_bytes.load());

  world_->barrier()->wait();
  iter_start_us_ = NowUs() + clock_offset_us_;
  running_ = &it;
  for (const PipeOp& op : plan_.schedule.per_rank[coord_.pp]) {
    if (op.kind == PassKind::kForward)
      Forward(op.micro_batch, op.chunk, it);
    else
      Backward(op.micro_batch, op.chunk);
  }
  running_ = nullptr;
  FinishReduce();
  if (dump) {
    std::error_code ec;
    std::filesystem::create_directories(opt_.dump_grads, ec);
    WriteGrads(opt_.dump_grads + "/grads.rank" + std::to_string(rv_.rank) + ".bin", Whole(false), DumpLoss());
  }
  OptimizerStep();
  if (dump)
    WriteGrads(opt_.dump_grads + "/params.rank" + std::to_string(rv_.rank) + ".bin", Whole(true), DumpLoss(),
               true);
  (void)index;
}

// Every rank hands its ops, layer profile and peak memory of the iteration to rank 0 through the store; rank
// 0 merges them, takes the iteration time, and rewrites the run folder.
void Rank::Publish(int index) {
  const std::string key = "mmtwin/it" + std::to_string(index) + "/";
  const std::string ops = OpsCsv(ops_);
  const std::string pr = LayerTimingsCsv(profile_, Layers(model_));
  const std::string peak = std::to_string(g_peak_bytes.load());
  const std::string r = std::to_string(rv_.rank);
  store_->set(key + "ops/" + r, std::vector<uint8_t>(ops.begin(), ops.end()));
  store_->set(key + "prof/" + r, std::vector<uint8_t>(pr.begin(), pr.end()));
  store_->set(key + "peak/" + r, std::vector<uint8_t>(peak.begin(), peak.end()));
  if (rv_.rank != 0) return;
  std::vector<OpRecord> merged;
  std::vector<LayerTiming> prof_rows;
  stage_peak_.resize(plan_.parallel.pp, 0);
  for (int q = 0; q < rv_.world_size; ++q) {
    const std::string qs = std::to_string(q);
    const std::vector<uint8_t> ob = store_->get(key + "ops/" + qs);
    auto parsed = ParseOpsCsv(std::string(ob.begin(), ob.end()), "ops of rank " + qs);
    if (parsed) merged.insert(merged.end(), parsed->begin(), parsed->end());
    const std::vector<uint8_t> pb = store_->get(key + "prof/" + qs);
    auto rows = ParseLayerTimingsCsv(std::string(pb.begin(), pb.end()), "layer timings of rank " + qs);
    if (rows)
      prof_rows.insert(prof_rows.end(), rows->begin(), rows->end());
    else
      err_ << "mmtwin-train rank 0: " << rows.error().message() << "\n";
    const std::vector<uint8_t> kb = store_->get(key + "peak/" + qs);
    int64_t pk = 0;
    ParseInt64(std::string(kb.begin(), kb.end()), pk);
    const int stage = mesh_->Coord(q).pp;
    stage_peak_[stage] = std::max(stage_peak_[stage], pk);
  }
  if (merged.empty()) return;
  double start = 1e300, end = -1e300;
  for (const OpRecord& o : merged) {
    start = std::min(start, o.start_us);
    end = std::max(end, o.start_us + o.duration_us);
  }
  for (OpRecord& o : merged) o.start_us -= start;
  ++published_;
  // The run folder is rewritten by the writer thread (backend/measure.h); this rank goes on training.
  if (Status st = writer_->Add({std::move(merged), std::move(prof_rows), end - start, stage_peak_});
      !st.ok() && !write_error_reported_) {
    err_ << "mmtwin-train rank 0: " << st.error().message() << "\n";
    write_error_reported_ = true;
  }
  out_ << "iteration " << published_ << " (epoch index " << iteration_
       << "): " << std::lround((end - start) / 1000.0) << " ms\n";
  out_.flush();
}

int Rank::Run() {
  const std::string who = "mmtwin-train rank " + std::to_string(rv_.rank) + ": ";
  try {
    InstallCountingAllocator();
    if (Status st = Setup(); !st.ok()) {
      err_ << who << st.error().message() << "\n";
      return 2;
    }
    SetThreads(scenario_.backend.threads);
    status_.Open(rv_.rank);
    status_.Set("setting up");
    AlignClocks();
    if (opt_.pingpong) {
      PingPong();
      world_->barrier()->wait();
      return 0;
    }
    const int warm = scenario_.backend.warmup_iterations;
    const int n_plan = static_cast<int>(plan_.iterations.size());
    const int measured = opt_.iterations > 0 ? opt_.iterations : n_plan;
    double measured_start_us = 0;
    for (int k = 0; k < warm + measured; ++k) {
      const bool is_measured = k >= warm;
      const int mi = k - warm;
      if (k == warm) measured_start_us = NowUs();
      status_.Set((is_measured ? "measured iteration " + std::to_string(mi)
                               : "warm-up iteration " + std::to_string(k)) +
                  ": starting");
      // Fault injection happens once every rank has finished (and rank 0 has published and its writer thread
      // written) the iterations before it, so "every iteration finished before the kill is in RUNDIR" is
      // deterministic to test (without the flush a loaded machine could kill rank 0 before its writer caught up).
      if (is_measured && mi == opt_.die_iteration && (opt_.die_rank >= 0 || opt_.hang_rank >= 0)) {
        if (writer_) {
          if (Status st = writer_->Flush(); !st.ok()) err_ << who << st.error().message() << "\n";
        }
        world_->barrier()->wait();
      }
      if (is_measured && mi == opt_.die_iteration && rv_.rank == opt_.die_rank) ::raise(SIGKILL);
      if (is_measured && mi == opt_.die_iteration && rv_.rank == opt_.hang_rank) {
        status_.Set("hanging (fault injection) at the start of measured iteration " + std::to_string(mi));
        while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      const IterationData& it = plan_.iterations[(is_measured ? mi : k) % n_plan];
      RunIteration(k, it, is_measured, k == 0 && !opt_.dump_grads.empty());
      if (is_measured && opt_.measure) Publish(mi);
    }
    status_.Set("finished");
    if (writer_) {
      status_.Set("writing the run records");
      if (Status st = writer_->Flush(); !st.ok() && !write_error_reported_) {
        err_ << who << st.error().message() << "\n";
        return 1;
      }
      status_.Set("finished");
    }
    world_->barrier()->wait();
    // Wall time of the measured iterations on rank 0, records included (the benchmark's measure on / off).
    if (rv_.rank == 0 && measured > 0) {
      const double wall_us = NowUs() - measured_start_us;
      out_ << "measured " << measured << " iterations in " << std::lround(wall_us / 1000.0) << " ms wall ("
           << (opt_.measure ? "measurement on" : "measurement off") << ", "
           << "wall_us_per_iteration=" << wall_us / measured << ")\n";
      out_.flush();
    }
    return 0;
  } catch (const PeerFailure& e) {
    err_ << who << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.size() > 400) msg = msg.substr(0, 400) + "...";
    err_ << who << "failed in " << (status_.current().empty() ? "setup" : status_.current()) << ": " << msg
         << "\n";
    return 3;
  }
}

}  // namespace

int RunRank(const TrainOptions& options, const Rendezvous& rv, std::ostream& out, std::ostream& err) {
  if (rv.rank == 0 && options.measure) TakeTerminationSignals();
  Rank r(options, rv, out, err);
  return r.Run();
}

int RunReference(const std::string& scenario_path, const std::string& dir, std::ostream& out,
                 std::ostream& err, bool force_packed) {
  try {
    auto scenario = LoadScenario(scenario_path);
    if (!scenario) {
      err << "mmtwin-train: " << scenario.error().message() << "\n";
      return 2;
    }
    SetThreads(scenario->backend.threads);
    PlanOptions po;
    po.memory_report = false;
    auto run = BuildPlan(*scenario, po);
    if (!run) {
      err << "mmtwin-train: " << run.error().message() << "\n";
      return 2;
    }
    const Plan& plan = run->plan;
    const ModelSpec& m = run->model;
    const int n_layers = static_cast<int>(Layers(m).size());
    std::vector<std::unique_ptr<Layer>> layers;
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (int l = 0; l < n_layers; ++l) {
      layers.push_back(MakeLayer(m, l, plan.seed));
      for (auto& np : layers.back()->params()) named.push_back(np);
    }
    const IterationData& it = plan.iterations.at(0);
    const int64_t loss_tokens = LossTokens(m, *run->trace, it);
    double loss = 0;
    for (const auto& dp : it.micro_batches)
      for (const auto& samples : dp) {
        const MicroBatch mb =
            MakeMicroBatch(m, *run->trace, samples, plan.seed, loss_tokens, plan.packed || force_packed);
        State s;
        for (auto& l : layers) s = l->Forward(std::move(s), mb);
        loss += s.loss.item<double>();
        torch::autograd::backward({s.loss}, {});
      }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    WriteGrads(dir + "/grads.ref.bin", named, loss);
    {  // one AdamW step from zero moments, as every rank's first step
      at::NoGradGuard no_grad;
      for (auto& [name, p] : named) {
        at::Tensor m = at::zeros_like(p), v = at::zeros_like(p);
        if (p.grad().defined()) AdamW(p, p.grad(), m, v, 1);
      }
    }
    WriteGrads(dir + "/params.ref.bin", named, loss, true);
    out << "reference loss " << loss << " over " << loss_tokens << " tokens\n";
    return 0;
  } catch (const std::exception& e) {
    err << "mmtwin-train: reference: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace mmtwin::backend
