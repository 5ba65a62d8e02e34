// SPDX-License-Identifier: Apache-2.0
// One rank of a backend job (train.h: RunRank). The rank sets up (rendezvous at the c10d TCPStore, rank 0 plans
// and shares the plan, the process groups, this rank's layers) and composes the parts that run an iteration:
//   pipeline.h       PipelineRunner   the schedule's forwards, backwards, recompute, P2P and dispatch
//   grad_reducer.h   GradientReducer  the DP gradient buckets, overlapping the backward (ZeRO 0 / ZeRO-1)
//   optimizer.h      Optimizer        AdamW, or its ZeRO-1 shards and the parameters' all-gather
//   op_recorder.h    OpRecorder       every op and layer timed into measured records
// and, on rank 0, gathers every rank's records after each measured iteration for the run folder's writer
// (measure.h: RecordWriter). Also the clock alignment and the ping-pong link calibration. c10d carries every
// transfer between processes (comm.h): Gloo on CPU ranks; on GPU ranks (backend.device: cuda) NCCL carries the
// DP, pipeline and TP groups and Gloo the world group (control: barriers, clocks; NCCL when Gloo is not built).
// Times are marks of the rank's timeline (timeline.h: CUDA events on GPU ranks), resolved once per iteration.
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/comm.h"
#include "backend/cuda_support.h"
#include "backend/device.h"
#include "backend/grad_reducer.h"
#include "backend/machine.h"
#include "backend/measure.h"
#include "backend/model.h"
#include "backend/op_recorder.h"
#include "backend/optimizer.h"
#include "backend/pipeline.h"
#include "backend/plan_exchange.h"
#include "backend/rank_support.h"
#include "backend/reference.h"
#include "backend/timeline.h"
#include "backend/torch_runtime.h"
#include "backend/train.h"
#include "core/plan/mesh.h"
#include "core/records/pingpong.h"
#include "core/records/plan_codec.h"
#include "core/records/records_codec.h"
#include "core/records/run_folder.h"
#include "core/scenario/scenario.h"
#include "core/util/csv.h"
#include "driver/planner.h"

namespace mmtwin::backend {
namespace {

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

// A rank that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) writes its stack to stderr before it dies with
// the signal, so that a crash on a machine without a debugger (the GPU machine: backend/gpu/README.md) leaves
// more than "killed by signal 11" in the run's log. backtrace() is called once at install, so that the handler
// does not load libgcc (malloc) inside the signal.
void PrintStackOnCrash(int sig) {
  char head[96];
  const int n = std::snprintf(head, sizeof head, "mmtwin-train: fatal signal %d; the rank's stack:\n", sig);
  if (n > 0) (void)!::write(STDERR_FILENO, head, static_cast<size_t>(n));
  void* frames[64];
  const int depth = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void InstallCrashStacks() {
  void* warm[2];
  (void)::backtrace(warm, 2);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, &PrintStackOnCrash);
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
  // Rank 0 plans the scenario (and starts the run folder's writer); every rank reads the plan and the shapes
  // of its samples from the store.
  Status SharePlan();
  // The world, this rank's DP group, its pipeline and (tp > 1) its TP group, each over its own store prefix.
  void MakeGroups();
  // This rank's layers, and the parts that run them.
  void MakeParts();
  // The warm-up and measured iterations, with the fault injection of the tests; exit code.
  int Train(const std::string& who);
  void RunIteration(int index, const IterationData& it, bool measured, bool dump);
  std::vector<std::pair<std::string, at::Tensor>> Whole(bool values);
  double DumpLoss() const;
  void AlignClocks();
  // GPU ranks: an all-reduce over the DP group (NCCL) of rank + 1 checked against the sum it must give.
  void CheckNccl();
  // Tensors for the world group: on the GPU when NCCL carries it.
  at::TensorOptions WorldOptions() const {
    return at::TensorOptions().device(world_kind_ == CommKind::kNccl ? ComputeDevice()
                                                                     : at::Device(at::kCPU));
  }
  void PingPong();
  void Publish(int index);

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
  CommGroupPtr world_, dp_, pp_, tp_;
  CommKind world_kind_ = CommKind::kGloo;
  std::unique_ptr<Timeline> timeline_;
  TpGroup tp_group_;  // what the model's tensor-parallel blocks use (model.h)

  std::map<int, std::vector<std::unique_ptr<Layer>>> layers_;  // chunk -> its layers
  std::vector<std::pair<std::string, at::Tensor>> named_;      // this rank's parameters
  std::vector<int> shard_dims_;                                // per parameter: its TP split (-1: none)

  // The parts (declared after what they reference: destroyed first).
  std::unique_ptr<OpRecorder> recorder_;
  std::unique_ptr<PipelineRunner> pipeline_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<Optimizer> optimizer_;

  std::vector<MicroBatch> mbs_;  // this DP rank's micro-batches of the iteration being run

  // Rank 0: the measured records' writer (declared after run_, which it reads: destroyed first).
  std::unique_ptr<RecordWriter> writer_;
  std::vector<int64_t> stage_peak_;                           // the largest peak of any rank per stage so far
  int64_t max_peak_bytes_ = 0, max_peak_reserved_bytes_ = 0;  // this rank's, over the measured iterations
  int64_t published_ = 0;
  bool write_error_reported_ = false;
};

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

  MMTWIN_RETURN_IF_ERROR(SharePlan());
  if (plan_.parallel.world_size() != rv_.world_size)
    return Error("WORLD_SIZE " + std::to_string(rv_.world_size) + " is not dp * tp * pp = " +
                 std::to_string(plan_.parallel.world_size()) + " of the scenario");
  mesh_ = std::make_unique<DeviceMesh>(plan_.parallel);
  coord_ = mesh_->Coord(rv_.rank);
  device_ = mesh_->DeviceOfRank(rv_.rank);
  if (scenario_.backend.device == "cuda") {
    UseCudaDevice(rv_.local_rank);
    UseCudaMemory(rv_.local_rank);
    if (rv_.rank == 0) out_ << "mmtwin-train: rank 0 on " << CudaDescription(rv_.local_rank) << "\n";
  }
  timeline_ = std::make_unique<Timeline>(OnCuda() ? CudaIndex() : -1);
  if (scenario_.backend.autocast == "bf16") {
    // Activations cross stages as fp32 payloads (pipeline.cc): bf16 ones would come back as fp32 gradients.
    if (plan_.parallel.pp > 1)
      return Error("backend.autocast: bf16 runs with pp 1 only (the pipeline's transfers are fp32)");
    UseAutocastBf16(true);
  }
  MakeGroups();
  MakeParts();
  return Status();
}

Status Rank::SharePlan() {
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
      // Where the run runs, apart from the cluster the scenario names (issue 33, item 1).
      MachineRecord machine = ThisMachine();
      machine.ranks = rv_.world_size;
      machine.threads_per_rank = scenario_.backend.threads;
      machine.torch = TorchVersion();
      if (scenario_.backend.device == "cuda") {
        machine.gpu = CudaDeviceName(rv_.local_rank);
        machine.cuda_driver = CudaDriverVersion();
      }
      writer_ = std::make_unique<RecordWriter>(
          opt_.rundir, *run_, scenario_.backend.device == "cuda" ? "libtorch-nccl" : "libtorch-gloo",
          std::move(machine));
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
  return Status();
}

void Rank::MakeGroups() {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(scenario_.backend.timeout_s * 1000));
  const bool loopback = rv_.master_addr == "127.0.0.1" || rv_.master_addr == "localhost";
  // GPU ranks without NCCL in the build (world size 1 needs no transfer) fall back to Gloo.
  const CommKind data_kind = OnCuda() && CommBuilt(CommKind::kNccl) ? CommKind::kNccl : CommKind::kGloo;
  if (OnCuda() && data_kind == CommKind::kGloo && rv_.rank == 0)
    out_ << "mmtwin-train: this build has no NCCL: Gloo carries the GPU ranks' groups\n";
  world_kind_ = CommBuilt(CommKind::kGloo) ? CommKind::kGloo : data_kind;
  world_ = MakeCommGroup(world_kind_, c10::make_intrusive<c10d::PrefixStore>("world", store_), rv_.rank,
                         rv_.world_size, timeout, loopback);
  auto group = [&](MeshDim dim, const std::string& name) {
    const RankGroup g = mesh_->Group(dim, rv_.rank);
    int me = 0;
    for (size_t i = 0; i < g.ranks.size(); ++i)
      if (g.ranks[i] == rv_.rank) me = static_cast<int>(i);
    return MakeCommGroup(
        data_kind, c10::make_intrusive<c10d::PrefixStore>(name + "/" + std::to_string(g.ranks[0]), store_),
        me, static_cast<int>(g.ranks.size()), timeout, loopback);
  };
  dp_ = group(MeshDim::kDp, "dp");
  pp_ = group(MeshDim::kPp, "pp");
  if (data_kind == CommKind::kNccl) CheckNccl();
  if (plan_.parallel.tp > 1) {
    tp_ = group(MeshDim::kTp, "tp");
    tp_group_.size = plan_.parallel.tp;
    tp_group_.rank = coord_.tp;
    tp_group_.all_reduce = [this](at::Tensor& t) {
      std::vector<at::Tensor> v{t};
      try {
        tp_->allreduce(v)->wait();
      } catch (const std::exception& e) {
        ThrowPeerFailure(status_.iteration() + ": tensor-parallel all-reduce", e);
      }
    };
  }
}

void Rank::MakeParts() {
  std::map<int, std::vector<at::Tensor>> chunk_params;
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
        chunk_params[c].push_back(np.second);
      }
    }
  }
  const int dp_peer = mesh_->DpNeighbor(device_, 1);
  recorder_ = std::make_unique<OpRecorder>(device_);
  pipeline_ = std::make_unique<PipelineRunner>(plan_, model_, *mesh_, rv_.rank, layers_, pp_, dp_, status_,
                                               *recorder_, *timeline_);
  reducer_ = std::make_unique<GradientReducer>(plan_, dp_peer, std::move(chunk_params), dp_, status_,
                                               *recorder_, *timeline_);
  std::vector<at::Tensor> params;
  for (const auto& np : named_) params.push_back(np.second);
  optimizer_ = std::make_unique<Optimizer>(std::move(params), reducer_->zero1(), coord_.dp, plan_.parallel.dp,
                                           dp_, dp_peer, status_, *recorder_, *timeline_);
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
double Rank::DumpLoss() const { return coord_.tp == 0 ? pipeline_->loss_sum() : 0.0; }

void Rank::CheckNccl() {
  const RankGroup g = mesh_->Group(MeshDim::kDp, rv_.rank);
  const int n = static_cast<int>(g.ranks.size());
  at::Tensor t = at::full({1024}, static_cast<float>(coord_.dp + 1), FloatOptions());
  std::vector<at::Tensor> v{t};
  dp_->allreduce(v)->wait();
  const double expected = n * (n + 1) / 2.0;
  const double lo = t.min().item<double>(), hi = t.max().item<double>();
  if (lo != expected || hi != expected)
    throw std::runtime_error("NCCL all-reduce check: the DP group of " + std::to_string(n) +
                             " rank(s) summed to [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "], expected " + std::to_string(expected));
  if (rv_.rank == 0)
    out_ << "mmtwin-train: NCCL all-reduce check passed (DP group of " << n
         << " rank(s): 1024 floats summed to " << expected << ")\n";
}

void Rank::AlignClocks() {
  // Cristian's algorithm against rank 0 over the world group: 8 round trips, the offset of the shortest.
  at::Tensor t = at::zeros({1}, WorldOptions().dtype(at::kDouble));
  std::vector<at::Tensor> v{t};
  double offset_us = 0;
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
          offset_us = t.item<double>() - 0.5 * (a + b);
        }
      }
    }
  }
  recorder_->set_clock_offset_us(offset_us);
}

void Rank::PingPong() {
  // Rank 0 and each peer in turn; the others wait at the next peer's turn. Tags: 3000 + 2 * exchange (+1 back).
  constexpr int kWarmup = 3;
  std::vector<PingPongSample> rows;
  for (int peer = 1; peer < rv_.world_size; ++peer) {
    int exchange = 0;
    for (int64_t bytes = 4096; bytes <= (int64_t{64} << 20); bytes *= 4) {
      status_.Set("ping-pong with rank " + std::to_string(peer) + ": " + std::to_string(bytes) + " bytes");
      at::Tensor t = at::zeros({bytes / 4}, WorldOptions());
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
  const int warm = scenario_.backend.warmup_iterations;
  status_.SetIteration(measured ? "measured iteration " + std::to_string(index - warm) + " (epoch index " +
                                      std::to_string(it.epoch_index) + ")"
                                : "warm-up iteration " + std::to_string(index));
  const int M = plan_.parallel.micro_batches;
  const int64_t loss_tokens = LossTokens(model_, trace_, it);
  mbs_.clear();
  for (int m = 0; m < M; ++m)
    mbs_.push_back(MakeMicroBatch(model_, trace_, it.micro_batches[coord_.dp][m], plan_.seed, loss_tokens,
                                  plan_.packed));
  std::vector<MicroBatchFeatures> features;
  for (const MicroBatch& mb : mbs_)
    features.push_back({mb.llm_tokens, mb.attention_pairs, static_cast<int32_t>(mb.samples.size())});
  recorder_->BeginIteration(it.epoch_index, measured && opt_.measure, std::move(features));
  for (auto& np : named_)
    if (np.second.grad().defined()) np.second.mutable_grad().zero_();
  pipeline_->BeginIteration(it, mbs_);
  ResetPeak();

  world_->barrier()->wait();
  timeline_->Begin();
  pipeline_->RunSchedule([this](int chunk, bool chunk_complete) {
    if (chunk_complete) reducer_->StartChunk(chunk);
    reducer_->Poll();
  });
  reducer_->Finish(dump);
  pipeline_->FinishSends();
  if (dump) {
    std::error_code ec;
    std::filesystem::create_directories(opt_.dump_grads, ec);
    WriteGrads(opt_.dump_grads + "/grads.rank" + std::to_string(rv_.rank) + ".bin", Whole(false), DumpLoss());
  }
  optimizer_->Step(reducer_->reduced());
  // Every mark of the iteration becomes a time (GPU ranks: the host waits for the GPU here, once).
  timeline_->Resolve();
  recorder_->Resolve([this](Mark m) { return timeline_->Us(m); });
  if (measured) {
    max_peak_bytes_ = std::max(max_peak_bytes_, PeakBytes());
    max_peak_reserved_bytes_ = std::max(max_peak_reserved_bytes_, PeakReservedBytes());
  }
  if (dump)
    WriteGrads(opt_.dump_grads + "/params.rank" + std::to_string(rv_.rank) + ".bin", Whole(true), DumpLoss(),
               true);
}

// Every rank hands its ops, layer profile and peak memory of the iteration to rank 0 through the store; rank
// 0 merges them, takes the iteration time, and hands them to the run folder's writer.
void Rank::Publish(int index) {
  const std::string key = "mmtwin/it" + std::to_string(index) + "/";
  const std::string ops = OpsCsv(recorder_->ops());
  const std::string pr = LayerTimingsCsv(recorder_->layers(), Layers(model_));
  const std::string peak = std::to_string(PeakBytes());
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
  out_ << "iteration " << published_ << " (epoch index " << recorder_->iteration()
       << "): " << std::lround((end - start) / 1000.0) << " ms\n";
  out_.flush();
}

int Rank::Train(const std::string& who) {
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
    if (OnCuda())
      out_ << "rank 0 peak memory of the measured iterations (CUDA caching allocator): allocated "
           << max_peak_bytes_ << " bytes, reserved " << max_peak_reserved_bytes_ << " bytes\n";
    out_.flush();
  }
  return 0;
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
    int rc = 0;
    if (opt_.pingpong) {
      PingPong();
      world_->barrier()->wait();
    } else {
      rc = Train(who);
    }
    for (const CommGroupPtr& g : {dp_, pp_, tp_}) ShutdownCommGroup(g);
    return rc;
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
  InstallCrashStacks();
  if (rv.rank == 0 && options.measure) TakeTerminationSignals();
  Rank r(options, rv, out, err);
  return r.Run();
}

}  // namespace mmtwin::backend
