// Linear -> LLVM IR text. Plain text (no LLVM headers here): easy to dump for SN_DEBUG and fast
// to compile; the JIT parses it.
//
// Layout: the exported `<sym>(ptr bufs, ptr vars, i64 core_id, i64 n)` unpacks the argument arrays
// into %b<slot> and %var<i> and runs the kernel. The buffers do not overlap (the runtime's rule for
// a written buffer): each load and store of a buffer carries alias-scope metadata that says so, one
// scope per buffer, as inlining a body with noalias parameters would add (LLVM's inliner spent 5%
// of a small CNN's compile doing that). A kernel with streaming stores keeps two bodies with
// noalias parameters, not inlined, one of which the entry point calls.
// Loops are do-while loops with a phi induction variable behind a trip-count guard; gated loads
// and stores branch around the memory access. Accumulators are allocas (mem2reg makes them
// phis). Float math keeps IEEE semantics: Mulacc is llvm.fmuladd (fused where the target has
// FMA) and the only fast-math flag is `reassoc` on accumulator updates (the reduction order is
// unspecified). bfloat16 and fp8 values are integer bits (i16, i8) in registers and memory: isel
// moves their math to float32, and the casts here convert with integer ops (scalars and vectors
// alike).
#include "backends/llvm/llvm_ir.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "backends/llvm/llvm_text.h"
#include "core/codegen/kernel_util.h"

namespace sn {

namespace {

using namespace llvmir;

bool is_acc_address(const UOp* a) {
  const UOp* b = address_buffer(a);
  return b && b->op == Op::Buffer && b->as<BufferArg>().addrspace == AddrSpace::Reg;
}

bool is_acc_load(const UOp* u) { return u->op == Op::Load && is_acc_address(u->src(0)); }

// An Index with a k-lane index: k addresses, one per lane (a gather or a scatter).
bool is_scatter_address(const UOp* a) { return a->op == Op::Index && a->src(1)->dtype.lanes > 1; }

class IrWriter {
 public:
  IrWriter(const LoweredKernel& k, std::string symbol, LlvmDialect dialect)
      : k_(k), sym_(std::move(symbol)), dialect_(dialect) {}

  std::string render() {
    for (size_t i = 0; i < k_.vars.size(); i++) var_index_[k_.vars[i].name] = i;
    // Streaming stores only in kernels without accumulators (a STREAM-like elementwise pass): the
    // second body doubles LLVM's work, which a reduction kernel (a softmax) pays for nothing.
    streaming_ = !gpu() && k_.target.streaming_store_bytes > 0;
    for (const UOp* u : k_.linear->src()) streaming_ = streaming_ && u->op != Op::Buffer;
    // A kernel of few iterations in all runs in microseconds however its loops are compiled: LLVM's
    // loop vectorizer, which would add vector bodies and remainder loops, is off in all its loops
    // (a small CNN's 8x10 softmax: ~40% of its LLVM time went to vectorizing loops of 10).
    double iterations = double(std::max<int64_t>(1, k_.threads));
    for (const UOp* u : k_.linear->src())
      if (u->op == Op::Range) iterations *= u->src(0)->op == Op::Const ? double(u->src(0)->const_int()) : 1e9;
    few_iterations_ = iterations < double(1 << 14);
    // Metadata ids: the alias scopes first (!0 their domain, then three per buffer slot: its scope,
    // the list of its scope, the list of the other buffers' scopes), then the loops' (two each).
    alias_scopes_ = !gpu() && k_.params.size() >= 2;
    if (alias_scopes_)
      for (const KernelParam& p : k_.params) loop_metadata_ = std::max<int64_t>(loop_metadata_, 4 + 3 * p.slot);
    if (dialect_ == LlvmDialect::Cpu) find_strides();
    // The concatenations (concat), found once; the lanes of vectors that only they read are not
    // extracted one by one.
    // The columns of square tiles (transposed), likewise.
    std::unordered_set<const UOp*> joined, read_alone;
    std::map<std::vector<const UOp*>, size_t> tile_of;  // a tile's rows -> its index in tiles_
    for (const UOp* u : k_.linear->src()) {
      std::vector<const UOp*> parts = u->op == Op::Vectorize ? concatenated_vectors(u) : std::vector<const UOp*>{};
      const std::vector<const UOp*> rows =
          parts.empty() && u->op == Op::Vectorize ? tile_rows(u) : std::vector<const UOp*>{};
      for (const UOp* x : u->src())
        if (x->op == Op::Gep) (parts.empty() && rows.empty() ? read_alone : joined).insert(x);
      if (!parts.empty()) concats_[u] = std::move(parts);
      if (!rows.empty()) {
        auto [it, fresh] = tile_of.emplace(rows, tiles_.size());
        if (fresh) tiles_.push_back({rows, {}});
        columns_[u] = {it->second, u->src(0)->as<int64_t>()};
      }
    }
    for (const UOp* x : joined)
      if (!read_alone.count(x)) unread_lanes_.insert(x);
    // Each tile is transposed right after the last of its rows in the kernel's order.
    std::unordered_map<const UOp*, std::vector<size_t>> tiles_after;  // a row -> the tiles whose last row it is
    if (!tiles_.empty()) {
      std::unordered_map<const UOp*, size_t> position;
      for (const UOp* u : k_.linear->src()) position.emplace(u, position.size());
      for (size_t t = 0; t < tiles_.size(); t++)
        tiles_after[*std::max_element(tiles_[t].rows.begin(), tiles_[t].rows.end(), [&](const UOp* a, const UOp* b) {
          return position.at(a) < position.at(b);
        })].push_back(t);
    }
    for (const UOp* u : k_.linear->src()) {
      instruction(u);
      if (auto it = tiles_after.find(u); it != tiles_after.end())
        for (size_t t : it->second) transpose(t);
    }
    if (gpu()) return render_gpu_kernel();
    std::ostringstream os;
    os << "; kernel " << k_.name << " (threads " << k_.threads << ")\n";
    if (nt_stores_.empty()) {  // one function: the arguments unpacked under the body's names
      unpack_arguments(os, "b", "var");
      os << allocas_ << body_ << "  ret void\n}\n\n";
      return finish(os);
    }
    std::string params;  // of the bodies
    for (const KernelParam& p : k_.params) params += str("ptr noalias %b", p.slot, ", ");
    for (size_t i = 0; i < k_.vars.size(); i++) params += str("i64 %var", i, ", ");
    params += "i64 %core_id";
    os << "define internal void @" << sym_ << ".body(" << params << ") #0 {\nentry:\n"
       << allocas_ << body_ << "  ret void\n}\n\n";
    // A second body writes the streaming stores non-temporally (whole aligned vectors); the entry
    // point runs it when every such buffer is aligned (a view at an offset may not be).
    std::string nt_body;
    size_t from = 0;
    for (const StreamingStore& st : nt_stores_) {
      nt_body.append(body_, from, st.at - from);
      nt_body += str(", align ", st.bytes, ", !nontemporal !{i32 1}");
      from = st.at + st.len;
    }
    nt_body.append(body_, from);
    os << "define internal void @" << sym_ << ".body.nt(" << params << ") #0 {\nentry:\n"
       << allocas_ << nt_body << "  ret void\n}\n\n";
    unpack_arguments(os, "p", "v");
    std::string args;
    for (const KernelParam& p : k_.params) args += str(args.empty() ? "" : ", ", "ptr %p", p.slot);
    for (size_t i = 0; i < k_.vars.size(); i++) args += str(args.empty() ? "" : ", ", "i64 %v", i);
    args += str(args.empty() ? "" : ", ", "i64 %core_id");
    if (!nt_align_.empty()) {
      std::string all = "true";
      for (const auto& [slot, bytes] : nt_align_) {
        os << "  %nt.a" << slot << " = ptrtoint ptr %p" << slot << " to i64\n";
        os << "  %nt.m" << slot << " = and i64 %nt.a" << slot << ", " << bytes - 1 << "\n";
        os << "  %nt.z" << slot << " = icmp eq i64 %nt.m" << slot << ", 0\n";
        os << "  %nt.all" << slot << " = and i1 " << all << ", %nt.z" << slot << "\n";
        all = str("%nt.all", slot);
      }
      os << "  br i1 " << all << ", label %streaming, label %cached\nstreaming:\n";
      os << "  call void @" << sym_ << ".body.nt(" << args << ")\n  ret void\ncached:\n";
    }
    os << "  call void @" << sym_ << ".body(" << args << ")\n  ret void\n}\n\n";
    return finish(os);
  }

 private:
  // The exported entry point's head: the buffer pointers and variable values loaded from the
  // argument arrays as %<ptr><slot> and %<var><i>.
  void unpack_arguments(std::ostringstream& os, const char* ptr, const char* var) {
    os << "define void @" << sym_ << "(ptr %bufs, ptr %vars, i64 %core_id, i64 %ncores) #1 {\nentry:\n";
    for (const KernelParam& p : k_.params) {
      os << "  %pa" << p.slot << " = getelementptr inbounds ptr, ptr %bufs, i64 " << p.slot << "\n";
      os << "  %" << ptr << p.slot << " = load ptr, ptr %pa" << p.slot << ", align 8\n";
    }
    for (size_t i = 0; i < k_.vars.size(); i++) {
      os << "  %va" << i << " = getelementptr inbounds i64, ptr %vars, i64 " << i << "\n";
      os << "  %" << var << i << " = load i64, ptr %va" << i << ", align 8\n";
    }
  }

  // The module's declarations, constants, metadata and attributes after its functions.
  std::string finish(std::ostringstream& os) {
    for (const std::string& d : decls_) os << d << "\n";
    if (zero_bytes_ > 0)
      os << "@" << sym_ << ".zeros = internal constant [" << zero_bytes_ << " x i8] zeroinitializer, align 64\n";
    for (const std::string& m : tile_loops_) os << m;
    if (alias_scopes_) {
      // a domain, a scope per buffer, and per buffer the list of its scope and of the others'
      const int64_t d = 0;
      os << "!" << d << " = distinct !{!" << d << ", !\"sn.buffers\"}\n";
      for (const KernelParam& p : k_.params) {
        const int64_t s = d + 1 + 3 * p.slot;
        os << "!" << s << " = distinct !{!" << s << ", !" << d << "}\n!" << s + 1 << " = !{!" << s << "}\n!" << s + 2
           << " = !{";
        bool first = true;
        for (const KernelParam& q : k_.params)
          if (q.slot != p.slot) {
            os << (first ? "!" : ", !") << d + 1 + 3 * q.slot;
            first = false;
          }
        os << "}\n";
      }
    }
    if (uses_pure_) os << "attributes #2 = { nounwind willreturn memory(none) }\n";
    os << "\nattributes #0 = { noinline nounwind \"no-trapping-math\"=\"true\" }\n";
    os << "attributes #1 = { nounwind \"no-trapping-math\"=\"true\" }\n";
    return os.str();
  }

  // The alias-scope metadata of a load or store at addr (see the layout above): in the scope of
  // its buffer and, for a store, apart from the other buffers' scopes (LLVM asks either side of a
  // pair: a load needs only its scope). Empty for registers, GPUs and kernels of one buffer.
  std::string alias_metadata(const UOp* addr, bool store) {
    const UOp* b = alias_scopes_ ? address_buffer(addr) : nullptr;
    if (!b || b->op != Op::Param) return "";
    const int64_t s = 1 + 3 * b->as<ParamArg>().slot;
    return store ? str(", !alias.scope !", s + 1, ", !noalias !", s + 2) : str(", !alias.scope !", s + 1);
  }

  bool gpu() const { return dialect_ != LlvmDialect::Cpu; }
  bool x86() const { return !gpu() && k_.target.triple.rfind("x86_64", 0) == 0; }
  bool amd() const { return dialect_ == LlvmDialect::Amdgpu; }

  // A GPU kernel: the buffers and variables are its parameters; no wrapper.
  std::string render_gpu_kernel() {
    std::string os = str("; kernel ", k_.name, " (", k_.dims.local_items(), " work-items per group)\n");
    for (const std::string& g : globals_) os += g;
    os += str("\ndefine ", amd() ? "amdgpu_kernel " : "", "void @", sym_, "(");
    bool first = true;
    for (const KernelParam& p : k_.params) {
      os += str(first ? "" : ", ", "ptr addrspace(1) noalias %b", p.slot);
      first = false;
    }
    for (size_t i = 0; i < k_.vars.size(); i++) {
      os += str(first ? "" : ", ", "i64 %var", i);
      first = false;
    }
    os += str(") #0 {\nentry:\n", allocas_, body_, "  ret void\n}\n\n");
    for (const std::string& d : decls_) os += d + "\n";
    for (const std::string& m : tile_loops_) os += m;
    if (!amd()) {  // NVPTX (LLVM 19) finds its kernels through this annotation
      size_t id = size_t(loop_metadata_) + 2 * tile_loops_.size();
      os += str("!nvvm.annotations = !{!", id, "}\n!", id, " = !{ptr @", sym_, ", !\"kernel\", i32 1}\n");
    }
    os += "\nattributes #0 = { nounwind \"no-trapping-math\"=\"true\" }\n";
    return os;
  }

  // The IR pointer type for a pointer dtype: one flat address space on the CPU; global (1), local
  // (3) and, on AMDGPU, private (5: allocas) on GPUs.
  std::string ptr_type(DType p) const {
    if (!gpu()) return "ptr";
    if (p.addrspace == AddrSpace::Local) return "ptr addrspace(3)";
    if (p.addrspace == AddrSpace::Reg) return amd() ? "ptr addrspace(5)" : "ptr";
    return "ptr addrspace(1)";
  }
  // The overload suffix of a pointer in intrinsic names (".p0", ".p1").
  std::string ptr_ovl(DType p) const {
    std::string t = ptr_type(p);
    return t == "ptr" ? ".p0" : str(".p", t.substr(t.size() - 2, 1));
  }

  // The vector of k pointers a gather or scatter through pointer dtype p (k lanes) takes, and the
  // intrinsic's name ("llvm.masked.gather.v16f32.v16p0").
  std::string pointers_type(DType p) const { return str("<", p.lanes, " x ", ptr_type(p), ">"); }
  std::string gather_scatter_name(const char* op, DType p) const {
    return str("llvm.masked.", op, ".v", p.lanes, mem_s(p), ".v", p.lanes, ptr_ovl(p).substr(1));
  }

  // Element types in memory: bools are bytes in buffers and local memory, i1 in register arrays
  // except on AMDGPU (whose alloca promotion mishandles arrays of i1).
  std::string mem_s(DType p) const {
    if (amd() && p.scalar == Scalar::Bool) return "i8";
    return mem_scalar(p);
  }
  std::string mem_t(DType p) const {
    if (amd() && p.scalar == Scalar::Bool) return p.lanes == 1 ? "i8" : str("<", p.lanes, " x i8>");
    return mem_type(p);
  }

  // A GPU index: gidx<d> (the work-group's position) or lidx<d> (the work-item's in its group).
  std::string gpu_index(const std::string& n) {
    bool group = n.rfind("gidx", 0) == 0;
    if ((!group && n.rfind("lidx", 0) != 0) || n.size() != 5 || n[4] < '0' || n[4] > '2')
      fail(Code::Unsupported, "llvm: ", amd() ? "AMDGPU" : "NVPTX", " has no index ", n);
    char xyz = "xyz"[n[4] - '0'];
    std::string name = amd() ? str("llvm.amdgcn.", group ? "workgroup" : "workitem", ".id.", xyz)
                             : str("llvm.nvvm.read.ptx.sreg.", group ? "ctaid" : "tid", ".", xyz);
    return emit(str("zext i32 ", call("i32", name, "", ""), " to i64"));
  }

  // A tensor-core instruction (core/codegen/target.h has the fragment layouts): NVIDIA mma.sync
  // m16n8k16 takes A and B as 32-bit registers of two halves (<2 x half>, or i32 for bfloat16) and C
  // as four floats and gives D as a struct; AMD's MFMA and WMMA take and give whole vectors.
  std::string wmma(const UOp* u) {
    const std::string& name = u->as<std::string>();
    const TensorCoreShape* tc = k_.target.tensor_core(name);
    if (!tc || tc->emulated || !gpu()) fail(Code::Unsupported, "llvm: no tensor-core instruction ", name);
    const bool bf16 = tc->in == Scalar::BFloat16;
    std::string a = v(u->src(0)), b = v(u->src(1)), c = v(u->src(2));
    std::string at = reg_type(u->src(0)->dtype), bt = reg_type(u->src(1)->dtype), ct = reg_type(u->dtype);
    if (amd()) {
      bool mfma = name.rfind("mfma", 0) == 0;
      std::string in = bf16 ? "bf16" : "f16";
      std::string fn = mfma ? str("llvm.amdgcn.mfma.f32.16x16x16", in, bf16 ? ".1k" : "")
                            : str("llvm.amdgcn.wmma.f32.16x16x16.", in);
      std::string types = str(at, ", ", bt, ", ", ct, mfma ? ", i32, i32, i32" : "");
      std::string args = str(at, " ", a, ", ", bt, " ", b, ", ", ct, " ", c, mfma ? ", i32 0, i32 0, i32 0" : "");
      return call(ct, fn, types, args);
    }
    // NVPTX: the fragments as 32-bit registers
    auto regs = [&](const std::string& x, const std::string& xt, int elems) {
      std::string words = emit(str("bitcast ", xt, " ", x, " to <", elems / 2, " x i32>"));
      std::vector<std::string> out;
      for (int i = 0; i < elems / 2; i++) {
        std::string w = emit(str("extractelement <", elems / 2, " x i32> ", words, ", i64 ", i));
        out.push_back(bf16 ? str("i32 ", w) : str("<2 x half> ", emit(str("bitcast i32 ", w, " to <2 x half>"))));
      }
      return out;
    };
    std::vector<std::string> args = regs(a, at, tc->a_elems), bs = regs(b, bt, tc->b_elems);
    args.insert(args.end(), bs.begin(), bs.end());
    for (int i = 0; i < tc->c_elems; i++)
      args.push_back(str("float ", emit(str("extractelement ", ct, " ", c, ", i64 ", i))));
    std::string types, list;
    for (const std::string& x : args) {
      types += str(types.empty() ? "" : ", ", x.substr(0, x.rfind(' ')));
      list += str(list.empty() ? "" : ", ", x);
    }
    std::string st = "{float, float, float, float}";
    std::string d =
        call(st, bf16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16" : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", types, list);
    std::string out = "poison";
    for (int i = 0; i < tc->c_elems; i++)
      out = emit(str("insertelement ", ct, " ", out, ", float ", emit(str("extractvalue ", st, " ", d, ", ", i)),
                     ", i64 ", i));
    return out;
  }

  // A work-group barrier: every work-item's earlier local-memory writes are visible after it.
  void barrier() {
    if (!gpu()) fail(Code::Unsupported, "llvm: the CPU has no work-group barrier");
    if (!amd()) {
      decls_.insert("declare void @llvm.nvvm.barrier0()");
      line("call void @llvm.nvvm.barrier0()");
      return;
    }
    decls_.insert("declare void @llvm.amdgcn.s.barrier()");
    line("fence syncscope(\"workgroup\") release");
    line("call void @llvm.amdgcn.s.barrier()");
    line("fence syncscope(\"workgroup\") acquire");
  }

  // ---- helpers --------------------------------------------------------------------------
  // An instruction; one without side effects whose text was emitted before where it dominates this
  // point (in this region or one around it) is that value again. Addresses repeat most: the loads
  // of an unrolled window sum the same hoisted terms, which LLVM parsed only to remove them again.
  // With the deferred Index (instruction()), ResNet-18's IR went from 23.8k to 15.5k instructions,
  // LLVM's parsing of it from 213M to 160M instructions and its IR passes from 345M to 309M.
  std::string emit(const std::string& rhs) {
    const bool pure = is_pure(rhs);
    const uint64_t h = pure ? std::hash<std::string_view>()(rhs) : 0;
    if (pure && !buckets_.empty())
      for (uint32_t e = buckets_[h & (buckets_.size() - 1)]; e; e = emitted_[e - 1].next) {
        const Emitted& x = emitted_[e - 1];
        if (x.hash == h && std::string_view(body_).substr(x.at, x.len) == rhs) return str("%t", x.name);
      }
    const int name = ntmp_++;
    body_ += "  %t";
    body_ += std::to_string(name);
    body_ += " = ";
    body_ += rhs;
    body_ += '\n';
    if (pure) remember(h, uint32_t(body_.size() - 1 - rhs.size()), uint32_t(rhs.size()), uint32_t(name));
    return str("%t", name);
  }
  // Whether an instruction's value depends on its operands alone (no memory, no calls, no phis).
  static bool is_pure(std::string_view rhs) {
    static constexpr std::string_view kPure[] = {
        "add ",           "sub ",           "mul ",           "shl ",
        "lshr ",          "ashr ",          "and ",           "or ",
        "xor ",           "sdiv ",          "udiv ",          "srem ",
        "urem ",          "fadd ",          "fsub ",          "fmul ",
        "fdiv ",          "frem ",          "fneg ",          "icmp ",
        "fcmp ",          "select ",        "zext ",          "sext ",
        "trunc ",         "fptrunc ",       "fpext ",         "fptoui ",
        "fptosi ",        "uitofp ",        "sitofp ",        "bitcast ",
        "ptrtoint ",      "inttoptr ",      "getelementptr ", "extractelement ",
        "insertelement ", "shufflevector ", "extractvalue ",  "insertvalue "};
    if (rhs.empty()) return false;
    for (std::string_view p : kPure)
      if (p[0] == rhs[0] && rhs.starts_with(p)) return true;
    return false;
  }
  // A pure instruction just emitted: its text is body_[at, at + len), its value %t<name>.
  void remember(uint64_t hash, uint32_t at, uint32_t len, uint32_t name) {
    if (emitted_.size() >= buckets_.size()) {  // rechain all: later entries stay ahead of earlier ones
      buckets_.assign(std::max<size_t>(64, 2 * buckets_.size()), 0);
      for (size_t i = 0; i < emitted_.size(); i++) {
        uint32_t& head = buckets_[emitted_[i].hash & (buckets_.size() - 1)];
        emitted_[i].next = head;
        head = uint32_t(i + 1);
      }
    }
    uint32_t& head = buckets_[hash & (buckets_.size() - 1)];
    emitted_.push_back({hash, at, len, name, head});
    head = uint32_t(emitted_.size());
  }
  // A region of code that what follows it does not see (a loop body, an If block, the branch of a
  // gated load): the values emitted or defined in it are forgotten when it closes.
  struct Region {
    size_t emitted;                   // emitted_'s size when it opened
    std::vector<const UOp*> defined;  // val_ entries rendered at their first use (Index)
  };
  void open_region() { regions_.push_back({emitted_.size(), {}}); }
  void close_region() {
    if (regions_.empty()) fail(Code::Internal, "llvm: a region closes that is not open");
    // The region's entries are the newest: each is the head of its chain when it goes.
    while (emitted_.size() > regions_.back().emitted) {
      const Emitted& x = emitted_.back();
      buckets_[x.hash & (buckets_.size() - 1)] = x.next;
      emitted_.pop_back();
    }
    for (const UOp* u : regions_.back().defined) val_.erase(u);
    regions_.pop_back();
  }
  void line(const std::string& s) {
    body_ += "  ";
    body_ += s;
    body_ += '\n';
  }
  void label(const std::string& l) {
    body_ += l;
    body_ += ":\n";
    block_ = l;
  }
  const std::string& v(const UOp* u) {
    auto it = val_.find(u);
    if (it == val_.end()) {
      if (u->op == Op::Const) return val_[u] = const_literal(u);
      if (deferred_.count(u)) {  // an address, rendered where it is first used
        std::string a = address(v(u->src(0)), u->src(1), u->dtype, u->dtype.lanes == 1);
        if (!regions_.empty()) regions_.back().defined.push_back(u);
        return val_[u] = a;
      }
      fail(Code::Internal, "llvm: ", op_name(u->op), " is used before it is defined");
    }
    return it->second;
  }
  std::string call(const std::string& ret, const std::string& name, const std::string& args_types,
                   const std::string& args, const std::string& flags = "", const std::string& metadata = "") {
    decls_.insert(str("declare ", ret, " @", name, "(", args_types, ")"));
    return emit(str("call ", flags.empty() ? "" : flags + " ", ret, " @", name, "(", args, ")", metadata));
  }

  // value as i64 (index arithmetic and addresses)
  std::string as_i64(const UOp* u) {
    DType d = u->dtype;
    if (d.lanes != 1) fail(Code::Internal, "llvm: vector ", d.name(), " used as an address or loop bound");
    if (reg_type(d) == "i64") return v(u);
    if (d.is_bool()) return emit(str("zext i1 ", v(u), " to i64"));
    return emit(str(d.is_unsigned() ? "zext " : "sext ", reg_type(d), " ", v(u), " to i64"));
  }

  // ---- casts (scalars and vectors of the same lane count) ---------------------------------
  std::string bf16_to_f32(const std::string& x, int lanes) {
    DType i32 = dtypes::int32.vec(uint16_t(lanes)), f32 = dtypes::float32.vec(uint16_t(lanes));
    std::string w = emit(str("zext ", reg_type(dtypes::int16.vec(uint16_t(lanes))), " ", x, " to ", reg_type(i32)));
    std::string s = emit(str("shl ", reg_type(i32), " ", w, ", ", splat(i32, "16")));
    return emit(str("bitcast ", reg_type(i32), " ", s, " to ", reg_type(f32)));
  }
  std::string f32_to_bf16(const std::string& x, int lanes) {  // round to nearest even, NaN stays quiet NaN
    DType i32 = dtypes::int32.vec(uint16_t(lanes)), f32 = dtypes::float32.vec(uint16_t(lanes));
    std::string it = reg_type(i32), ft = reg_type(f32);
    std::string b = emit(str("bitcast ", ft, " ", x, " to ", it));
    std::string hi = emit(str("lshr ", it, " ", b, ", ", splat(i32, "16")));
    std::string lsb = emit(str("and ", it, " ", hi, ", ", splat(i32, "1")));
    std::string bias = emit(str("add ", it, " ", lsb, ", ", splat(i32, "32767")));
    std::string r = emit(str("add ", it, " ", b, ", ", bias));
    std::string rh = emit(str("lshr ", it, " ", r, ", ", splat(i32, "16")));
    std::string qn = emit(str("or ", it, " ", hi, ", ", splat(i32, "64")));
    std::string nan = emit(str("fcmp uno ", ft, " ", x, ", ", splat(f32, "0.0")));
    std::string sel = emit(
        str("select ", reg_type(dtypes::bool_.vec(uint16_t(lanes))), " ", nan, ", ", it, " ", qn, ", ", it, " ", rh));
    return emit(str("trunc ", it, " ", sel, " to ", reg_type(dtypes::int16.vec(uint16_t(lanes)))));
  }

  // The int32/float32/bool vector types of `lanes` lanes and the two helpers of the bit-level
  // conversions below: an int32 constant (splat) and an int32 select.
  struct Lanes32 {
    IrWriter& w;
    uint16_t n;
    DType i32, f32;
    std::string it, ft, bt;
    Lanes32(IrWriter& w_, int lanes)
        : w(w_),
          n(uint16_t(lanes)),
          i32(dtypes::int32.vec(n)),
          f32(dtypes::float32.vec(n)),
          it(reg_type(i32)),
          ft(reg_type(f32)),
          bt(reg_type(dtypes::bool_.vec(n))) {}
    std::string k(int64_t c) const { return splat(i32, std::to_string(c)); }
    std::string sel(const std::string& c, const std::string& a, const std::string& b) const {
      return w.emit(str("select ", bt, " ", c, ", ", it, " ", a, ", ", it, " ", b));
    }
  };

  // fp8 bits -> float32 (exact). Normal values move their exponent and mantissa into place and
  // rebias; subnormals are mantissa * 2^(emin - mbits); inf and NaN are selected.
  std::string fp8_to_f32(const std::string& x, Scalar s, int lanes) {
    Fp8Format f = fp8_format(s);
    Lanes32 L(*this, lanes);
    const std::string &it = L.it, &ft = L.ft;
    uint16_t n = L.n;
    auto k = [&](int64_t c) { return L.k(c); };
    auto sel = [&](const std::string& c, const std::string& a, const std::string& b) { return L.sel(c, a, b); };
    std::string w = emit(str("zext ", reg_type(dtypes::int8.vec(n)), " ", x, " to ", it));
    std::string sign = emit(str("shl ", it, " ", emit(str("and ", it, " ", w, ", ", k(0x80))), ", ", k(24)));
    std::string m = emit(str("and ", it, " ", w, ", ", k(0x7f)));
    std::string nb = emit(str("add ", it, " ", emit(str("shl ", it, " ", m, ", ", k(23 - f.mbits))), ", ",
                              k(int64_t(127 - f.bias) << 23)));
    std::string q = splat(L.f32, literal(dtypes::float32, std::ldexp(1.0, 1 - f.bias - f.mbits), 0, true));
    std::string sf = emit(str("fmul ", ft, " ", emit(str("uitofp ", it, " ", m, " to ", ft)), ", ", q));
    std::string sb = emit(str("bitcast ", ft, " ", sf, " to ", it));
    std::string mag = sel(emit(str("icmp ult ", it, " ", m, ", ", k(1 << f.mbits))), sb, nb);
    if (f.ieee) {
      std::string inf = k(f.max_code + 1);
      mag = sel(emit(str("icmp eq ", it, " ", m, ", ", inf)), k(0x7f800000), mag);
      mag = sel(emit(str("icmp ugt ", it, " ", m, ", ", inf)), k(0x7fc00000), mag);
    } else {
      mag = sel(emit(str("icmp eq ", it, " ", m, ", ", k(0x7f))), k(0x7fc00000), mag);
    }
    return emit(str("bitcast ", it, " ", emit(str("or ", it, " ", sign, ", ", mag)), " to ", ft));
  }

  // float32 -> fp8 bits, to nearest even. Normal results: the mantissa is rounded in the integer
  // bits (a carry bumps the exponent) and the exponent rebiased. Subnormal results: adding
  // 2^(emin - mbits + 23) makes the float adder round |x| to a multiple of the subnormal quantum
  // 2^(emin - mbits); the sum's low bits are the code. Overflow: e4m3 -> NaN, e5m2 -> inf (as
  // round_float); NaN -> the canonical NaN; the sign is kept (also of zero).
  std::string f32_to_fp8(const std::string& x, Scalar s, int lanes) {
    Fp8Format f = fp8_format(s);
    Lanes32 L(*this, lanes);
    const std::string &it = L.it, &ft = L.ft;
    uint16_t n = L.n;
    auto k = [&](int64_t c) { return L.k(c); };
    auto sel = [&](const std::string& c, const std::string& a, const std::string& b) { return L.sel(c, a, b); };
    int sh = 23 - f.mbits, emin = 1 - f.bias;
    std::string b = emit(str("bitcast ", ft, " ", x, " to ", it));
    std::string sign = emit(str("and ", it, " ", emit(str("lshr ", it, " ", b, ", ", k(24))), ", ", k(0x80)));
    std::string a = emit(str("and ", it, " ", b, ", ", k(0x7fffffff)));
    std::string lsb = emit(str("and ", it, " ", emit(str("lshr ", it, " ", a, ", ", k(sh))), ", ", k(1)));
    std::string r = emit(str("add ", it, " ", emit(str("add ", it, " ", a, ", ", k((1 << (sh - 1)) - 1))), ", ", lsb));
    std::string cn = emit(
        str("sub ", it, " ", emit(str("lshr ", it, " ", r, ", ", k(sh))), ", ", k(int64_t(127 - f.bias) << f.mbits)));
    double magic = std::ldexp(1.0, emin - f.mbits + 23);
    std::string af = emit(str("bitcast ", it, " ", a, " to ", ft));
    std::string sum = emit(str("fadd ", ft, " ", af, ", ", splat(L.f32, literal(dtypes::float32, magic, 0, true))));
    std::string cs = emit(str("sub ", it, " ", emit(str("bitcast ", ft, " ", sum, " to ", it)), ", ",
                              k(std::bit_cast<uint32_t>(float(magic)))));
    std::string code = sel(emit(str("icmp ult ", it, " ", a, ", ", k(int64_t(emin + 127) << 23))), cs, cn);
    std::string over = emit(str("icmp ugt ", it, " ", code, ", ", k(f.max_code)));
    std::string nan = emit(str("fcmp uno ", ft, " ", x, ", ", splat(L.f32, "0.0")));
    std::string out;
    if (f.ieee) {
      std::string fin = emit(str("or ", it, " ", sign, ", ", code));
      std::string inf = emit(str("or ", it, " ", sign, ", ", k(f.max_code + 1)));
      out = sel(nan, k(f.nan_code), sel(over, inf, fin));
    } else {
      std::string bad = emit(str("or ", L.bt, " ", nan, ", ", over));
      out = sel(bad, k(f.nan_code), emit(str("or ", it, " ", sign, ", ", code)));
    }
    return emit(str("trunc ", it, " ", out, " to ", reg_type(dtypes::int8.vec(n))));
  }

  // float64 -> float32 rounded to odd (toward zero, then the last bit set when inexact): rounding
  // that to fp8 gives the correctly rounded fp8 value (float32 has more than 2 + 3 bits beyond
  // fp8's), where rounding to nearest twice could land on an fp8 tie.
  std::string f64_to_f32_odd(const std::string& x, int lanes) {
    uint16_t n = uint16_t(lanes);
    DType i32 = dtypes::int32.vec(n), f32 = dtypes::float32.vec(n), f64 = dtypes::float64.vec(n);
    std::string it = reg_type(i32), ft = reg_type(f32), dt = reg_type(f64), bt = reg_type(dtypes::bool_.vec(n));
    std::string t = emit(str("fptrunc ", dt, " ", x, " to ", ft));
    std::string back = emit(str("fpext ", ft, " ", t, " to ", dt));
    std::string inexact = emit(str("fcmp one ", dt, " ", back, ", ", x));
    std::string away = emit(str("xor ", bt, " ", emit(str("fcmp ogt ", dt, " ", back, ", ", x)), ", ",
                                emit(str("fcmp olt ", dt, " ", x, ", ", splat(f64, "0.0")))));
    std::string tb = emit(str("bitcast ", ft, " ", t, " to ", it));
    std::string down = emit(str("sub ", it, " ", tb, ", ", emit(str("zext ", bt, " ", away, " to ", it))));
    std::string odd = emit(str("or ", it, " ", down, ", ", splat(i32, "1")));
    std::string r = emit(str("select ", bt, " ", inexact, ", ", it, " ", odd, ", ", it, " ", tb));
    return emit(str("bitcast ", it, " ", r, " to ", ft));
  }

  std::string cast(const std::string& x, DType from, DType to) {
    if (from == to) return x;
    int n = from.lanes;
    DType f32 = dtypes::float32.vec(uint16_t(n));
    if (is_fp8(from)) return cast(fp8_to_f32(x, from.scalar, n), f32, to);
    if (is_fp8(to)) {
      if (from.scalar == Scalar::Float64) return f32_to_fp8(f64_to_f32_odd(x, n), to.scalar, n);
      return f32_to_fp8(cast(x, from, f32), to.scalar, n);
    }
    if (is_bf16(from)) return cast(bf16_to_f32(x, n), f32, to);
    if (is_bf16(to)) return f32_to_bf16(cast(x, from, f32), n);
    std::string ft = reg_type(from), tt = reg_type(to);
    if (to.is_bool()) {
      if (from.is_float()) return emit(str("fcmp une ", ft, " ", x, ", ", splat(from, "0.0")));  // NaN is true
      return emit(str("icmp ne ", ft, " ", x, ", ", splat(from, "0")));
    }
    if (from.is_bool()) {
      if (to.is_float()) return emit(str("uitofp ", ft, " ", x, " to ", tt));
      return emit(str("zext ", ft, " ", x, " to ", tt));
    }
    if (from.is_float() && to.is_float()) {
      int fb = from.bits(), tb = to.bits();
      if (fb == tb) return x;
      return emit(str(fb < tb ? "fpext " : "fptrunc ", ft, " ", x, " to ", tt));
    }
    if (!from.is_float() && to.is_float())
      return emit(str(signed_int(from) ? "sitofp " : "uitofp ", ft, " ", x, " to ", tt));
    if (from.is_float()) {  // float -> int: truncate toward zero, then wrap (saturating beyond int64)
      DType i64 = dtypes::int64.vec(uint16_t(n));
      std::string lt = reg_type(i64);
      std::string s = call(lt, str("llvm.fptosi.sat.", ovl(i64), ".", ovl(from)), ft, str(ft, " ", x));
      if (to.scalar == Scalar::UInt64) {
        std::string u = call(lt, str("llvm.fptoui.sat.", ovl(i64), ".", ovl(from)), ft, str(ft, " ", x));
        std::string neg = emit(str("fcmp olt ", ft, " ", x, ", ", splat(from, "0.0")));
        return emit(
            str("select ", reg_type(dtypes::bool_.vec(uint16_t(n))), " ", neg, ", ", lt, " ", s, ", ", lt, " ", u));
      }
      if (int_bits(to) == 64) return s;
      return emit(str("trunc ", lt, " ", s, " to ", tt));
    }
    int fb = int_bits(from), tb = int_bits(to);  // int -> int
    if (fb == tb) return x;
    if (fb > tb) return emit(str("trunc ", ft, " ", x, " to ", tt));
    return emit(str(signed_int(from) ? "sext " : "zext ", ft, " ", x, " to ", tt));
  }

  // ---- instructions ---------------------------------------------------------------------
  void instruction(const UOp* u) {
    switch (u->op) {
      case Op::Const:
        val_[u] = const_literal(u);
        return;
      case Op::Param:
        val_[u] = str("%b", u->as<ParamArg>().slot);
        return;
      case Op::DefineVar: {
        auto it = var_index_.find(u->as<VarArg>().name);
        if (it == var_index_.end()) fail(Code::Internal, "llvm: unknown variable ", u->as<VarArg>().name);
        val_[u] = str("%var", it->second);
        return;
      }
      case Op::Special:
        if (gpu()) {
          val_[u] = gpu_index(u->as<std::string>());
          return;
        }
        if (u->as<std::string>() != "core_id")
          fail(Code::Unsupported, "llvm: the CPU has no ", u->as<std::string>(), " (GPU work-group index)");
        val_[u] = "%core_id";
        return;
      case Op::Barrier:
        return barrier();
      case Op::If:
        return open_if(u);
      case Op::Endif:
        return close_if(u);
      case Op::Buffer: {
        const BufferArg& b = u->as<BufferArg>();
        if (b.addrspace == AddrSpace::Local) {
          if (!gpu()) fail(Code::Unsupported, "llvm: the CPU has no local memory");
          std::string n = str("@", sym_, ".lds", nacc_++);
          globals_.push_back(str(n, " = internal addrspace(3) global [", std::max<int64_t>(1, b.size), " x ",
                                 mem_s(u->dtype), "] undef, align 16\n"));
          val_[u] = n;
          return;
        }
        std::string n = str("%acc", nacc_++);
        allocas_ += str("  ", n, " = alloca ", amd() ? mem_t(u->dtype) : reg_type(u->dtype), ", i64 ",
                        std::max<int64_t>(1, b.size), amd() ? ", addrspace(5)" : "", "\n");
        val_[u] = n;
        return;
      }
      case Op::After:
        val_[u] = v(u->src(0));
        return;
      case Op::Group:
      case Op::Stack:
        return;
      case Op::Index:                 // the index counts scalar elements, also for a pointer to vectors
        if (is_scatter_address(u)) {  // a vector of pointers; no inbounds: a masked-off lane's may be outside
          DType it = u->src(1)->dtype;
          std::string idx = v(u->src(1));
          if (reg_type(it.base()) != "i64")
            idx = emit(str(it.is_unsigned() ? "zext " : "sext ", reg_type(it), " ", idx, " to <", it.lanes, " x i64>"));
          val_[u] = emit(str("getelementptr ", mem_s(u->dtype), ", ", ptr_type(u->dtype), " ", v(u->src(0)), ", <",
                             it.lanes, " x i64> ", idx));
          return;
        }
        // Rendered at its first use (v): a gated load builds its own address from the index
        // (gated_address), and the plain one would be dead code for LLVM to parse and drop. A vector
        // address may start outside the buffer when a mask disables those lanes: no inbounds (which
        // would make the pointer poison) there.
        deferred_.insert(u);
        return;
      case Op::Vectorize:
        if (auto it = columns_.find(u); it != columns_.end())
          val_[u] = tiles_[it->second.first].out.at(size_t(it->second.second));
        else
          val_[u] = vectorize(u);
        return;
      case Op::Gep: {  // one lane of a vector (an int64 arg), or several (a list: a shuffle)
        if (unread_lanes_.count(u)) return;
        std::string vt = reg_type(u->src(0)->dtype);
        if (std::holds_alternative<int64_t>(u->arg)) {
          val_[u] = emit(str("extractelement ", vt, " ", v(u->src(0)), ", i64 ", u->as<int64_t>()));
          return;
        }
        const auto& idx = u->as<std::vector<int64_t>>();
        std::string mask = str("<", idx.size(), " x i32> <");
        for (size_t i = 0; i < idx.size(); i++) mask += str(i ? ", " : "", "i32 ", idx[i]);
        val_[u] = emit(str("shufflevector ", vt, " ", v(u->src(0)), ", ", vt, " poison, ", mask, ">"));
        return;
      }
      case Op::Wmma:
        val_[u] = wmma(u);
        return;
      case Op::Load:
        return load(u);
      case Op::Store:
        return store(u);
      case Op::Range:
        return open_loop(u);
      case Op::End:
        return close_loop(u);
      default:
        break;
    }
    if (u->op == Op::Cast) {
      val_[u] = cast(v(u->src(0)), u->src(0)->dtype, u->dtype);
      return;
    }
    if (u->op == Op::Bitcast) {
      DType from = u->src(0)->dtype, to = u->dtype;
      if (from.is_bool() || to.is_bool()) fail(Code::Unsupported, "llvm: bitcast of bool");
      std::string ft(reg_type(from)), tt(reg_type(to));
      val_[u] = ft == tt ? v(u->src(0)) : emit(str("bitcast ", ft, " ", v(u->src(0)), " to ", tt));
      return;
    }
    if (is_elementwise(u->op)) {
      const std::string* iv = reg_type(u->dtype) == "i64" ? induction(u) : nullptr;  // also outside addresses
      val_[u] = iv ? *iv : alu(u);
      return;
    }
    fail(Code::Unsupported, "llvm: cannot render ", op_name(u->op));
  }

  // A vector from its lanes: a literal, a splat, or an insertelement chain.
  std::string vectorize(const UOp* u) {
    DType d = u->dtype;
    std::string t = reg_type(d), st = reg_type(d.base());
    bool all_const = true;
    for (const UOp* s : u->src()) all_const = all_const && s->op == Op::Const;
    if (all_const) {
      if (splat_source(u)) return splat(d, v(u->src(0)));
      std::string out = "<";
      for (size_t i = 0; i < u->nsrc(); i++) out += str(i ? ", " : "", st, " ", v(u->src(i)));
      return out + ">";
    }
    if (splat_source(u)) {
      std::string one = emit(str("insertelement ", t, " poison, ", st, " ", v(u->src(0)), ", i64 0"));
      return emit(str("shufflevector ", t, " ", one, ", ", t, " poison, <", d.lanes, " x i32> zeroinitializer"));
    }
    if (std::string whole = concat(u); !whole.empty()) return whole;
    std::string acc = "poison";
    for (size_t i = 0; i < u->nsrc(); i++)
      acc = emit(str("insertelement ", t, " ", acc, ", ", st, " ", v(u->src(i)), ", i64 ", i));
    return acc;
  }

  // The rows of the square tile whose column u is (a Vectorize of lane j of k distinct k-lane
  // vectors, k a power of two of at least 4: expand's transposed tiles), or none.
  static std::vector<const UOp*> tile_rows(const UOp* u) {
    const size_t k = u->nsrc();
    if (k < 4 || (k & (k - 1)) != 0) return {};
    std::vector<const UOp*> rows;
    std::unordered_set<const UOp*> seen;
    for (const UOp* x : u->src()) {
      if (x->op != Op::Gep || !x->holds<int64_t>() || x->as<int64_t>() != u->src(0)->as<int64_t>() ||
          x->src(0)->dtype.lanes != k || !seen.insert(x->src(0)).second)
        return {};
      rows.push_back(x->src(0));
    }
    return rows;
  }
  // A tile transposed, right after its last row is rendered: log2(k) rounds of k two-input
  // shuffles, round b pairing the vectors b apart and swapping their off-diagonal b x b blocks
  // (a 16 x 16 tile of floats in 64 shuffles; one insertelement per lane took LLVM's backend ~480
  // instructions for it). out[j] is column j.
  //   On x86 each round's vectors pass through an empty inline asm, which the instruction selector
  // cannot look through: its shuffle combiner otherwise analyses every shuffle through all the
  // rounds before it, and found nothing to merge (the same instructions come out). A 16 x 16 tile
  // took 4.6-5.1 ms of X86 instruction selection, 1.0 ms with the barriers (llc -time-passes, a Zen
  // 5); 8 x 8 (AVX2) 0.65 ms. The asm emits no instruction. Only for vectors of whole registers
  // (128 bits or more): a tile of 4 fp8 values has no register class for the asm's operand, and
  // LLVM failed to compile it (found by tests/fuzz).
  void transpose(size_t tile) {
    auto& t = tiles_[tile];
    const int64_t k = int64_t(t.rows.size());
    std::vector<std::string> cur;
    for (const UOp* r : t.rows) cur.push_back(v(r));
    const std::string vt = reg_type(t.rows[0]->dtype);
    for (int64_t b = k / 2; b >= 1; b /= 2) {
      std::string low = str("<", k, " x i32> <"), high = low;
      for (int64_t l = 0; l < k; l++) {
        low += str(l ? ", " : "", "i32 ", (l & b) == 0 ? l : k + l - b);
        high += str(l ? ", " : "", "i32 ", (l & b) == 0 ? l + b : k + l);
      }
      std::vector<std::string> next = cur;
      for (int64_t i = 0; i < k; i++) {
        if (i & b) continue;
        const std::string pair = str(vt, " ", cur[size_t(i)], ", ", vt, " ", cur[size_t(i + b)], ", ");
        next[size_t(i)] = emit(str("shufflevector ", pair, low, ">"));
        next[size_t(i + b)] = emit(str("shufflevector ", pair, high, ">"));
      }
      if (b > 1 && x86() && k * t.rows[0]->dtype.base().bits() >= 128)
        for (std::string& x : next) x = emit(str("call ", vt, " asm \"\", \"=v,0\"(", vt, " ", x, ")"));
      cur.swap(next);
    }
    t.out = std::move(cur);
  }

  // A Vectorize of every lane of equal vectors in order (expand's loads of contiguous runs) as
  // shuffles that put the vectors together, pairwise: the loads' registers side by side. "" for
  // any other Vectorize (wants_slp in the CPU backend does not count these as built lane by lane).
  std::string concat(const UOp* u) {
    auto it = concats_.find(u);
    if (it == concats_.end()) return "";
    std::vector<std::string> parts;
    for (const UOp* x : it->second) parts.push_back(v(x));
    for (int64_t w = it->second[0]->dtype.lanes; parts.size() > 1; w *= 2) {
      std::string vt = reg_type(u->dtype.base().vec(uint16_t(w)));
      std::string mask = str("<", 2 * w, " x i32> <");
      for (int64_t i = 0; i < 2 * w; i++) mask += str(i ? ", " : "", "i32 ", i);
      std::vector<std::string> next;
      for (size_t i = 0; i < parts.size(); i += 2)
        next.push_back(emit(str("shufflevector ", vt, " ", parts[i], ", ", vt, " ", parts[i + 1], ", ", mask, ">")));
      parts.swap(next);
    }
    return parts[0];
  }

  // value in memory representation (bools: bytes in buffers) and back
  std::string to_mem(const std::string& x, DType value, DType ptr) {
    std::string mt = mem_t(ptr);
    if (mt == reg_type(value)) return x;
    return emit(str("zext ", reg_type(value), " ", x, " to ", mt));
  }
  std::string from_mem(const std::string& x, DType value, DType ptr) {
    std::string mt = mem_t(ptr);
    if (mt == reg_type(value)) return x;
    return emit(str("icmp ne ", mt, " ", x, ", ",
                    splat(ptr.elem().scalar == Scalar::Bool ? dtypes::int8.vec(ptr.lanes) : ptr.elem(), "0")));
  }

  // Whether a gated load may select its address (the zeros block where the gate is off): on the
  // CPU, from a buffer in memory (not a register buffer, which a select of its address would keep
  // from being promoted to registers), one address per load (not a gather).
  bool selects_address(const UOp* addr) const {
    return !gpu() && !is_scatter_address(addr) && addr->dtype.addrspace == AddrSpace::Global;
  }

  // A gate as a conjunction of uniform bits (`uniform`: scalars, or scalars splat across the
  // lanes: a padded row's validity) and per-lane parts (`lanes`).
  static void split_gate(const UOp* gate, std::vector<const UOp*>* uniform, std::vector<const UOp*>* lanes) {
    if (gate->dtype.lanes == 1) {
      uniform->push_back(gate);
    } else if (gate->op == Op::And) {
      for (const UOp* s : gate->src()) split_gate(s, uniform, lanes);
    } else if (const UOp* one = splat_source(gate)) {
      uniform->push_back(one);
    } else {
      lanes->push_back(gate);
    }
  }

  // Whether x reads as zero bytes: +0.0, integer 0 or false, or a splat of one.
  static bool is_zero(const UOp* x) {
    if (const UOp* one = splat_source(x)) x = one;
    return x->is_const_value(0) && !(x->holds<double>() && std::signbit(x->as<double>()));
  }

  // Where a gated load reads: `base` where bit `on` is set, `alt` (the region of zeros) elsewhere.
  struct Choice {
    std::string on, alt;
    i128 reach = 0;  // alt reads zeros this many elements either side of it
  };
  // The address of element idx of buffer `base` (pointer type p), or of the base a choice picks.
  // On the CPU an index that moves with the innermost open loop is split: the terms that do not
  // move with it address a base that LLVM hoists out of the loop (each side of a choice, so that a
  // gate that moves with the loop picks between two hoisted pointers), the rest (ranges times
  // strides, and the constant) index it, so that the address is one x86 operand [base + range *
  // scale + constant] however many terms the index has. A term q * c is loop q's own induction
  // variable, stepped by c (find_strides). That is the form loop strength reduction found, and
  // codegen runs without it (CpuCompiler: a fifth of its time on our kernels).
  std::string address(const std::string& base, const UOp* idx, DType p, bool inbounds, const Choice* choice = nullptr) {
    const std::string gep = str("getelementptr ", inbounds ? "inbounds " : "", mem_s(p), ", ", ptr_type(p), " ");
    // No inbounds where the index is split: the hoisted base may lie outside the buffer (the
    // moving part brings it back), and an inbounds step from it would be poison.
    const std::string plain = str("getelementptr ", mem_s(p), ", ", ptr_type(p), " ");
    auto pick = [&](const std::string& a, const std::string& b) {
      return choice ? emit(str("select i1 ", choice->on, ", ptr ", a, ", ptr ", b)) : a;
    };
    auto whole = [&] { return emit(str(gep, pick(base, choice ? choice->alt : ""), ", i64 ", as_i64(idx))); };
    const UOp* r = open_ranges_.empty() ? nullptr : open_ranges_.back();
    if (!r || !splits(idx)) return whole();
    std::vector<const UOp*> terms, fixed, moving;
    i128 offset = 0;
    index_terms(idx, &terms, &offset);
    for (const UOp* t : terms) (moves_with(t, r) ? moving : fixed).push_back(t);
    bool stepped = false;
    for (const UOp* t : terms) stepped = stepped || induction(t);
    if (moving.empty() && stepped) moving.swap(fixed);  // nothing moves here: stepped by outer loops
    if (moving.empty() || (fixed.empty() && !stepped)) return whole();
    auto value = [&](const UOp* t) -> std::string {
      const std::string* iv = induction(t);
      return iv ? *iv : v(t);
    };
    auto sum = [&](const std::vector<const UOp*>& ts, i128 c) {
      std::string x = value(ts[0]);
      for (size_t i = 1; i < ts.size(); i++) x = emit(str("add nsw i64 ", x, ", ", value(ts[i])));
      if (c != 0) x = emit(str("add nsw i64 ", x, ", ", int64_t(c)));
      return x;
    };
    if (fixed.empty()) return emit(str(gep, pick(base, choice ? choice->alt : ""), ", i64 ", sum(moving, offset)));
    const std::string f = sum(fixed, 0);
    // The region of zeros needs no offset where the moving part alone stays within its reach
    // (and with one, instcombine would fold the choice of two offset pointers into an offset of
    // the choice, which is per step again).
    std::string alt;
    if (choice) {
      i128 lo = offset, hi = offset + p.lanes;
      for (const UOp* t : moving) lo += t->minmax().lo, hi += t->minmax().hi;
      alt = lo >= -choice->reach && hi <= choice->reach ? choice->alt : emit(str(plain, choice->alt, ", i64 ", f));
    }
    const std::string hoisted = pick(emit(str(plain, base, ", i64 ", f)), alt);
    return emit(str(plain, hoisted, ", i64 ", sum(moving, offset)));
  }
  // The induction variable of loop q that a term q * c is (find_strides), or nullptr.
  const std::string* induction(const UOp* t) const {
    if (t->dtype.lanes != 1) return nullptr;
    auto [q, c] = stepped_range(t);
    auto it = q ? loops_.find(q) : loops_.end();
    if (it == loops_.end()) return nullptr;
    for (const auto& [stride, name] : it->second.steps)
      if (stride == c) return &name;
    return nullptr;
  }
  // Whether index term t changes as range r steps (a load in it counts as changing).
  bool moves_with(const UOp* t, const UOp* r) {
    if (t == r) return true;
    switch (t->op) {
      case Op::Const:
      case Op::Param:
      case Op::DefineVar:
      case Op::Special:
      case Op::Range:
        return false;
      case Op::Load:
        return true;
      default:
        break;
    }
    auto [it, fresh] = moves_.try_emplace(std::pair(t, r), false);
    if (!fresh) return it->second;
    bool m = false;
    for (const UOp* x : t->src()) m = m || moves_with(x, r);
    it->second = m;  // (a std::map keeps `it` valid while the recursion inserts)
    return m;
  }

  // The address a load gated by uniform bits `on` reads: where they are off, zeros. Where the
  // index stays within half the CPU's region of zeros either side of its middle, the gate selects
  // only the base (the buffer, or the region's middle) and the index applies to either: the select
  // then depends on the gate alone, leaves the loop, and the loads under one gate share a base
  // that steps with the loop. Selecting the whole address (the kernel's small block of zeros
  // elsewhere) is a lea and a cmov per load per step: a 3x3 convolution's padded input, 19 of each
  // in the inner loop of ResNet-18's 256x14x14 tile.
  std::string gated_address(const UOp* addr, const std::string& on) {
    const DType p = addr->dtype;
    const i128 item = std::max(1, p.base().itemsize()), half = kCpuZeroRegionBytes / 2;
    if (dialect_ == LlvmDialect::Cpu && addr->op == Op::Index && addr->nsrc() == 2 && addr->src(1)->dtype.lanes == 1 &&
        !addr->src(1)->dtype.is_float()) {
      const MinMax& range = addr->src(1)->minmax();
      if (range.lo * item >= -half && (range.hi + p.lanes) * item <= half) {
        decls_.insert(str("@", kCpuZeroRegionSymbol, " = external global [", kCpuZeroRegionBytes, " x i8]"));
        const Choice zeros{on, str("getelementptr (i8, ptr @", kCpuZeroRegionSymbol, ", i64 ", int64_t(half), ")"),
                           half / item};
        return address(v(addr->src(0)), addr->src(1), p, false, &zeros);
      }
    }
    zero_bytes_ = std::max<int64_t>(zero_bytes_, int64_t(p.lanes * item));
    return emit(str("select i1 ", on, ", ptr ", v(addr), ", ptr @", sym_, ".zeros"));
  }

  void load(const UOp* u) {
    const UOp* addr = u->src(0);
    DType p = addr->dtype;
    std::string mt = mem_t(p);
    int align = std::max(1, p.base().itemsize());
    std::string pt = ptr_type(p);
    const std::string md = alias_metadata(addr, false);
    // A gather (every lane from its own address): masked by a per-lane gate, with the alt values
    // where it is off; a scalar gate branches around it like around a load.
    auto gather = [&](const std::string& mask, const std::string& alt) {
      std::string vt = pointers_type(p), mk = str("<", p.lanes, " x i1>");
      std::string name = gather_scatter_name("gather", p);
      return from_mem(call(mt, name, str(vt, ", i32, ", mk, ", ", mt),
                           str(vt, " ", v(addr), ", i32 ", align, ", ", mk, " ", mask, ", ", mt, " ", alt), "", md),
                      u->dtype, p);
    };
    auto read = [&] {
      if (is_scatter_address(addr)) return gather(splat(dtypes::bool_.vec(p.lanes), "true"), "poison");
      return from_mem(emit(str("load ", mt, ", ", pt, " ", v(addr), ", align ", align, md)), u->dtype, p);
    };
    if (is_scatter_address(addr) && u->nsrc() == 3 && u->src(2)->dtype.lanes > 1) {
      val_[u] = gather(v(u->src(2)), to_mem(v(u->src(1)), u->dtype, p));
      return;
    }
    // (inside If(gate) a load under the same gate reads as an ungated one: lower_reduces gates a
    // padded step's update by its loads' gate)
    if (u->nsrc() < 3 || std::find(open_gates_.begin(), open_gates_.end(), u->src(2)) != open_gates_.end()) {
      val_[u] = read();
      return;
    }
    const UOp* gate = u->src(2);
    auto masked = [&](const std::string& ptr, const std::string& mask) {  // masked-off lanes are not touched
      const std::string mk = reg_type(gate->dtype), name = str("llvm.masked.load.", "v", p.lanes, mem_s(p), ptr_ovl(p));
      return from_mem(call(mt, name, str(pt, ", i32, ", mk, ", ", mt),
                           str(pt, " ", ptr, ", i32 ", align, ", ", mk, " ", mask, ", ", mt, " ",
                               to_mem(v(u->src(1)), u->dtype, p)),
                           "", md),
                      u->dtype, p);
    };
    // On the CPU the gate's uniform part selects the address (the kernel's block of zeros where it
    // is off), only the per-lane rest masks the load, and the alt value is taken where the uniform
    // part is off (nothing to do for a zero alt). No branch: a convolution's padded input, one gated
    // scalar per output column, was a compare and a branch per value, loaded into a register and
    // broadcast on the shuffle port; unconditional, the loads broadcast from memory on the load
    // ports. And a row's validity, splat across the lanes of its masked vector loads, no longer
    // rebuilds their masks every step: the per-lane rest (which columns are inside) is hoisted.
    std::vector<const UOp*> uniform, lanes;
    if (selects_address(addr)) split_gate(gate, &uniform, &lanes);
    if (!uniform.empty()) {
      auto all = [&](const std::vector<const UOp*>& parts, const std::string& type) {
        std::string x = v(parts[0]);
        for (size_t i = 1; i < parts.size(); i++) x = emit(str("and ", type, " ", x, ", ", v(parts[i])));
        return x;
      };
      const std::string on = all(uniform, "i1");
      const std::string safe = gated_address(addr, on);
      const std::string x = lanes.empty()
                                ? from_mem(emit(str("load ", mt, ", ptr ", safe, ", align ", align, md)), u->dtype, p)
                                : masked(safe, all(lanes, reg_type(gate->dtype)));
      const std::string rt = reg_type(u->dtype);
      val_[u] = is_zero(u->src(1)) ? x : emit(str("select i1 ", on, ", ", rt, " ", x, ", ", rt, " ", v(u->src(1))));
      return;
    }
    if (gate->dtype.lanes > 1) {
      val_[u] = masked(v(addr), v(gate));
      return;
    }
    // A scalar gate elsewhere (GPUs, register buffers: a select of their address would keep them
    // from being promoted to registers) branches around the load.
    int n = nlabel_++;
    std::string from = block_;
    line(str("br i1 ", v(gate), ", label %ld", n, ", label %ld", n, ".j"));
    label(str("ld", n));
    open_region();
    std::string x = read();
    std::string inner = block_;
    line(str("br label %ld", n, ".j"));
    close_region();
    label(str("ld", n, ".j"));
    val_[u] = emit(str("phi ", reg_type(u->dtype), " [ ", x, ", %", inner, " ], [ ", v(u->src(1)), ", %", from, " ]"));
  }

  void store(const UOp* u) {
    const UOp* addr = u->src(0);
    DType p = addr->dtype;
    std::string mt = mem_t(p);
    int align = std::max(1, p.base().itemsize());
    std::string pt = ptr_type(p);
    const std::string md = alias_metadata(addr, true);
    auto write = [&] {
      std::string tail = str(", align ", align);
      line(str("store ", mt, " ", to_mem(v(u->src(1)), u->src(1)->dtype, p), ", ", pt, " ", v(addr), tail, md));
      if (int64_t bytes = streaming_bytes(u))
        nt_stores_.push_back({body_.size() - 1 - md.size() - tail.size(), tail.size(), bytes});
    };
    if (is_scatter_address(addr)) {  // every lane to its own address
      std::string vt = pointers_type(p);
      std::string mask = u->nsrc() == 3 ? v(u->src(2)) : splat(dtypes::bool_.vec(p.lanes), "true");
      if (u->nsrc() == 3 && u->src(2)->dtype.lanes != p.lanes)
        fail(Code::Internal, "llvm: a scatter store's gate has ", u->src(2)->dtype.lanes, " lanes, not ", p.lanes);
      std::string name = gather_scatter_name("scatter", p);
      decls_.insert(str("declare void @", name, "(", mt, ", ", vt, ", i32, <", p.lanes, " x i1>)"));
      line(str("call void @", name, "(", mt, " ", to_mem(v(u->src(1)), u->src(1)->dtype, p), ", ", vt, " ", v(addr),
               ", i32 ", align, ", <", p.lanes, " x i1> ", mask, ")", md));
      return;
    }
    if (u->nsrc() < 3) return write();
    const UOp* gate = u->src(2);  // a scalar gate is an If block around the store (linearize)
    if (gate->dtype.lanes > 1) {
      std::string name = str("llvm.masked.store.", "v", p.lanes, mem_s(p), ptr_ovl(p));
      decls_.insert(str("declare void @", name, "(", mt, ", ", pt, ", i32, ", reg_type(gate->dtype), ")"));
      line(str("call void @", name, "(", mt, " ", to_mem(v(u->src(1)), u->src(1)->dtype, p), ", ", pt, " ", v(addr),
               ", i32 ", align, ", ", reg_type(gate->dtype), " ", v(gate), ")", md));
      return;
    }
    fail(Code::Internal, "llvm: a store with a scalar gate outside an If block");
  }

  // A store the CPU may write non-temporally (Target::streaming_store_bytes): ungated, of a whole
  // vector of 32 bytes or more, at an index that keeps it aligned when the buffer is, to a buffer
  // that large which the kernel does not read. Its vector's bytes, or 0.
  int64_t streaming_bytes(const UOp* u) {
    const UOp* addr = u->src(0);
    if (!streaming_ || u->nsrc() > 2 || addr->op != Op::Index || is_scatter_address(addr)) return 0;
    const UOp* buf = addr->src(0);
    int64_t lanes = addr->dtype.lanes, bytes = lanes * addr->dtype.base().itemsize();
    if (buf->op != Op::Param || lanes < 2 || bytes < 32 || (bytes & (bytes - 1)) != 0) return 0;
    int64_t slot = buf->as<ParamArg>().slot;
    bool large = false;
    for (const KernelParam& p : k_.params)
      if (p.slot == slot)
        large = !p.read && p.size > 0 && p.size * p.dtype.itemsize() >= k_.target.streaming_store_bytes;
    if (!large || !multiple_of(addr->src(1), lanes)) return 0;
    int64_t& need = nt_align_[slot];
    need = std::max(need, bytes);
    return bytes;
  }
  // Whether index expression e is a multiple of m for every value of its ranges.
  static bool multiple_of(const UOp* e, int64_t m) {
    switch (e->op) {
      case Op::Const:
        return e->const_int() % m == 0;
      case Op::Mul:
        return multiple_of(e->src(0), m) || multiple_of(e->src(1), m);
      case Op::Add:
        return multiple_of(e->src(0), m) && multiple_of(e->src(1), m);
      default:
        return false;
    }
  }

  // If(gate) ... Endif: a branch around the block.
  void open_if(const UOp* u) {
    int n = nlabel_++;
    line(str("br i1 ", v(u->src(0)), ", label %if", n, ", label %if", n, ".end"));
    label(str("if", n));
    open_region();
    ifs_[u] = n;
    open_gates_.push_back(u->src(0));
  }
  void close_if(const UOp* u) {
    auto it = ifs_.find(u->src(0));
    if (it == ifs_.end()) fail(Code::Internal, "llvm: Endif of an If that is not open");
    line(str("br label %if", it->second, ".end"));
    close_region();
    if (!open_gates_.empty()) open_gates_.pop_back();
    label(str("if", it->second, ".end"));
  }

  struct Loop {
    int n;
    std::string var, bound;
    std::vector<std::pair<int64_t, std::string>> steps;  // derived induction variables: stride, name
  };

  // The range r and stride c of a term r * c (c a constant other than 0 and 1), or {nullptr, 0}.
  static std::pair<const UOp*, int64_t> stepped_range(const UOp* t) {
    if (t->op != Op::Mul) return {nullptr, 0};
    const UOp *r = t->src(0), *c = t->src(1);
    if (c->op == Op::Range) std::swap(r, c);
    if (r->op != Op::Range || c->op != Op::Const || c->dtype.is_float()) return {nullptr, 0};
    const i128 k = c->const_int();
    if (k == 1 || k == 0 || k > INT32_MAX || k < INT32_MIN) return {nullptr, 0};
    return {r, int64_t(k)};
  }
  // The terms of an index sum but its constants, which are added into *offset.
  static void index_terms(const UOp* idx, std::vector<const UOp*>* terms, i128* offset) {
    add_terms(idx, terms);
    for (const UOp* t : *terms)
      if (t->op == Op::Const) *offset += t->const_int();
    std::erase_if(*terms, [](const UOp* t) { return t->op == Op::Const; });
  }
  // Whether address() splits index idx at the innermost open loop r (CPU, a scalar 64-bit sum).
  bool splits(const UOp* idx) const {
    return dialect_ == LlvmDialect::Cpu && (idx->op == Op::Add || idx->op == Op::Mul) && idx->dtype.lanes == 1 &&
           reg_type(idx->dtype) == "i64";
  }
  // The strides c of the terms r * c in the kernel's split addresses, per range r: each becomes an
  // induction variable of loop r, stepped by c at its latch, where codegen would otherwise multiply
  // (shift) r every step. In every loop, not only the innermost: LLVM's loop vectorizer may turn
  // the innermost into vector code, and its parent becomes the inner loop.
  void find_strides() {
    for (const UOp* u : k_.linear->src()) {
      if (u->op != Op::Index || u->nsrc() != 2 || !splits(u->src(1))) continue;
      std::vector<const UOp*> terms;
      add_terms(u->src(1), &terms);
      for (const UOp* t : terms) {
        auto [r, c] = stepped_range(t);
        if (!r) continue;
        std::vector<int64_t>& cs = strides_[r];
        if (std::find(cs.begin(), cs.end(), c) == cs.end()) cs.push_back(c);
      }
    }
  }

  void open_loop(const UOp* r) {
    int n = nlabel_++;
    Loop L{n, str("%r", n), as_i64(r->src(0)), {}};
    if (r->src(0)->minmax().lo >= 1) {
      line(str("br label %L", n));
    } else {
      std::string g = emit(str("icmp sgt i64 ", L.bound, ", 0"));
      line(str("br i1 ", g, ", label %L", n, ", label %L", n, ".exit"));
    }
    std::string from = block_;
    label(str("L", n));
    open_region();
    line(str(L.var, " = phi i64 [ 0, %", from, " ], [ ", L.var, ".next, %L", n, ".latch ]"));
    if (auto it = strides_.find(r); it != strides_.end())
      for (int64_t c : it->second) {
        L.steps.push_back({c, str(L.var, ".s", L.steps.size())});
        line(str(L.steps.back().second, " = phi i64 [ 0, %", from, " ], [ ", L.steps.back().second, ".next, %L", n,
                 ".latch ]"));
      }
    val_[r] = L.var;
    loops_[r] = L;
    open_ranges_.push_back(r);
  }

  void close_loop(const UOp* e) {
    const UOp* r = e->src(1);
    auto it = loops_.find(r);
    if (it == loops_.end()) fail(Code::Internal, "llvm: End of a loop that is not open");
    if (!open_ranges_.empty() && open_ranges_.back() == r) open_ranges_.pop_back();
    const Loop& L = it->second;
    line(str("br label %L", L.n, ".latch"));
    label(str("L", L.n, ".latch"));
    line(str(L.var, ".next = add nuw nsw i64 ", L.var, ", 1"));
    for (const auto& [c, name] : L.steps) line(str(name, ".next = add nsw i64 ", name, ", ", c));
    // On the CPU the exit test compares the stepped counter for inequality: instcombine rewrites a
    // signed compare of it into one of the counter before the step (`r < n - 1`), which keeps both
    // alive across the step (two moves per iteration), and only LSR, which codegen runs without,
    // would undo that. The loop runs r = 0 .. n-1 and is entered only when n >= 1 (open_loop).
    line(str(L.var, ".c = icmp ", dialect_ == LlvmDialect::Cpu ? "ne" : "slt", " i64 ", L.var, ".next, ", L.bound));
    // A loop that updates a register tile (several accumulators from UPCAST copies) is left to
    // the SLP vectorizer, which packs the copies; the loop vectorizer would vectorize along this
    // loop instead, usually with gathers.
    bool tile = e->src(0)->op == Op::Group;
    for (const UOp* s : e->src(0)->src()) tile = tile && s->op == Op::Store && is_acc_address(s->src(0));
    std::string md;
    if (tile || few_iterations_) {
      int64_t id = loop_metadata_ + 2 * int64_t(tile_loops_.size());
      md = str(", !llvm.loop !", id);
      tile_loops_.push_back(str("!", id, " = distinct !{!", id, ", !", id + 1, "}\n!", id + 1,
                                " = !{!\"llvm.loop.vectorize.enable\", i1 false}\n"));
    }
    line(str("br i1 ", L.var, ".c, label %L", L.n, ", label %L", L.n, ".exit", md));
    close_region();
    label(str("L", L.n, ".exit"));
  }

  // Whether every lane of x is an integer zero constant.
  static bool is_zero_value(const UOp* x) {
    if (x->op == Op::Const) return x->dtype.is_int() && x->const_int() == 0;
    if (x->op != Op::Vectorize) return false;
    for (const UOp* c : x->src())
      if (!is_zero_value(c)) return false;
    return true;
  }

  std::string alu(const UOp* u) {
    Op op = u->op;
    DType d = op == Op::Where ? u->src(1)->dtype : u->src(0)->dtype;  // operand dtype
    std::string t(reg_type(d));
    auto a = [&](size_t i) { return v(u->src(i)); };
    bool fl = d.is_float();
    bool sg = signed_int(d);
    bool acc = false;  // an accumulator update: may be reassociated
    for (const UOp* s : u->src()) acc = acc || is_acc_load(s);
    std::string ff = acc ? "reassoc contract " : "";
    std::string iflags = d.is_index() ? "nsw " : "";
    auto bin = [&](const char* iop, const char* fop) {
      if (fl) return emit(str(fop, " ", ff, t, " ", a(0), ", ", a(1)));
      return emit(str(iop, " ", iflags, t, " ", a(0), ", ", a(1)));
    };
    auto icmp = [&](const char* s_, const char* u_) {
      return emit(str("icmp ", sg ? s_ : u_, " ", t, " ", a(0), ", ", a(1)));
    };
    auto fcmp = [&](const char* c) { return emit(str("fcmp ", c, " ", t, " ", a(0), ", ", a(1))); };
    auto fcall = [&](const char* name, size_t nargs, std::string flags = "") {
      std::string types, args;
      for (size_t i = 0; i < nargs; i++) {
        types += str(i ? ", " : "", t);
        args += str(i ? ", " : "", t, " ", a(i));
      }
      if (acc) flags = flags.empty() ? "reassoc" : "reassoc " + flags;
      return call(t, str("llvm.", name, ".", ovl(d)), types, args, flags);
    };
    switch (op) {
      case Op::Add:
        return bin("add", "fadd");
      case Op::Sub:
        return bin("sub", "fsub");
      case Op::Mul:
        return bin("mul", "fmul");
      case Op::Div:
        if (!fl) fail(Code::Unsupported, "llvm: Div of ", d.name());
        return emit(str("fdiv ", t, " ", a(0), ", ", a(1)));
      case Op::Recip:
        return emit(str("fdiv ", t, " ", splat(d, literal(d.base(), 1.0, 0, true)), ", ", a(0)));
      case Op::Neg:
        if (fl) return emit(str("fneg ", t, " ", a(0)));
        return emit(str("sub ", t, " ", splat(d, "0"), ", ", a(0)));
      case Op::Mulacc: {
        // One fmuladd, not fmul + fadd: LLVM sinks an accumulator's fadd into a later block
        // when a gated load sits between them, and instruction selection, which sees one block
        // at a time, then leaves the pair unfused (a 3x3 conv ran 12 of its 16 FMAs as two ops).
        if (fl) return fcall("fmuladd", 3);
        std::string m = emit(str("mul ", iflags, t, " ", a(0), ", ", a(1)));
        return emit(str("add ", iflags, t, " ", m, ", ", a(2)));
      }
      case Op::Max:
        // NaN in, NaN out, as in the C-style renderers; like them it does not order -0 below +0
        // (nsz): that ordering made each maximum five instructions instead of one max (a pool's
        // relu and window max) and a sixth of the pool kernels' instruction selection.
        if (fl) return fcall("maximum", 2, "nsz");
        if (d.is_bool()) return emit(str("or ", t, " ", a(0), ", ", a(1)));
        return call(t, str(sg ? "llvm.smax." : "llvm.umax.", ovl(d)), str(t, ", ", t),
                    str(t, " ", a(0), ", ", t, " ", a(1)));
      case Op::CDiv:
      case Op::CMod:
        return divmod(u, d);
      case Op::CmpLt:
        return fl ? fcmp("olt") : icmp("slt", "ult");
      case Op::CmpGt:
        return fl ? fcmp("ogt") : icmp("sgt", "ugt");
      case Op::CmpGe:
        return fl ? fcmp("uge") : icmp("sge", "uge");  // !(a < b)
      case Op::CmpLe:
        return fl ? fcmp("ule") : icmp("sle", "ule");  // !(b < a)
      case Op::CmpNe:
        return fl ? fcmp("une") : icmp("ne", "ne");
      case Op::CmpEq:
        return fl ? fcmp("oeq") : icmp("eq", "eq");
      case Op::And:
        return emit(str("and ", t, " ", a(0), ", ", a(1)));
      case Op::Or:
        return emit(str("or ", t, " ", a(0), ", ", a(1)));
      case Op::Xor:
        return emit(str("xor ", t, " ", a(0), ", ", a(1)));
      case Op::Shl:
      case Op::Shr:
        return shift(u, d);
      case Op::Where: {
        // LLVM 19's X86 backend drops a select of constant lanes between an integer truncation and
        // zero that a truncating store writes (AVX-512's vpmovqb): store(select(<1,1,0,0>, trunc x,
        // 0)) stored every lane of trunc x (FuzzDiff, CPU seed 5006627: a padded int8 cast of
        // uint64s). The select on the wide value, truncated after, is the same and compiles right.
        const UOp* cast = u->src(1);
        if (d.lanes > 1 && d.is_int() && cast->op == Op::Cast && cast->src(0)->dtype.is_int() &&
            int_bits(cast->src(0)->dtype) > int_bits(d) && is_zero_value(u->src(2))) {
          const DType wide = cast->src(0)->dtype;
          const std::string wt = reg_type(wide);
          const std::string sel = emit(str("select ", reg_type(u->src(0)->dtype), " ", a(0), ", ", wt, " ",
                                           v(cast->src(0)), ", ", wt, " ", splat(wide, "0")));
          return emit(str("trunc ", wt, " ", sel, " to ", t));
        }
        return emit(str("select ", reg_type(u->src(0)->dtype), " ", a(0), ", ", t, " ", a(1), ", ", t, " ", a(2)));
      }
      case Op::Not: {
        std::string bt = reg_type(dtypes::bool_.vec(d.lanes));
        if (d.is_bool()) return emit(str("xor ", t, " ", a(0), ", ", splat(d, "true")));
        return emit(str("zext ", bt, " ", emit(str("icmp eq ", t, " ", a(0), ", ", splat(d, "0"))), " to ", t));
      }
      case Op::Trunc:
        if (!fl) return a(0);
        return fcall("trunc", 1);
      case Op::Sqrt:
        return fcall("sqrt", 1);
      case Op::Exp2:
        return libm(u, d, "exp2", 1, [&] { return fcall("exp2", 1); });
      case Op::Log2:
        return libm(u, d, "log2", 1, [&] { return fcall("log2", 1); });
      case Op::Sin:
        return libm(u, d, "sin", 1, [&] { return fcall("sin", 1); });
      case Op::Pow:
        return libm(u, d, "pow", 2, [&] { return fcall("pow", 2); });
      default:
        fail(Code::Unsupported, "llvm: cannot render ", op_name(op), " on ", d.name());
    }
  }

  // exp2/log2/sin/pow through libmvec's 16-wide (AVX-512) or 8-wide (AVX2) functions, for vectors
  // and scalars alike; without libmvec, the LLVM intrinsic (libm).
  template <class F>
  std::string libm(const UOp* u, DType d, const char* base, int nargs, F fallback) {
    const std::string& vm = k_.target.vector_math;
    bool f32 = d.scalar == Scalar::Float32;
    if (vm.empty() || !(f32 || d.scalar == Scalar::Float64)) return fallback();
    bool avx512 = vm == "libmvec-avx512";
    int vf = (avx512 ? 512 : 256) / (f32 ? 32 : 64);
    std::string name = str(base, f32 ? "f" : "");
    std::string st = scalar_type(d.scalar);
    std::string params = nargs == 2 ? "vv" : "v";
    std::string vname = str("_ZGV", avx512 ? "e" : "d", "N", vf, params, "_", name);
    std::string vt = str("<", vf, " x ", st, ">");
    std::string vtypes = nargs == 2 ? str(vt, ", ", vt) : vt;
    decls_.insert(str("declare ", vt, " @", vname, "(", vtypes, ") #2"));
    uses_pure_ = true;
    std::string t = reg_type(d);
    std::string args = str(t, " ", v(u->src(0)));
    if (nargs == 2) args += str(", ", t, " ", v(u->src(1)));
    if (d.lanes == vf) return emit(str("call ", vt, " @", vname, "(", args, ")"));  // already a vector
    if (d.lanes > 1) {
      // Other widths (LLVM would scalarize its intrinsic into libm calls): pad to whole vf-wide
      // chunks, call the vector variant on each, and gather the lanes back.
      int chunks = (d.lanes + vf - 1) / vf;
      auto mask = [](int from, int n, int limit) {  // lanes from..from+n-1, poison past limit
        std::string m = str("<", n, " x i32> <");
        for (int i = 0; i < n; i++)
          m += str(i ? ", " : "", "i32 ", from + i < limit ? std::to_string(from + i) : "poison");
        return m + ">";
      };
      std::string t = reg_type(d);
      std::vector<std::string> parts;
      for (int c = 0; c < chunks; c++) {
        auto piece = [&](const UOp* x) {
          return emit(str("shufflevector ", t, " ", v(x), ", ", t, " poison, ", mask(c * vf, vf, d.lanes)));
        };
        std::string a0 = piece(u->src(0));
        std::string cargs = str(vt, " ", a0);
        if (nargs == 2) cargs += str(", ", vt, " ", piece(u->src(1)));
        parts.push_back(emit(str("call ", vt, " @", vname, "(", cargs, ")")));
      }
      // Concatenate pairwise up to chunks * vf lanes, then keep the first d.lanes.
      int width = vf;
      while (parts.size() > 1) {
        std::vector<std::string> next;
        std::string pt = str("<", width, " x ", st, ">");
        for (size_t i = 0; i + 1 < parts.size(); i += 2)
          next.push_back(emit(str("shufflevector ", pt, " ", parts[i], ", ", pt, " ", parts[i + 1], ", ",
                                  mask(0, 2 * width, 2 * width))));
        if (parts.size() % 2) {  // an odd chunk out: widen it with poison lanes
          next.push_back(
              emit(str("shufflevector ", pt, " ", parts.back(), ", ", pt, " poison, ", mask(0, 2 * width, width))));
        }
        parts.swap(next);
        width *= 2;
      }
      if (width == d.lanes) return parts[0];
      std::string pt = str("<", width, " x ", st, ">");
      return emit(str("shufflevector ", pt, " ", parts[0], ", ", pt, " poison, ", mask(0, d.lanes, d.lanes)));
    }
    // A scalar goes through the vector variant too (splat, call, lane 0): libm and libmvec round
    // differently, and one value must have the same bits wherever it is computed, or a mask that
    // compares a recomputed value with its reduced max (argmax, the gradient of max) misses it.
    std::string one = emit(str("insertelement ", vt, " poison, ", st, " ", v(u->src(0)), ", i64 0"));
    std::string splat0 =
        emit(str("shufflevector ", vt, " ", one, ", ", vt, " poison, <", vf, " x i32> zeroinitializer"));
    std::string cargs = str(vt, " ", splat0);
    if (nargs == 2) {
      std::string one1 = emit(str("insertelement ", vt, " poison, ", st, " ", v(u->src(1)), ", i64 0"));
      cargs += str(", ", vt, " ",
                   emit(str("shufflevector ", vt, " ", one1, ", ", vt, " poison, <", vf, " x i32> zeroinitializer")));
    }
    std::string r = emit(str("call ", vt, " @", vname, "(", cargs, ")"));
    return emit(str("extractelement ", vt, " ", r, ", i64 0"));
  }

  // C-truncating division and remainder that never trap: x/0 gives x, x%0 gives 0, and
  // INT_MIN/-1 wraps.
  std::string divmod(const UOp* u, DType d) {
    bool div = u->op == Op::CDiv;
    std::string t = reg_type(d), bt = reg_type(dtypes::bool_.vec(d.lanes));
    const UOp *A = u->src(0), *B = u->src(1);
    std::string a = v(A), b = v(B);
    bool sg = signed_int(d);
    const MinMax &ma = A->minmax(), &mb = B->minmax();
    // Both operands non-negative: the unsigned ops are cheaper and give the same result.
    bool unsigned_ok = !sg || ma.lo >= 0;
    const char* op = unsigned_ok && (!sg || mb.lo >= 1) ? (div ? "udiv" : "urem") : (div ? "sdiv" : "srem");
    if (mb.lo >= 1) return emit(str(op, " ", t, " ", a, ", ", b));
    std::string zero = splat(d, "0");
    if (mb.lo == mb.hi) {  // a constant divisor (scalar or splat)
      if (mb.lo == 0) return div ? a : zero;
      if (sg && mb.lo == -1) return div ? emit(str("sub ", t, " ", zero, ", ", a)) : zero;
      return emit(str(op, " ", t, " ", a, ", ", b));
    }
    std::string is0 = emit(str("icmp eq ", t, " ", b, ", ", zero));
    std::string bad = is0, m1;
    if (sg) {
      m1 = emit(str("icmp eq ", t, " ", b, ", ", splat(d, "-1")));
      bad = emit(str("or ", bt, " ", is0, ", ", m1));
    }
    std::string safe = emit(str("select ", bt, " ", bad, ", ", t, " ", splat(d, "1"), ", ", t, " ", b));
    std::string r = emit(str(op, " ", t, " ", a, ", ", safe));
    if (div && sg) {
      std::string neg = emit(str("sub ", t, " ", zero, ", ", a));
      r = emit(str("select ", bt, " ", m1, ", ", t, " ", neg, ", ", t, " ", r));
    }
    return r;
  }

  // Shifts by at least the bit width: << gives 0, >> gives 0 or -1 (sign fill).
  std::string shift(const UOp* u, DType d) {
    std::string t = reg_type(d), bt = reg_type(dtypes::bool_.vec(d.lanes));
    const UOp* B = u->src(1);
    std::string a = v(u->src(0)), b = v(B);
    int bits = d.bits();
    bool shl = u->op == Op::Shl;
    const char* op = shl ? "shl" : signed_int(d) ? "ashr" : "lshr";
    const MinMax& mb = B->minmax();
    if (mb.lo >= 0 && mb.hi < bits) return emit(str(op, " ", t, " ", a, ", ", b));
    std::string big = emit(str("icmp uge ", t, " ", b, ", ", splat(d, std::to_string(bits))));
    if (!shl && signed_int(d)) {
      std::string amt =
          emit(str("select ", bt, " ", big, ", ", t, " ", splat(d, std::to_string(bits - 1)), ", ", t, " ", b));
      return emit(str("ashr ", t, " ", a, ", ", amt));
    }
    std::string sh = emit(str(op, " ", t, " ", a, ", ", b));
    return emit(str("select ", bt, " ", big, ", ", t, " ", splat(d, "0"), ", ", t, " ", sh));
  }

  const LoweredKernel& k_;
  std::string sym_;
  LlvmDialect dialect_;
  std::string body_, allocas_;
  // Streaming stores: whether the kernel may have them, where each one's ", align N" sits in body_
  // (the second body writes it non-temporally) and the alignment each such buffer needs (slot ->
  // bytes).
  struct StreamingStore {
    size_t at, len;
    int64_t bytes;
  };
  bool streaming_ = false;
  bool few_iterations_ = false;  // the loop vectorizer is off in every loop (see render)
  std::vector<StreamingStore> nt_stores_;
  std::map<int64_t, int64_t> nt_align_;
  std::vector<std::string> globals_;  // module-level definitions (GPU local memory)
  int64_t zero_bytes_ = 0;            // size of the zeros a gated scalar load reads where its gate is off (CPU)
  std::set<std::string> decls_;
  std::unordered_map<const UOp*, std::string> val_;
  std::unordered_set<const UOp*> deferred_;  // Index nodes rendered at their first use (v)
  // Pure instructions emitted where they dominate this point (emit), oldest first: a chained hash
  // table whose chains run from the newest entry, so that a closing region drops its own from the end.
  struct Emitted {
    uint64_t hash;
    uint32_t at, len;  // the text in body_ (which only grows)
    uint32_t name;     // %t<name>
    uint32_t next;     // 1 + index of the next entry of the chain, 0: none
  };
  std::vector<Emitted> emitted_;
  std::vector<uint32_t> buckets_;  // hash -> 1 + index of its chain's newest entry, 0: none
  std::vector<Region> regions_;    // the regions open at this point, innermost last
  std::unordered_map<std::string, size_t> var_index_;
  std::unordered_map<const UOp*, Loop> loops_;
  std::vector<const UOp*> open_ranges_;                           // the loops open at this point, innermost last
  std::unordered_map<const UOp*, std::vector<int64_t>> strides_;  // find_strides: range -> its terms' strides
  std::map<std::pair<const UOp*, const UOp*>, bool> moves_;       // moves_with(term, range), memoized
  std::unordered_map<const UOp*, int> ifs_;                       // open If -> its label number
  std::vector<const UOp*> open_gates_;                            // the conditions of the open Ifs, innermost last
  std::string block_ = "entry";
  int ntmp_ = 0, nlabel_ = 0, nacc_ = 0;
  std::vector<std::string> tile_loops_;          // loop metadata
  bool alias_scopes_ = false;                    // buffer accesses carry alias-scope metadata (CPU, 2+ buffers)
  int64_t loop_metadata_ = 0;                    // the first id of the loops' metadata
  bool uses_pure_ = false;                       // attribute group #2 is used
  std::unordered_set<const UOp*> unread_lanes_;  // Geps that only concatenations read (never rendered)
  std::unordered_map<const UOp*, std::vector<const UOp*>> concats_;  // a concatenation -> the vectors it joins
  struct Tile {
    std::vector<const UOp*> rows;
    std::vector<std::string> out;  // its columns, once transposed
  };
  std::vector<Tile> tiles_;
  std::unordered_map<const UOp*, std::pair<size_t, int64_t>> columns_;  // a tile's column -> (tile, column)
};

}  // namespace

std::string render_llvm_ir(const LoweredKernel& k, const std::string& symbol, LlvmDialect dialect) {
  if (!k.linear || k.linear->op != Op::Linear) fail(Code::InvalidArg, "render_llvm_ir: the kernel has no Linear");
  return IrWriter(k, symbol, dialect).render();
}

}  // namespace sn
