// The append-only function table for dlopen hosts, and compile-time checks that its layout (and
// sn_arg's) never moves.
#include <cstddef>

#include "capi/src/capi_internal.h"
#include "sinter/sinter_dlpack.h"

namespace {

// Each entry points at the exported function of the same name (designated initializers keep the
// order honest: a field listed out of order does not compile).
constexpr sn_api kApi = {
    .struct_size = sizeof(sn_api),
    .api_version = SN_API_VERSION,
    .version_string = sn_version_string,
    .version_number = sn_version_number,
    .error_code = sn_error_code,
    .error_message = sn_error_message,
    .error_free = sn_error_free,
    .last_error_code = sn_last_error_code,
    .last_error_message = sn_last_error_message,
    .clear_last_error = sn_clear_last_error,
    .string_free = sn_string_free,
    .dtype_name = sn_dtype_name,
    .op_name = sn_op_name,
    .axis_type_name = sn_axis_type_name,
    .addrspace_name = sn_addrspace_name,
    .context_create = sn_context_create,
    .context_retain = sn_context_retain,
    .context_release = sn_context_release,
    .graph_create = sn_graph_create,
    .graph_retain = sn_graph_retain,
    .graph_release = sn_graph_release,
    .graph_node_count = sn_graph_node_count,
    .arg_init = sn_arg_init,
    .uop_new = sn_uop_new,
    .uop_const_int = sn_uop_const_int,
    .uop_const_float = sn_uop_const_float,
    .uop_var = sn_uop_var,
    .uop_buffer = sn_uop_buffer,
    .uop_param = sn_uop_param,
    .uop_alu = sn_uop_alu,
    .uop_unary = sn_uop_unary,
    .uop_binary = sn_uop_binary,
    .uop_ternary = sn_uop_ternary,
    .uop_cast = sn_uop_cast,
    .uop_bitcast = sn_uop_bitcast,
    .uop_reshape = sn_uop_reshape,
    .uop_expand = sn_uop_expand,
    .uop_pad = sn_uop_pad,
    .uop_shrink = sn_uop_shrink,
    .uop_permute = sn_uop_permute,
    .uop_flip = sn_uop_flip,
    .uop_reduce = sn_uop_reduce,
    .uop_contiguous = sn_uop_contiguous,
    .uop_sink = sn_uop_sink,
    .uop_op = sn_uop_op,
    .uop_dtype = sn_uop_dtype,
    .uop_lanes = sn_uop_lanes,
    .uop_is_pointer = sn_uop_is_pointer,
    .uop_pointer_addrspace = sn_uop_pointer_addrspace,
    .uop_num_srcs = sn_uop_num_srcs,
    .uop_src = sn_uop_src,
    .uop_arg = sn_uop_arg,
    .uop_rank = sn_uop_rank,
    .uop_dim = sn_uop_dim,
    .uop_device = sn_uop_device,
    .uop_axis = sn_uop_axis,
    .uop_min_max_int = sn_uop_min_max_int,
    .uop_min_max_float = sn_uop_min_max_float,
    .uop_to_string = sn_uop_to_string,
    .uop_to_tree = sn_uop_to_tree,
    .uop_to_dot = sn_uop_to_dot,
    .graph_simplify = sn_graph_simplify,
    .graph_simplify_given = sn_graph_simplify_given,
    // ---- version 2 ----
    .tensor_input = sn_tensor_input,
    .tensor_gemm = sn_tensor_gemm,
    .tensor_matmul = sn_tensor_matmul,
    .tensor_conv2d = sn_tensor_conv2d,
    .tensor_max_pool2d = sn_tensor_max_pool2d,
    .tensor_avg_pool2d = sn_tensor_avg_pool2d,
    .tensor_softmax = sn_tensor_softmax,
    .tensor_log_softmax = sn_tensor_log_softmax,
    .tensor_layernorm = sn_tensor_layernorm,
    .tensor_relu = sn_tensor_relu,
    .tensor_gelu = sn_tensor_gelu,
    .tensor_sigmoid = sn_tensor_sigmoid,
    .tensor_tanh = sn_tensor_tanh,
    .tensor_exp = sn_tensor_exp,
    .tensor_log = sn_tensor_log,
    .tensor_cumsum = sn_tensor_cumsum,
    .tensor_argmax = sn_tensor_argmax,
    .tensor_cat = sn_tensor_cat,
    .tensor_stack = sn_tensor_stack,
    .tensor_one_hot = sn_tensor_one_hot,
    .tensor_arange = sn_tensor_arange,
    .tensor_gather = sn_tensor_gather,
    .tensor_scatter_add = sn_tensor_scatter_add,
    .tensor_rand = sn_tensor_rand,
    .tensor_randn = sn_tensor_randn,
    .device_open = sn_device_open,
    .device_retain = sn_device_retain,
    .device_release = sn_device_release,
    .device_name = sn_device_name,
    .context_set_debug = sn_context_set_debug,
    .context_debug = sn_context_debug,
    .compile_options_init = sn_compile_options_init,
    .compile = sn_compile,
    .program_retain = sn_program_retain,
    .program_release = sn_program_release,
    .buffer_alloc = sn_buffer_alloc,
    .buffer_retain = sn_buffer_retain,
    .buffer_release = sn_buffer_release,
    .buffer_view = sn_buffer_view,
    .buffer_copy_in = sn_buffer_copy_in,
    .buffer_copy_out = sn_buffer_copy_out,
    .buffer_dtype = sn_buffer_dtype,
    .buffer_rank = sn_buffer_rank,
    .buffer_dim = sn_buffer_dim,
    .buffer_numel = sn_buffer_numel,
    .buffer_nbytes = sn_buffer_nbytes,
    .buffer_device = sn_buffer_device,
    .buffer_host_pointer = sn_buffer_host_pointer,
    .program_run = sn_program_run,
    .program_alloc_output = sn_program_alloc_output,
    .program_num_inputs = sn_program_num_inputs,
    .program_num_outputs = sn_program_num_outputs,
    .program_input_info = sn_program_input_info,
    .program_output_info = sn_program_output_info,
    .program_num_kernels = sn_program_num_kernels,
    .program_kernel_name = sn_program_kernel_name,
    .program_kernel_source = sn_program_kernel_source,
    .program_stage = sn_program_stage,
    .program_arena_bytes = sn_program_arena_bytes,
    .buffer_to_dlpack = sn_buffer_to_dlpack,
    .buffer_from_dlpack = sn_buffer_from_dlpack,
    .program_num_vars = sn_program_num_vars,
    .program_var_info = sn_program_var_info,
    .program_run_vars = sn_program_run_vars,
    // ---- version 4 ----
    .device_count = sn_device_count,
    .device_description = sn_device_description,
    .buffer_copy = sn_buffer_copy,
    .program_export_c = sn_program_export_c,
    .tensor_gradient = sn_tensor_gradient,
    .tensor_detach = sn_tensor_detach,
    .tensor_assign = sn_tensor_assign,
    .function_begin = sn_function_begin,
    .function_param = sn_function_param,
    .function_end = sn_function_end,
    .function_set_flags = sn_function_set_flags,
    .function_call = sn_function_call,
    .tensor_index = sn_tensor_index,
    .tensor_slice = sn_tensor_slice,
    .tensor_binary = sn_tensor_binary,
    // ---- version 6 ----
    .program_kernel_opts = sn_program_kernel_opts,
    .context_set_disk_cache = sn_context_set_disk_cache,
    // ---- version 7 ----
    .tensor_input_sym = sn_tensor_input_sym,
    .program_alloc_output_vars = sn_program_alloc_output_vars,
    // ---- version 8 ----
    .tensor_reshape_sym = sn_tensor_reshape_sym,
    .tensor_expand_sym = sn_tensor_expand_sym,
    .device_open_target = sn_device_open_target,
    .program_kernel_binary = sn_program_kernel_binary,
    .tensor_shard = sn_tensor_shard,
    .tensor_to = sn_tensor_to,
    .tensor_broadcast = sn_tensor_broadcast,
    .tensor_scatter = sn_tensor_scatter,
    .tensor_gather_devices = sn_tensor_gather_devices,
    .tensor_reduce_devices = sn_tensor_reduce_devices,
    .tensor_allgather = sn_tensor_allgather,
    .tensor_reduce_scatter = sn_tensor_reduce_scatter,
    .tensor_allreduce = sn_tensor_allreduce,
};

// Entry k of version 1 sits at a fixed offset forever: two uint32_t, then one pointer per entry.
// Inserting, removing or reordering an entry breaks the build here; appending does not.
constexpr size_t kHead = 2 * sizeof(uint32_t);
#define SN_CHECK_ENTRY(name, index) \
  static_assert(offsetof(sn_api, name) == kHead + (index) * sizeof(void (*)(void)), "sn_api." #name " moved")
SN_CHECK_ENTRY(version_string, 0);
SN_CHECK_ENTRY(version_number, 1);
SN_CHECK_ENTRY(error_code, 2);
SN_CHECK_ENTRY(error_message, 3);
SN_CHECK_ENTRY(error_free, 4);
SN_CHECK_ENTRY(last_error_code, 5);
SN_CHECK_ENTRY(last_error_message, 6);
SN_CHECK_ENTRY(clear_last_error, 7);
SN_CHECK_ENTRY(string_free, 8);
SN_CHECK_ENTRY(dtype_name, 9);
SN_CHECK_ENTRY(op_name, 10);
SN_CHECK_ENTRY(axis_type_name, 11);
SN_CHECK_ENTRY(addrspace_name, 12);
SN_CHECK_ENTRY(context_create, 13);
SN_CHECK_ENTRY(context_retain, 14);
SN_CHECK_ENTRY(context_release, 15);
SN_CHECK_ENTRY(graph_create, 16);
SN_CHECK_ENTRY(graph_retain, 17);
SN_CHECK_ENTRY(graph_release, 18);
SN_CHECK_ENTRY(graph_node_count, 19);
SN_CHECK_ENTRY(arg_init, 20);
SN_CHECK_ENTRY(uop_new, 21);
SN_CHECK_ENTRY(uop_const_int, 22);
SN_CHECK_ENTRY(uop_const_float, 23);
SN_CHECK_ENTRY(uop_var, 24);
SN_CHECK_ENTRY(uop_buffer, 25);
SN_CHECK_ENTRY(uop_param, 26);
SN_CHECK_ENTRY(uop_alu, 27);
SN_CHECK_ENTRY(uop_unary, 28);
SN_CHECK_ENTRY(uop_binary, 29);
SN_CHECK_ENTRY(uop_ternary, 30);
SN_CHECK_ENTRY(uop_cast, 31);
SN_CHECK_ENTRY(uop_bitcast, 32);
SN_CHECK_ENTRY(uop_reshape, 33);
SN_CHECK_ENTRY(uop_expand, 34);
SN_CHECK_ENTRY(uop_pad, 35);
SN_CHECK_ENTRY(uop_shrink, 36);
SN_CHECK_ENTRY(uop_permute, 37);
SN_CHECK_ENTRY(uop_flip, 38);
SN_CHECK_ENTRY(uop_reduce, 39);
SN_CHECK_ENTRY(uop_contiguous, 40);
SN_CHECK_ENTRY(uop_sink, 41);
SN_CHECK_ENTRY(uop_op, 42);
SN_CHECK_ENTRY(uop_dtype, 43);
SN_CHECK_ENTRY(uop_lanes, 44);
SN_CHECK_ENTRY(uop_is_pointer, 45);
SN_CHECK_ENTRY(uop_pointer_addrspace, 46);
SN_CHECK_ENTRY(uop_num_srcs, 47);
SN_CHECK_ENTRY(uop_src, 48);
SN_CHECK_ENTRY(uop_arg, 49);
SN_CHECK_ENTRY(uop_rank, 50);
SN_CHECK_ENTRY(uop_dim, 51);
SN_CHECK_ENTRY(uop_device, 52);
SN_CHECK_ENTRY(uop_axis, 53);
SN_CHECK_ENTRY(uop_min_max_int, 54);
SN_CHECK_ENTRY(uop_min_max_float, 55);
SN_CHECK_ENTRY(uop_to_string, 56);
SN_CHECK_ENTRY(uop_to_tree, 57);
SN_CHECK_ENTRY(uop_to_dot, 58);
SN_CHECK_ENTRY(graph_simplify, 59);
SN_CHECK_ENTRY(graph_simplify_given, 60);
// version 2
SN_CHECK_ENTRY(tensor_input, 61);
SN_CHECK_ENTRY(tensor_gemm, 62);
SN_CHECK_ENTRY(tensor_matmul, 63);
SN_CHECK_ENTRY(tensor_conv2d, 64);
SN_CHECK_ENTRY(tensor_max_pool2d, 65);
SN_CHECK_ENTRY(tensor_avg_pool2d, 66);
SN_CHECK_ENTRY(tensor_softmax, 67);
SN_CHECK_ENTRY(tensor_log_softmax, 68);
SN_CHECK_ENTRY(tensor_layernorm, 69);
SN_CHECK_ENTRY(tensor_relu, 70);
SN_CHECK_ENTRY(tensor_gelu, 71);
SN_CHECK_ENTRY(tensor_sigmoid, 72);
SN_CHECK_ENTRY(tensor_tanh, 73);
SN_CHECK_ENTRY(tensor_exp, 74);
SN_CHECK_ENTRY(tensor_log, 75);
SN_CHECK_ENTRY(tensor_cumsum, 76);
SN_CHECK_ENTRY(tensor_argmax, 77);
SN_CHECK_ENTRY(tensor_cat, 78);
SN_CHECK_ENTRY(tensor_stack, 79);
SN_CHECK_ENTRY(tensor_one_hot, 80);
SN_CHECK_ENTRY(tensor_arange, 81);
SN_CHECK_ENTRY(tensor_gather, 82);
SN_CHECK_ENTRY(tensor_scatter_add, 83);
SN_CHECK_ENTRY(tensor_rand, 84);
SN_CHECK_ENTRY(tensor_randn, 85);
SN_CHECK_ENTRY(device_open, 86);
SN_CHECK_ENTRY(device_retain, 87);
SN_CHECK_ENTRY(device_release, 88);
SN_CHECK_ENTRY(device_name, 89);
SN_CHECK_ENTRY(context_set_debug, 90);
SN_CHECK_ENTRY(context_debug, 91);
SN_CHECK_ENTRY(compile_options_init, 92);
SN_CHECK_ENTRY(compile, 93);
SN_CHECK_ENTRY(program_retain, 94);
SN_CHECK_ENTRY(program_release, 95);
SN_CHECK_ENTRY(buffer_alloc, 96);
SN_CHECK_ENTRY(buffer_retain, 97);
SN_CHECK_ENTRY(buffer_release, 98);
SN_CHECK_ENTRY(buffer_view, 99);
SN_CHECK_ENTRY(buffer_copy_in, 100);
SN_CHECK_ENTRY(buffer_copy_out, 101);
SN_CHECK_ENTRY(buffer_dtype, 102);
SN_CHECK_ENTRY(buffer_rank, 103);
SN_CHECK_ENTRY(buffer_dim, 104);
SN_CHECK_ENTRY(buffer_numel, 105);
SN_CHECK_ENTRY(buffer_nbytes, 106);
SN_CHECK_ENTRY(buffer_device, 107);
SN_CHECK_ENTRY(buffer_host_pointer, 108);
SN_CHECK_ENTRY(program_run, 109);
SN_CHECK_ENTRY(program_alloc_output, 110);
SN_CHECK_ENTRY(program_num_inputs, 111);
SN_CHECK_ENTRY(program_num_outputs, 112);
SN_CHECK_ENTRY(program_input_info, 113);
SN_CHECK_ENTRY(program_output_info, 114);
SN_CHECK_ENTRY(program_num_kernels, 115);
SN_CHECK_ENTRY(program_kernel_name, 116);
SN_CHECK_ENTRY(program_kernel_source, 117);
SN_CHECK_ENTRY(program_stage, 118);
SN_CHECK_ENTRY(program_arena_bytes, 119);
SN_CHECK_ENTRY(buffer_to_dlpack, 120);
SN_CHECK_ENTRY(buffer_from_dlpack, 121);
SN_CHECK_ENTRY(program_num_vars, 122);
SN_CHECK_ENTRY(program_var_info, 123);
SN_CHECK_ENTRY(program_run_vars, 124);
// version 4
SN_CHECK_ENTRY(device_count, 125);
SN_CHECK_ENTRY(device_description, 126);
SN_CHECK_ENTRY(buffer_copy, 127);
SN_CHECK_ENTRY(program_export_c, 128);
// version 5
SN_CHECK_ENTRY(tensor_gradient, 129);
SN_CHECK_ENTRY(tensor_detach, 130);
SN_CHECK_ENTRY(tensor_assign, 131);
SN_CHECK_ENTRY(function_begin, 132);
SN_CHECK_ENTRY(function_param, 133);
SN_CHECK_ENTRY(function_end, 134);
SN_CHECK_ENTRY(function_set_flags, 135);
SN_CHECK_ENTRY(function_call, 136);
SN_CHECK_ENTRY(tensor_index, 137);
SN_CHECK_ENTRY(tensor_slice, 138);
SN_CHECK_ENTRY(tensor_binary, 139);
SN_CHECK_ENTRY(program_kernel_opts, 140);
SN_CHECK_ENTRY(context_set_disk_cache, 141);
SN_CHECK_ENTRY(tensor_input_sym, 142);
SN_CHECK_ENTRY(program_alloc_output_vars, 143);
// version 8
SN_CHECK_ENTRY(tensor_reshape_sym, 144);
SN_CHECK_ENTRY(tensor_expand_sym, 145);
SN_CHECK_ENTRY(device_open_target, 146);
SN_CHECK_ENTRY(program_kernel_binary, 147);
SN_CHECK_ENTRY(tensor_shard, 148);
SN_CHECK_ENTRY(tensor_to, 149);
SN_CHECK_ENTRY(tensor_broadcast, 150);
SN_CHECK_ENTRY(tensor_scatter, 151);
SN_CHECK_ENTRY(tensor_gather_devices, 152);
SN_CHECK_ENTRY(tensor_reduce_devices, 153);
SN_CHECK_ENTRY(tensor_allgather, 154);
SN_CHECK_ENTRY(tensor_reduce_scatter, 155);
SN_CHECK_ENTRY(tensor_allreduce, 156);
#undef SN_CHECK_ENTRY
constexpr size_t kApiEntriesV1 = 61;
static_assert(sizeof(sn_api) >= kHead + kApiEntriesV1 * sizeof(void (*)(void)));
constexpr size_t kApiEntriesV2 = kApiEntriesV1 + 61;
constexpr size_t kApiEntriesV3 = kApiEntriesV2 + 3;
constexpr size_t kApiEntriesV4 = kApiEntriesV3 + 4;
constexpr size_t kApiEntriesV5 = kApiEntriesV4 + 11;
constexpr size_t kApiEntriesV6 = kApiEntriesV5 + 2;
constexpr size_t kApiEntriesV7 = kApiEntriesV6 + 2;
constexpr size_t kApiEntriesV8 = kApiEntriesV7 + 13;
static_assert(sizeof(sn_api) == kHead + kApiEntriesV8 * sizeof(void (*)(void)),
              "sn_api has entries the checks above do not pin");

// sn_arg is read up to the caller's struct_size, so its version-1 fields must stay where they are.
#if defined(__LP64__)
static_assert(offsetof(sn_arg, struct_size) == 0 && offsetof(sn_arg, kind) == 4 && offsetof(sn_arg, int_value) == 8 &&
                  offsetof(sn_arg, float_value) == 16 && offsetof(sn_arg, ints) == 24 &&
                  offsetof(sn_arg, nints) == 32 && offsetof(sn_arg, dtype) == 40 && offsetof(sn_arg, reduce_op) == 44 &&
                  offsetof(sn_arg, str) == 48 && offsetof(sn_arg, str_len) == 56 && offsetof(sn_arg, id) == 64 &&
                  offsetof(sn_arg, axis_type) == 72 && offsetof(sn_arg, addrspace) == 76 &&
                  offsetof(sn_arg, size) == 80 && offsetof(sn_arg, device) == 88 && offsetof(sn_arg, min) == 96 &&
                  offsetof(sn_arg, max) == 104,
              "sn_arg version-1 layout moved");
static_assert(sn::capi::kArgSizeV1 == 112, "sizeof(sn_arg) of version 1 is 112 on LP64");
// sn_compile_options (API version 2) is read up to the caller's struct_size as well.
static_assert(offsetof(sn_compile_options, struct_size) == 0 && offsetof(sn_compile_options, debug) == 4 &&
                  offsetof(sn_compile_options, optimize) == 8 && offsetof(sn_compile_options, threads) == 12 &&
                  offsetof(sn_compile_options, keep_stages) == 16 && offsetof(sn_compile_options, use_cache) == 20 &&
                  offsetof(sn_compile_options, inputs) == 24 && offsetof(sn_compile_options, ninputs) == 32 &&
                  offsetof(sn_compile_options, effects) == 40 && offsetof(sn_compile_options, neffects) == 48 &&
                  offsetof(sn_compile_options, beam) == 56 && offsetof(sn_compile_options, kernel_opts) == 64 &&
                  offsetof(sn_compile_options, nkernel_opts) == 72 && sizeof(sn_compile_options) == 80,
              "sn_compile_options layout moved (version 2 up to ninputs, version 5 effects, version 6 beam)");
// The DLPack structs must stay binary-identical to DLPack 1.x's DLTensor / DLManagedTensorVersioned.
static_assert(sizeof(sn_dlpack_dl_tensor) == 48 && offsetof(sn_dlpack_dl_tensor, device) == 8 &&
                  offsetof(sn_dlpack_dl_tensor, ndim) == 16 && offsetof(sn_dlpack_dl_tensor, dtype) == 20 &&
                  offsetof(sn_dlpack_dl_tensor, shape) == 24 && offsetof(sn_dlpack_dl_tensor, strides) == 32 &&
                  offsetof(sn_dlpack_dl_tensor, byte_offset) == 40,
              "sn_dlpack_dl_tensor is not DLTensor's layout");
static_assert(sizeof(sn_dlpack_tensor) == 80 && offsetof(sn_dlpack_tensor, manager_ctx) == 8 &&
                  offsetof(sn_dlpack_tensor, deleter) == 16 && offsetof(sn_dlpack_tensor, flags) == 24 &&
                  offsetof(sn_dlpack_tensor, dl_tensor) == 32,
              "sn_dlpack_tensor is not DLManagedTensorVersioned's layout");
#endif

}  // namespace

const sn_api* sn_get_api(uint32_t api_version) {
  // Version 0 never existed; a newer version than ours means the caller needs entries we lack.
  if (api_version == 0 || api_version > SN_API_VERSION) return nullptr;
  return &kApi;
}
