// Errors LLVM finds while it optimizes or generates code (an inline asm operand it cannot allocate
// a register for, say) go to its context's diagnostic handler; without one, LLVM prints them and
// exits the process. LlvmErrors installs a handler that keeps them for the scope of one compile,
// and check() throws them as Error(Compile): a library must not end its caller's process.
#pragma once
#include <string>
#include <string_view>

#include "core/util/error.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>
#pragma GCC diagnostic pop

namespace sn::llvmir {

class LlvmErrors {
 public:
  explicit LlvmErrors(llvm::LLVMContext& ctx) : ctx_(ctx) { ctx_.setDiagnosticHandlerCallBack(&LlvmErrors::on, this); }
  ~LlvmErrors() { ctx_.setDiagnosticHandlerCallBack(nullptr); }
  LlvmErrors(const LlvmErrors&) = delete;
  LlvmErrors& operator=(const LlvmErrors&) = delete;

  // Throws Error(Compile) naming `what` with the errors reported so far.
  void check(std::string_view what) const {
    if (!errors_.empty()) fail(Code::Compile, "llvm: ", what, ": ", errors_);
  }

 private:
  // Errors are kept; warnings and remarks are dropped (they went to stderr before).
  static void on(const llvm::DiagnosticInfo* di, void* self) {
    if (di->getSeverity() != llvm::DS_Error) return;
    std::string& out = static_cast<LlvmErrors*>(self)->errors_;
    if (!out.empty()) out += "; ";
    llvm::raw_string_ostream os(out);
    llvm::DiagnosticPrinterRawOStream printer(os);
    di->print(printer);
    os.flush();
  }

  llvm::LLVMContext& ctx_;
  std::string errors_;
};

}  // namespace sn::llvmir
