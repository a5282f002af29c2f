/* sinter.h - the public C API of Sinter, an embeddable tensor compiler built on tinygrad's UOp dialect.
 *
 * This one header is the whole interface of libsinter.so. It is plain C89 (also valid C99/C11 and
 * C++), so every language with a C FFI can bind it.
 *
 * ---- Conventions ------------------------------------------------------------------------------
 *
 * Handles. Every object is an opaque pointer (`sn_context *`, `sn_graph *`, ...).
 *   - Owned handles (sn_context, sn_graph) are reference counted. `_create` returns a handle with
 *     one reference; `_retain` adds one and returns its argument; `_release` drops one. Release is
 *     NULL-safe. A child keeps its parent alive (a graph retains its context), so handles may be
 *     released in any order. The caller's references and the children's are counted apart: a
 *     release beyond the references the caller holds (made + retained) is ignored and recorded as
 *     the last error (SN_E_INVALID_ARG), so it can never free a parent under its children.
 *   - sn_uop is BORROWED: it belongs to the graph that made it and is valid while that graph lives.
 *     Never release a uop. UOps are immutable and hash-consed: building the same node twice in one
 *     graph returns the same pointer, so pointer equality is structural equality.
 *   - Handles are validated against a registry of live handles: a released, foreign or random
 *     pointer is reported as SN_E_INVALID_ARG and never dereferenced. Releasing or freeing one
 *     (a second sn_error_free or sn_string_free included) does nothing but set the last error.
 *     (A released handle whose address a newer handle of the same kind reuses cannot be told apart
 *     from it.)
 *
 * Errors. Every call that can fail takes a trailing `sn_error **err`.
 *   - On failure a handle-returning call returns NULL, a call returning sn_code returns the error's
 *     code (never SN_OK), and a query returns the sentinel its documentation names.
 *   - If `err` is not NULL, `*err` must be NULL or hold an earlier error. If it is NULL, it receives
 *     a new error that the caller owns and frees with sn_error_free. If it already holds an error,
 *     that first error is kept (the new one only becomes the last error below). On success `*err`
 *     is left untouched. So initialise it to NULL; a chain of calls may then share one `err` and be
 *     checked once at the end: a call given a NULL handle from a failed earlier call fails too, and
 *     `*err` names the root cause.
 *   - Independently of `err`, every failing call also records its code and message as the calling
 *     thread's "last error" (sn_last_error_code / sn_last_error_message). Successful calls do NOT
 *     clear it; call sn_clear_last_error to reset it. Decide success by the return value, never by
 *     the last error alone.
 *   - Messages name the function, the parameter or rule that failed and the offending values, e.g.
 *     "sn_uop_reshape: Reshape: element count changes: (2,3) to (4,2)".
 *   - No C++ exception ever crosses this interface, and no input reaches an assert or abort.
 *
 * Strings. Input strings are NUL-terminated UTF-8 and copied when kept. Every `char *` this API
 * returns is owned by the caller and freed with sn_string_free (not free()). `const char *` results
 * are borrowed; their lifetime is documented per function.
 *
 * Extensible structs start with `uint32_t struct_size` (set it to sizeof the struct, or use the
 * struct's _init function). Fields are only ever appended; the library reads only the fields the
 * caller's struct_size covers. A struct_size smaller than the first released layout is an error.
 *
 * Enums have explicit values that never change; new values are only appended. An unknown value is
 * reported as SN_E_INVALID_ARG naming the value.
 *
 * Threads. sn_context is thread-safe, and calls on different graphs may run in parallel. Calls on
 * one graph and its uops must not overlap, with one exception: the structural queries (sn_uop_op,
 * _dtype, _lanes, _is_pointer, _pointer_addrspace, _num_srcs, _src, _arg, _rank, _dim) may run
 * concurrently with each other. Derived properties (min/max, device, axis), printing, simplifying
 * and building are computed lazily inside the graph and need one thread at a time. The last error is
 * per OS thread.
 */
#ifndef SINTER_SINTER_H
#define SINTER_SINTER_H

#include <stddef.h>
#include <stdint.h>

/* Symbol visibility: the library is built with hidden visibility and exports exactly what SN_API
   marks. Define SN_API / SN_NODISCARD before including this header to override (e.g. for FFI
   generators that do not understand GNU attributes). */
#ifndef SN_API
#if defined(_WIN32) && defined(SN_BUILDING_LIBRARY)
#define SN_API __declspec(dllexport)
#elif defined(_WIN32)
#define SN_API __declspec(dllimport)
#elif defined(__GNUC__)
#define SN_API __attribute__((visibility("default")))
#else
#define SN_API
#endif
#endif

#ifndef SN_NODISCARD
#if defined(__GNUC__)
#define SN_NODISCARD __attribute__((warn_unused_result))
#else
#define SN_NODISCARD
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Versions ================================================================================ */

/* Version of this header. Compare with sn_version_number() to detect a header/library mismatch. */
#define SN_VERSION_MAJOR 0
#define SN_VERSION_MINOR 1
#define SN_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define SN_VERSION_NUMBER (SN_VERSION_MAJOR * 10000 + SN_VERSION_MINOR * 100 + SN_VERSION_PATCH)
/* Version of the sn_api function table; bumped by every release that appends entries to it. */
#define SN_API_VERSION 8u

/* "0.1.0": the library's version (static string, never freed). */
SN_API const char *sn_version_string(void);
/* The library's SN_VERSION_NUMBER. */
SN_API uint32_t sn_version_number(void);

/* ==== Handles ================================================================================= */

typedef struct sn_error sn_error;     /* an error: code + message; owned by the caller */
typedef struct sn_context sn_context; /* library state shared by graphs (refcounted, thread-safe) */
typedef struct sn_graph sn_graph;     /* an arena of hash-consed UOps (refcounted, one writer) */
typedef struct sn_uop sn_uop;         /* a node of a graph (borrowed from its graph) */

/* ==== Errors ================================================================================== */

/* Error codes. The values are fixed. */
typedef enum sn_code {
  SN_OK = 0,
  SN_E_INVALID_ARG = 1,   /* bad handle, bad value, or a graph that breaks a rule of the spec */
  SN_E_UNSUPPORTED = 2,   /* valid, but not supported (yet) */
  SN_E_COMPILE = 3,       /* a kernel failed to compile */
  SN_E_DEVICE = 4,        /* a device failed or is not available */
  SN_E_OUT_OF_MEMORY = 5, /* host or device memory exhausted */
  SN_E_VERSION = 6,       /* version mismatch (API table, serialized data) */
  SN_E_NOT_FOUND = 7,     /* a named thing does not exist */
  SN_E_INTERNAL = 99      /* a bug in Sinter: please report it with the message */
} sn_code;

/* Code of an error (SN_OK for NULL; SN_E_INVALID_ARG, with the last error set, for an error that
   was freed or not made by this library). */
SN_API sn_code sn_error_code(const sn_error *error);
/* Message of an error ("" for NULL; a static message saying so for an error that was freed or not
   made by this library). Borrowed: valid until the error is freed. */
SN_API const char *sn_error_message(const sn_error *error);
/* Frees an error. NULL-safe. (An out-of-memory error is a static object that this ignores.) An
   error freed before, or not made by this library, is ignored (last error set). */
SN_API void sn_error_free(sn_error *error);

/* The calling thread's last error (see "Errors" above): SN_OK and "" when none was recorded since
   the thread started or since sn_clear_last_error. The message is borrowed and valid until the next
   failing call on this thread. */
SN_API sn_code sn_last_error_code(void);
SN_API const char *sn_last_error_message(void);
SN_API void sn_clear_last_error(void);

/* Frees a string returned by this API. NULL-safe; a string freed before, or not returned by this
   API, is ignored (last error set). */
SN_API void sn_string_free(char *s);

/* ==== Enums of the dialect ==================================================================== */

/* Scalar data types. SN_DTYPE_INVALID is never a valid input; queries return it on failure. */
typedef enum sn_dtype {
  SN_DTYPE_INVALID = 0,
  SN_DTYPE_BOOL = 1,
  SN_DTYPE_INT8 = 2,
  SN_DTYPE_INT16 = 3,
  SN_DTYPE_INT32 = 4,
  SN_DTYPE_INT64 = 5,
  SN_DTYPE_UINT8 = 6,
  SN_DTYPE_UINT16 = 7,
  SN_DTYPE_UINT32 = 8,
  SN_DTYPE_UINT64 = 9,
  SN_DTYPE_FLOAT16 = 10,
  SN_DTYPE_BFLOAT16 = 11,
  SN_DTYPE_FLOAT32 = 12,
  SN_DTYPE_FLOAT64 = 13,
  SN_DTYPE_FP8E4M3 = 14,
  SN_DTYPE_FP8E5M2 = 15,
  SN_DTYPE_INDEX = 16, /* exact integer of index math (treated as int64 for bounds) */
  SN_DTYPE_VOID = 17   /* the dtype of nodes without a value (Sink, Store, ...) */
} sn_dtype;

/* Ops of the UOp dialect (see the spec for each op's sources and arg). SN_OP_INVALID is never a
   valid input; queries return it on failure. */
typedef enum sn_op {
  SN_OP_INVALID = 0,
  /* source ops */
  SN_OP_PARAM = 1,
  SN_OP_BUFFER = 2,
  SN_OP_CONST = 3,
  SN_OP_BINARY = 4,
  SN_OP_DEFINE_VAR = 5,
  /* movement ops */
  SN_OP_PERMUTE = 6,
  SN_OP_FLIP = 7,
  SN_OP_RESHAPE = 8,
  SN_OP_EXPAND = 9,
  SN_OP_PAD = 10,
  SN_OP_SHRINK = 11,
  SN_OP_INDEX = 12,
  SN_OP_STACK = 13,
  SN_OP_REPLICATED = 14,
  SN_OP_SLICE = 15,
  SN_OP_BITCAST = 16,
  /* reduce */
  SN_OP_REDUCE = 17,
  /* call ops */
  SN_OP_FUNCTION = 18,
  SN_OP_CALL = 19,
  SN_OP_TUPLE = 20,
  SN_OP_GET_TUPLE = 21,
  /* load / store / copy */
  SN_OP_LOAD = 22,
  SN_OP_COPY = 23,
  SN_OP_STORE = 24,
  /* ordering */
  SN_OP_RANGE = 25,
  SN_OP_END = 26,
  SN_OP_AFTER = 27,
  SN_OP_GROUP = 28,
  SN_OP_SINK = 29,
  SN_OP_LINEAR = 30,
  /* elementwise primitives */
  SN_OP_RECIP = 31,
  SN_OP_TRUNC = 32,
  SN_OP_CAST = 33,
  SN_OP_ADD = 34,
  SN_OP_MUL = 35,
  SN_OP_MAX = 36,  /* floats: NaN if either is; max(-0.0, +0.0) may be either zero */
  SN_OP_MOD = 37,  /* floor modulo */
  SN_OP_IDIV = 38, /* floor division */
  SN_OP_CMPLT = 39,
  SN_OP_CMPNE = 40,
  SN_OP_XOR = 41,
  SN_OP_OR = 42,
  SN_OP_AND = 43,
  SN_OP_SHR = 44,
  SN_OP_SHL = 45,
  SN_OP_WHERE = 46,
  /* decomposed elementwise */
  SN_OP_NEG = 47,
  SN_OP_SUB = 48,
  SN_OP_DIV = 49,
  SN_OP_CMPGT = 50,
  SN_OP_CMPGE = 51,
  SN_OP_CMPLE = 52,
  SN_OP_CMPEQ = 53,
  SN_OP_NOT = 54,
  SN_OP_EXP2 = 55,
  SN_OP_LOG2 = 56,
  SN_OP_SIN = 57,
  SN_OP_SQRT = 58,
  SN_OP_POW = 59,
  SN_OP_MULACC = 60,
  SN_OP_THREEFRY = 61,
  /* C-truncating division and modulo (what hardware does) */
  SN_OP_CDIV = 62,
  SN_OP_CMOD = 63,
  /* markers */
  SN_OP_CONTIGUOUS = 64,
  SN_OP_CONTIGUOUS_BACKWARD = 65,
  SN_OP_DETACH = 66,
  /* internal */
  SN_OP_STAGE = 67,
  SN_OP_VECTORIZE = 68,
  SN_OP_GEP = 69,
  SN_OP_NOOP = 70,
  /* codegen */
  SN_OP_BARRIER = 71,
  SN_OP_INS = 72,
  SN_OP_SPECIAL = 73,
  SN_OP_IF = 74,
  SN_OP_ENDIF = 75,
  SN_OP_WMMA = 76,
  SN_OP_CUSTOM = 77,
  SN_OP_ATOMIC_ADD = 78,
  SN_OP_CUSTOM_FUNCTION = 79,
  SN_OP_PROGRAM = 80,
  SN_OP_SOURCE = 81
} sn_op;

/* Loop kinds of a Range (the spec's AxisType table). */
typedef enum sn_axis_type {
  SN_AXIS_INVALID = 0,
  SN_AXIS_GLOBAL = 1,
  SN_AXIS_LOCAL = 2,
  SN_AXIS_WARP = 3,
  SN_AXIS_THREAD = 4,
  SN_AXIS_LOOP = 5,
  SN_AXIS_REDUCE = 6,
  SN_AXIS_GROUP_REDUCE = 7,
  SN_AXIS_UPCAST = 8,
  SN_AXIS_UNROLL = 9
} sn_axis_type;

/* Address spaces of buffers and pointers. As an input of a Buffer/Param/Load arg, NONE means the
   default, GLOBAL. */
typedef enum sn_addrspace {
  SN_ADDRSPACE_NONE = 0,
  SN_ADDRSPACE_GLOBAL = 1,
  SN_ADDRSPACE_LOCAL = 2,
  SN_ADDRSPACE_REG = 3
} sn_addrspace;

/* Names for printing: "float32", "Add", "GLOBAL". Static strings; NULL for an unknown value. */
SN_API const char *sn_dtype_name(sn_dtype dtype);
SN_API const char *sn_op_name(sn_op op);
SN_API const char *sn_axis_type_name(sn_axis_type type);
SN_API const char *sn_addrspace_name(sn_addrspace space);

/* ==== Context ================================================================================= */

/* A context holds the state graphs share. Release it whenever convenient: graphs keep it alive. */
SN_API sn_context *sn_context_create(sn_error **err);
/* Adds a reference and returns `ctx` (NULL, with the last error set, if ctx is not live). */
SN_API sn_context *sn_context_retain(sn_context *ctx);
/* Drops a reference. NULL-safe; a pointer that is not a live context is ignored (last error set). */
SN_API void sn_context_release(sn_context *ctx);

/* ==== Graph =================================================================================== */

/* A new empty graph. It keeps `ctx` alive until the graph is destroyed. */
SN_API sn_graph *sn_graph_create(sn_context *ctx, sn_error **err);
/* Adds a reference and returns `graph` (NULL, with the last error set, if graph is not live). */
SN_API sn_graph *sn_graph_retain(sn_graph *graph);
/* Drops a reference; the last one frees the graph and every uop it made. NULL-safe; a pointer that
   is not a live graph is ignored (last error set). */
SN_API void sn_graph_release(sn_graph *graph);
/* Number of distinct nodes in the graph (0 on failure). */
SN_API size_t sn_graph_node_count(const sn_graph *graph, sn_error **err);

/* ==== Op arguments ============================================================================ */

/* Which member of sn_arg is meaningful. */
typedef enum sn_arg_kind {
  SN_ARG_NONE = 0,
  SN_ARG_INT = 1,    /* int_value: Const of bool/int/index dtype (uint64: the bit pattern),
                        GetTuple index, Gep lane */
  SN_ARG_FLOAT = 2,  /* float_value: Const of a float dtype */
  SN_ARG_INTS = 3,   /* ints[nints]: Permute order, Flip flags (0/1), Replicated axes, Gep lanes */
  SN_ARG_DTYPE = 4,  /* dtype: Cast / Bitcast target */
  SN_ARG_STRING = 5, /* str[str_len] (bytes, may hold NULs): Binary data, Source text, Special name,
                        Custom format, Ins mnemonic, CustomFunction name */
  SN_ARG_REDUCE = 6, /* reduce_op (ADD, MAX or MUL) + ints[nints] (the reduced axes) */
  SN_ARG_RANGE = 7,  /* id (loop id) + axis_type */
  SN_ARG_BUFFER = 8, /* id (0 = a new, distinct buffer), size (elements), device, addrspace */
  SN_ARG_PARAM = 9,  /* id (slot number), device, addrspace */
  SN_ARG_VAR = 10,   /* str[str_len] (name), min, max: a bounded symbolic integer */
  SN_ARG_MEM = 11,   /* device, addrspace: target of Load / Copy / Stage */
  SN_ARG_SLICE = 12  /* size (elements) + dtype */
} sn_arg_kind;

/* The `arg` of a UOp as a tagged struct: `kind` says which fields are used (see sn_arg_kind); the
   others are ignored. Initialise with sn_arg_init before use (it zeroes the struct and sets
   struct_size and addrspace). When a query fills an sn_arg, its pointers (ints, str, device) point
   into the graph and stay valid while the graph lives.
   Devices are strings: "CPU", "CUDA:0", a multi-device tuple "(CPU:0,CPU:1)", or NULL/"" for none. */
typedef struct sn_arg {
  uint32_t struct_size; /* sizeof(sn_arg) as the caller compiled it */
  sn_arg_kind kind;
  int64_t int_value;
  double float_value;
  const int64_t *ints;
  size_t nints;
  sn_dtype dtype;
  sn_op reduce_op;
  const char *str;
  size_t str_len;
  int64_t id;
  sn_axis_type axis_type;
  sn_addrspace addrspace;
  int64_t size;
  const char *device;
  int64_t min;
  int64_t max;
} sn_arg;

/* Zeroes `arg` (struct_size bytes), then sets arg->struct_size = struct_size, kind = SN_ARG_NONE and
   addrspace = SN_ADDRSPACE_GLOBAL. Call as sn_arg_init(&a, sizeof a, &err). */
SN_API SN_NODISCARD sn_code sn_arg_init(sn_arg *arg, size_t struct_size, sn_error **err);

/* ==== Building nodes ========================================================================== */

/* The generic builder: the node (op, dtype, srcs, arg), mirroring the dialect's
   UOp(op, dtype, src, arg). `srcs` may be NULL when nsrcs is 0; `arg` may be NULL for no arg.
   The node is verified against the spec (arity, dtypes, shapes, arg kind); a violation is
   SN_E_INVALID_ARG with a message naming the op, the rule and the values. Returns the (possibly
   already existing) node, or NULL on failure. */
SN_API sn_uop *sn_uop_new(sn_graph *graph, sn_op op, sn_dtype dtype, sn_uop *const *srcs, size_t nsrcs,
                          const sn_arg *arg, sn_error **err);

/* Typed builders for the common ops. All return NULL on failure. */

/* A scalar constant (shape ()). const_int accepts every dtype but void: a float dtype gets the value
   converted, bool gets value != 0, uint64 takes the bit pattern ((int64_t)UINT64_MAX is the largest).
   const_float needs a float dtype and rounds to it (float16, bfloat16, fp8: to nearest even). */
SN_API sn_uop *sn_uop_const_int(sn_graph *graph, sn_dtype dtype, int64_t value, sn_error **err);
SN_API sn_uop *sn_uop_const_float(sn_graph *graph, sn_dtype dtype, double value, sn_error **err);
/* A bounded symbolic integer variable (index dtype) with min <= value <= max. */
SN_API sn_uop *sn_uop_var(sn_graph *graph, const char *name, int64_t min, int64_t max, sn_error **err);
/* A new, distinct buffer of `size` elements of `dtype` on `device` (e.g. "CPU"; NULL for none),
   global address space. Shape (size,). */
SN_API sn_uop *sn_uop_buffer(sn_graph *graph, sn_dtype dtype, int64_t size, const char *device, sn_error **err);
/* Placeholder number `slot` with the given shape (shape[ndim]) on `device` (NULL for none). */
SN_API sn_uop *sn_uop_param(sn_graph *graph, int64_t slot, sn_dtype dtype, const int64_t *shape, size_t ndim,
                            const char *device, sn_error **err);

/* Elementwise op (unary, binary or ternary, chosen by `op`); the dtype is derived: comparisons give
   bool, Where gives its second source's, the others their first source's. Shapes broadcast
   right-aligned. Cast needs a target dtype: use sn_uop_cast. */
SN_API sn_uop *sn_uop_alu(sn_graph *graph, sn_op op, sn_uop *const *srcs, size_t nsrcs, sn_error **err);
SN_API sn_uop *sn_uop_unary(sn_graph *graph, sn_op op, sn_uop *a, sn_error **err);
SN_API sn_uop *sn_uop_binary(sn_graph *graph, sn_op op, sn_uop *a, sn_uop *b, sn_error **err);
SN_API sn_uop *sn_uop_ternary(sn_graph *graph, sn_op op, sn_uop *a, sn_uop *b, sn_uop *c, sn_error **err);
/* Convert the values to `dtype` (float to int truncates toward zero). */
SN_API sn_uop *sn_uop_cast(sn_graph *graph, sn_uop *x, sn_dtype dtype, sn_error **err);
/* Reinterpret the storage as `dtype` (total bytes preserved). */
SN_API sn_uop *sn_uop_bitcast(sn_graph *graph, sn_uop *x, sn_dtype dtype, sn_error **err);

/* Movement ops. Shapes are int64 arrays of `ndim` entries (NULL allowed when ndim is 0). */
/* Reinterpret in row-major order; the element count must not change. */
SN_API sn_uop *sn_uop_reshape(sn_graph *graph, sn_uop *x, const int64_t *shape, size_t ndim, sn_error **err);
/* Broadcast size-1 axes to `shape` (same rank). */
SN_API sn_uop *sn_uop_expand(sn_graph *graph, sn_uop *x, const int64_t *shape, size_t ndim, sn_error **err);
/* Place x at `offsets` in a zero-filled tensor of shape `sizes`. */
SN_API sn_uop *sn_uop_pad(sn_graph *graph, sn_uop *x, const int64_t *offsets, const int64_t *sizes, size_t ndim,
                          sn_error **err);
/* Keep sizes[k] elements from offsets[k] on each axis. On a tensor with symbolic dims,
   pad and shrink move the constant axes only: a symbolic axis is written as offset 0 and size -1 and
   passes through whole. */
SN_API sn_uop *sn_uop_shrink(sn_graph *graph, sn_uop *x, const int64_t *offsets, const int64_t *sizes, size_t ndim,
                             sn_error **err);
/* Reorder the axes: output axis k is input axis order[k]. */
SN_API sn_uop *sn_uop_permute(sn_graph *graph, sn_uop *x, const int64_t *order, size_t ndim, sn_error **err);
/* Reverse the axes whose flag is 1 (flags are 0 or 1, one per axis). */
SN_API sn_uop *sn_uop_flip(sn_graph *graph, sn_uop *x, const int64_t *flags, size_t ndim, sn_error **err);
/* Reduce `axes` with op SN_OP_ADD, SN_OP_MAX or SN_OP_MUL; reduced axes keep size 1. */
SN_API sn_uop *sn_uop_reduce(sn_graph *graph, sn_uop *x, sn_op op, const int64_t *axes, size_t naxes, sn_error **err);
/* Marker: force a contiguous materialization of x. */
SN_API sn_uop *sn_uop_contiguous(sn_graph *graph, sn_uop *x, sn_error **err);
/* Collect several roots into one void node. */
SN_API sn_uop *sn_uop_sink(sn_graph *graph, sn_uop *const *srcs, size_t nsrcs, sn_error **err);

/* ==== Queries ================================================================================= */
/* Queries take any live uop (of any live graph). On failure they return the sentinel named. */

/* The op (SN_OP_INVALID on failure). */
SN_API sn_op sn_uop_op(const sn_uop *uop, sn_error **err);
/* The scalar kind of the dtype (SN_DTYPE_INVALID on failure). For a vector it is the element's, for a
   pointer the pointee's. */
SN_API sn_dtype sn_uop_dtype(const sn_uop *uop, sn_error **err);
/* Vector width of the dtype: 1 for scalars (0 on failure). */
SN_API uint32_t sn_uop_lanes(const sn_uop *uop, sn_error **err);
/* 1 if the dtype is a pointer, 0 if not (-1 on failure). */
SN_API int sn_uop_is_pointer(const sn_uop *uop, sn_error **err);
/* The address space a pointer dtype points into; SN_ADDRSPACE_NONE for values and on failure. */
SN_API sn_addrspace sn_uop_pointer_addrspace(const sn_uop *uop, sn_error **err);
/* Number of sources (0 on failure). */
SN_API size_t sn_uop_num_srcs(const sn_uop *uop, sn_error **err);
/* Source i (NULL on failure, e.g. i out of range). */
SN_API sn_uop *sn_uop_src(const sn_uop *uop, size_t index, sn_error **err);
/* Fills `out` with the arg (call sn_arg_init on it first: its struct_size must be set). Arrays and
   strings point into the graph and stay valid while it lives. */
SN_API SN_NODISCARD sn_code sn_uop_arg(const sn_uop *uop, sn_arg *out, sn_error **err);

/* Shape: the rank, or -1 when the node has no shape (void ops) and on failure. */
SN_API int64_t sn_uop_rank(const sn_uop *uop, sn_error **err);
/* Dimension `index` of the shape. A constant dimension sets *value to its size and *sym (if sym is
   not NULL) to NULL. A symbolic dimension sets *value to -1 and *sym to the uop of its index
   expression. */
SN_API SN_NODISCARD sn_code sn_uop_dim(const sn_uop *uop, size_t index, int64_t *value, sn_uop **sym, sn_error **err);
/* The device: "CPU", "(CPU:0,CPU:1)" for a multi-device tuple, "" for none (e.g. a Const). Free
   with sn_string_free. NULL on failure. */
SN_API char *sn_uop_device(const sn_uop *uop, sn_error **err);
/* The sharding axis for multi-device tensors, or -1 for none (also -1 on failure). */
SN_API int64_t sn_uop_axis(const sn_uop *uop, sn_error **err);
/* The interval [*min, *max] of values the node can take, for bool/int/index dtypes. Bounds outside
   int64 are clamped to INT64_MIN / INT64_MAX and *clamped (if not NULL) is set to 1 (else 0).
   A float node is SN_E_INVALID_ARG: use sn_uop_min_max_float. */
SN_API SN_NODISCARD sn_code sn_uop_min_max_int(const sn_uop *uop, int64_t *min, int64_t *max, int *clamped,
                                               sn_error **err);
/* The same interval as doubles, for every dtype (±infinity when unbounded). */
SN_API SN_NODISCARD sn_code sn_uop_min_max_float(const sn_uop *uop, double *min, double *max, sn_error **err);

/* ==== Printing ================================================================================ */
/* Each returns a new string (free with sn_string_free), or NULL on failure. */

/* S-expression, e.g. "(add (mul a 2) 12)"; shared subterms print once as "%id = ..." bindings. */
SN_API char *sn_uop_to_string(const sn_uop *uop, sn_error **err);
/* Indented tree with each node's derived properties (dtype, shape, device, min/max). */
SN_API char *sn_uop_to_tree(const sn_uop *uop, sn_error **err);
/* Graphviz DOT of the DAG under uop. */
SN_API char *sn_uop_to_dot(const sn_uop *uop, sn_error **err);

/* ==== Rewriting =============================================================================== */

/* Simplifies `root` (a uop of `graph`) with the symbolic rules (constant folding, algebra, interval
   reasoning, division/modulo folding) to a fixed point. Returns the simplified node of the same
   graph (root itself when nothing changes), or NULL on failure. */
SN_API sn_uop *sn_graph_simplify(sn_graph *graph, sn_uop *root, sn_error **err);
/* Simplifies `expr` assuming the bool expression `valid` holds (used for indexing under a mask). */
SN_API sn_uop *sn_graph_simplify_given(sn_graph *graph, sn_uop *valid, sn_uop *expr, sn_error **err);

/* ==== Tensors, devices, buffers and programs (API version 2) ================================== */
/* Build a tensor program with the builders below (and the sn_uop_* ones above), compile it for a
 * device into an sn_program, and run that program on device buffers as often as needed:
 *
 *   sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &err);
 *   sn_uop *y = sn_tensor_softmax(g, x, -1, &err);
 *   sn_device *cpu = sn_device_open(ctx, "CPU", &err);
 *   sn_program *p = sn_compile(g, &y, 1, cpu, NULL, &err);
 *   sn_buffer *in = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, shape, 2, &err), *out = sn_program_alloc_output(p, 0, &err);
 *   sn_buffer_copy_in(in, data, sizeof data, &err);
 *   sn_program_run(p, &in, 1, &out, 1, &err);
 *   sn_buffer_copy_out(out, result, sizeof result, &err);
 *
 * Tensor builders take and return sn_uop (borrowed from the graph, like every uop). Axis arguments
 * accept negative values counted from the end (-1 = last axis). Each builder checks its arguments
 * and fails with SN_E_INVALID_ARG naming the builder, the parameter and the values (e.g. shapes that
 * do not broadcast) before it builds anything. */

typedef struct sn_device sn_device; /* a device that runs programs ("CPU", "CL"); refcounted, keeps its context alive */
typedef struct sn_buffer sn_buffer; /* a typed, shaped block of device memory; refcounted, keeps its device alive */
typedef struct sn_program sn_program; /* a compiled tensor program; refcounted, keeps its device alive; thread-safe */
struct sn_dlpack_tensor;              /* DLPack 1.x DLManagedTensorVersioned: see sinter/sinter_dlpack.h */

/* ---- tensor builders ---- */

/* A new input tensor of `dtype` and shape[ndim] on `device` (NULL = "CPU"): a fresh buffer viewed
   with the shape. Programs take their inputs in the order the inputs were created (see sn_compile).
   (API version 8) A device tuple ("CPU:0,CPU:1") gives an input sharded on axis 0 over those
   devices: the program takes it as one buffer of the whole shape and scatters it (see
   "multi-device" below). */
SN_API sn_uop *sn_tensor_input(sn_graph *graph, sn_dtype dtype, const int64_t *shape, size_t ndim, const char *device,
                               sn_error **err);
/* (API version 7) An input tensor with symbolic dims: dims[k] is an index uop, a constant
   (sn_uop_const_int), a bounded variable (sn_uop_var) or index arithmetic of those. Its buffer holds
   the largest shape the variables allow; a program built on it compiles once and runs at any values
   in bounds (sn_program_run_vars; its buffers need only the elements of the shape at the values, row-major
   and contiguous at those values: any dim may be symbolic).
   Elementwise ops, unary compositions, permute, flip, reductions, matmul/gemm (symbolic rows or
   columns), softmax/log_softmax and layernorm over constant axes, conv2d and the pools (symbolic N),
   argmax over a constant axis, one_hot, cat, stack and cumsum, gather and scatter_add along a constant
   axis, pad/shrink of the constant axes (a symbolic axis is written as offset 0, size -1), take (a
   symbolic index), a same-size bitcast, threefry and sn_tensor_gradient take symbolic dims (also
   sn_tensor_reshape_sym/expand_sym, API version 8). What needs constant dims (a symbolic axis padded,
   shrunk, gathered, joined or scanned; a size-changing bitcast; sn_tensor_assign; sn_uop_index/slice;
   the random builders, whose shape is given as numbers) fails with SN_E_UNSUPPORTED naming the op and
   the axis. */
SN_API sn_uop *sn_tensor_input_sym(sn_graph *graph, sn_dtype dtype, sn_uop *const *dims, size_t ndim,
                                   const char *device, sn_error **err);
/* (API version 8) Reshape and expand to dims that may be symbolic: dims[k] as in sn_tensor_input_sym
   (a constant, a bounded variable or index arithmetic of those). A symbolic dim must stay its own
   axis: a reshape keeps it at its place and regroups only the constant dims (flattening a (b,C,H,W)
   feature map to (b, C*H*W) is allowed; merging b with another axis is SN_E_UNSUPPORTED); an expand
   broadcasts size-1 axes to constant or symbolic sizes. */
SN_API sn_uop *sn_tensor_reshape_sym(sn_graph *graph, sn_uop *x, sn_uop *const *dims, size_t ndim, sn_error **err);
SN_API sn_uop *sn_tensor_expand_sym(sn_graph *graph, sn_uop *x, sn_uop *const *dims, size_t ndim, sn_error **err);
/* (M,K) @ (K,N) -> (M,N). Numeric dtypes; both operands share one dtype. */
SN_API sn_uop *sn_tensor_gemm(sn_graph *graph, sn_uop *a, sn_uop *b, sn_error **err);
/* (..., M,K) @ (..., K,N) -> (..., M,N); both ranks >= 2; batch dims broadcast right-aligned. */
SN_API sn_uop *sn_tensor_matmul(sn_graph *graph, sn_uop *a, sn_uop *b, sn_error **err);
/* x (N,Cin,H,W), w (Cout,Cin/groups,KH,KW), bias (Cout,) or NULL. stride, padding (zero padding on
   both sides) and dilation are {rows, columns}; NULL means {1,1}, {0,0} and {1,1}. */
SN_API sn_uop *sn_tensor_conv2d(sn_graph *graph, sn_uop *x, sn_uop *w, sn_uop *bias, const int64_t *stride,
                                const int64_t *padding, const int64_t *dilation, int64_t groups, sn_error **err);
/* Pooling over the last two axes (rank >= 2). kernel[2] is required; stride NULL = kernel, padding
   NULL = {0,0} (padding <= kernel/2). Max pooling pads with -inf (integers: the dtype's minimum);
   average pooling counts the zero padding (PyTorch's count_include_pad) and needs a float dtype. */
SN_API sn_uop *sn_tensor_max_pool2d(sn_graph *graph, sn_uop *x, const int64_t *kernel, const int64_t *stride,
                                    const int64_t *padding, sn_error **err);
SN_API sn_uop *sn_tensor_avg_pool2d(sn_graph *graph, sn_uop *x, const int64_t *kernel, const int64_t *stride,
                                    const int64_t *padding, sn_error **err);
/* Along `axis`, max-subtracted for stability. Float dtypes. */
SN_API sn_uop *sn_tensor_softmax(sn_graph *graph, sn_uop *x, int64_t axis, sn_error **err);
SN_API sn_uop *sn_tensor_log_softmax(sn_graph *graph, sn_uop *x, int64_t axis, sn_error **err);
/* Normalizes over the last `naxes` axes: (x - mean) / sqrt(var + eps), then * weight + bias when
   given (NULL = none; each has the normalized axes' shape). Float dtypes. */
SN_API sn_uop *sn_tensor_layernorm(sn_graph *graph, sn_uop *x, int64_t naxes, sn_uop *weight, sn_uop *bias, double eps,
                                   sn_error **err);
/* Elementwise: relu (any numeric dtype), gelu (tanh approximation), sigmoid, tanh, exp, log (floats). */
SN_API sn_uop *sn_tensor_relu(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_gelu(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_sigmoid(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_tanh(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_exp(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_log(sn_graph *graph, sn_uop *x, sn_error **err);
/* Inclusive cumulative sum along `axis`. Numeric dtypes. */
SN_API sn_uop *sn_tensor_cumsum(sn_graph *graph, sn_uop *x, int64_t axis, sn_error **err);
/* Index (int32) of the first maximum along `axis`; the axis is removed unless keepdim is non-zero. */
SN_API sn_uop *sn_tensor_argmax(sn_graph *graph, sn_uop *x, int64_t axis, int keepdim, sn_error **err);
/* Concatenation along `axis` of n tensors of one dtype and rank (same dims off the axis). */
SN_API sn_uop *sn_tensor_cat(sn_graph *graph, sn_uop *const *xs, size_t n, int64_t axis, sn_error **err);
/* Stacks n same-shape tensors along a new axis (0 <= axis <= rank, or negative from rank+1). */
SN_API sn_uop *sn_tensor_stack(sn_graph *graph, sn_uop *const *xs, size_t n, int64_t axis, sn_error **err);
/* idx (integer) -> idx.shape + (n,) of `dtype`: 1 where idx == j, else 0. */
SN_API sn_uop *sn_tensor_one_hot(sn_graph *graph, sn_uop *idx, int64_t n, sn_dtype dtype, sn_error **err);
/* [0, 1, ..., n-1] of `dtype`. */
SN_API sn_uop *sn_tensor_arange(sn_graph *graph, int64_t n, sn_dtype dtype, sn_error **err);
/* PyTorch's gather: out[..i..] = x[..idx[..i..]..] along `axis` (idx has x's rank; indices outside
   the axis give 0). */
SN_API sn_uop *sn_tensor_gather(sn_graph *graph, sn_uop *x, int64_t axis, sn_uop *idx, sn_error **err);
/* PyTorch's scatter_add: x plus val[p] added at x[p with p_axis = idx[p]] for every position p of idx. */
SN_API sn_uop *sn_tensor_scatter_add(sn_graph *graph, sn_uop *x, int64_t axis, sn_uop *idx, sn_uop *val,
                                     sn_error **err);
/* Uniform values in [0, 1) (a float dtype) of shape[ndim], from a counter-based generator
   (Threefry-2x32) keyed by `seed`: the same seed gives the same values on every device. */
SN_API sn_uop *sn_tensor_rand(sn_graph *graph, const int64_t *shape, size_t ndim, uint64_t seed, sn_dtype dtype,
                              sn_error **err);
/* Standard normal values (Box-Muller over the same generator). */
SN_API sn_uop *sn_tensor_randn(sn_graph *graph, const int64_t *shape, size_t ndim, uint64_t seed, sn_dtype dtype,
                               sn_error **err);

/* ---- gradients (API version 5) ---- */

/* Reverse-mode gradients: grads[i] = d loss / d wrt[i] for i < n, each a tensor of wrt[i]'s shape
   and dtype built into the same graph (compile them with the loss, or alone). `loss` is a float
   tensor of one element (any shape of ones, e.g. a full reduce); each wrt[i] is a float tensor of
   the graph (usually an input). Gradients flow through float values only: integer and bool values
   (indices, masks, comparisons) carry none, and a wrt the loss does not depend on gets zeros.
   sn_tensor_detach(x) stops the gradient; SN_OP_CONTIGUOUS_BACKWARD (sn_uop_new) materializes
   it. A loss that is not one float element is SN_E_INVALID_ARG; a path from a wrt to the loss
   through an op without a gradient (Bitcast, Threefry) is SN_E_UNSUPPORTED naming the op. On
   failure grads is left unchanged. */
SN_API sn_code sn_tensor_gradient(sn_graph *graph, sn_uop *loss, sn_uop *const *wrt, size_t n, sn_uop **grads,
                                  sn_error **err);
/* x, with the gradient stopped: the loss's gradient does not flow through this use of x. */
SN_API sn_uop *sn_tensor_detach(sn_graph *graph, sn_uop *x, sn_error **err);
/* An in-place update: writes `value` (target's shape and dtype) into the buffer of input tensor
   `target` (made by sn_tensor_input) when a program that includes the result runs, among its
   outputs or in sn_compile_options.effects. The write comes after every read of the old value in
   that program, so one program can compute a loss, its gradient and the update of the weights it
   read. The result reads as `value`. A target that is not an input, a shape or dtype mismatch, or
   two updates of one buffer in one program are SN_E_INVALID_ARG. */
SN_API sn_uop *sn_tensor_assign(sn_graph *graph, sn_uop *target, sn_uop *value, sn_error **err);

/* ---- indexing and raw data (API version 5) ---- */

/* The spec's Index: indices[k] (an integer tensor of shape () or (m,)) selects along axis k of x,
   from the left (n <= rank); a ()-shaped index removes the axis, an (m,)-shaped one makes it m
   long: a gather along the leading axes (an embedding lookup for one index). An index outside its
   axis reads 0. */
SN_API sn_uop *sn_tensor_index(sn_graph *graph, sn_uop *x, sn_uop *const *indices, size_t n, sn_error **err);
/* The spec's Slice: `size` elements of `dtype` read from x's storage (its row-major bytes),
   starting `offset` elements of x's dtype in; shape (size,). Past the end is SN_E_INVALID_ARG. */
SN_API sn_uop *sn_tensor_slice(sn_graph *graph, sn_uop *x, int64_t offset, int64_t size, sn_dtype dtype,
                               sn_error **err);
/* The spec's Binary: a copy of data[0..nbytes-1] as a constant uint8 tensor of shape (nbytes,)
   (view it with sn_uop_bitcast or sn_tensor_slice). A program that reads it holds the bytes in
   device memory, filled once when compiled; sn_program_export_c writes them as a static array.
   Weights given this way are packed once, at compile time, and a convolution whose weights are all
   finite (checked then) leaves out the products of its zero padding. */
SN_API sn_uop *sn_tensor_binary(sn_graph *graph, const void *data, size_t nbytes, sn_error **err);

/* ---- functions (API version 5) ---- */

/* A reusable sub-graph (the spec's Function/Call): begin it with its parameters, build its body
   from sn_function_param's uops with any builder, end it with the body's outputs, then call it on
   arguments any number of times:

     sn_function *f = sn_function_begin(g, 2, dtypes, shapes, ranks, &err);
     sn_uop *y = sn_tensor_relu(g, sn_uop_binary(g, SN_OP_ADD, sn_function_param(f, 0, &err),
                                                 sn_function_param(f, 1, &err), &err), &err);
     sn_function_end(f, &y, 1, &err);
     sn_function_call(g, f, args, 2, results, &err);   // results[0]: relu(args[0] + args[1])

   A call is resolved by substitution when compiled, so it fuses with its callers, unless the
   function is marked SN_FUNCTION_PRECOMPILE: then its arguments and results are materialized and
   every call runs the same kernels, compiled once. Gradients flow through calls. An sn_function
   belongs to its graph and lives as long as the graph (no release). */
typedef struct sn_function sn_function;
typedef enum sn_function_flags { SN_FUNCTION_PRECOMPILE = 1 } sn_function_flags;
/* Parameter k has dtypes[k] and shape shapes[k][0 .. ranks[k]-1] (shapes[k] may be NULL when
   ranks[k] is 0). */
SN_API sn_function *sn_function_begin(sn_graph *graph, size_t nparams, const sn_dtype *dtypes,
                                      const int64_t *const *shapes, const size_t *ranks, sn_error **err);
/* The uop standing for parameter i inside the body. */
SN_API sn_uop *sn_function_param(sn_function *fn, size_t i, sn_error **err);
/* Ends the body: the function returns outputs[0..n-1] (uops of its graph). Once per function. */
SN_API sn_code sn_function_end(sn_function *fn, sn_uop *const *outputs, size_t n, sn_error **err);
/* SN_FUNCTION_* flags (0 = none), before or after sn_function_end; calls made afterwards see them. */
SN_API sn_code sn_function_set_flags(sn_function *fn, uint32_t flags, sn_error **err);
/* Calls the ended function on args[0..nargs-1] (uops of `graph`, the function's graph; each of its
   parameter's shape and dtype, else SN_E_INVALID_ARG naming the argument): results[i] is output i
   (results has one entry per output). On failure results is left unchanged. */
SN_API sn_code sn_function_call(sn_graph *graph, sn_function *fn, sn_uop *const *args, size_t nargs, sn_uop **results,
                                sn_error **err);

/* ---- version 8 (multi-device) ---- */

/* One program may span devices. The CPU backend has 8 devices, "CPU" (= "CPU:0") .. "CPU:7", each
   with its own memory, JIT and thread pool (they share the machine's cores: CPU:0 uses all of them,
   the others half each), so this works on any machine. A device tuple is written "CPU:0,CPU:1" or
   "(CPU:0,CPU:1)"; it names distinct devices. A tensor on a tuple keeps its whole (global) shape and
   an axis (sn_uop_axis): device i holds the i-th of n equal blocks along that axis, or, for axis -1,
   all of it (replicated).

   sn_compile's device runs what has no device of its own; what is placed elsewhere (a shard, an
   sn_tensor_to) runs on its devices, each device's kernels in parallel with the others' wherever
   the data allows, with copies between them. Elementwise ops, movement ops that keep each device's
   block whole, and reductions run shard-wise; a reduction over the shard axis adds up the devices'
   partial results on every device (it is replicated after). The program's inputs and outputs are
   ordinary buffers on the compile device: a sharded input is fed as one buffer of its whole shape,
   which the program scatters; a sharded output comes back gathered, a replicated one once. Effects
   (sn_tensor_assign), launch-time variables and symbolic shapes are not supported in such a
   program yet (SN_E_UNSUPPORTED). Bad devices (unknown, listed twice), axes (out of range, not
   dividing among the devices) and operands on different devices are SN_E_INVALID_ARG or SN_E_DEVICE
   naming them. */

/* x split along `axis` (negative counts from the end) over the devices of the tuple `devices`: the
   axis length must divide by the device count. x must be on one device (or be sharded the same way
   already). */
SN_API sn_uop *sn_tensor_shard(sn_graph *graph, sn_uop *x, const char *devices, int64_t axis, sn_error **err);
/* The spec's Copy: x moved to `device`. One device takes the whole tensor (a sharded x is gathered);
   a tuple shards axis 0 (which must divide by the device count). */
SN_API sn_uop *sn_tensor_to(sn_graph *graph, sn_uop *x, const char *device, sn_error **err);
/* The spec's collectives, built from Copy, Replicated and movement ops as the spec composes them.
   broadcast and scatter take x (shape (s, ...)) on one device; the others take x sharded on axis 0
   (sn_tensor_shard / sn_tensor_scatter: shape (n*s, ...), each of the n devices holding (s, ...)):
     broadcast       x replicated on every device of `devices`         (s, ...), axis -1
     scatter         x split into n blocks of axis 0, one per device   (s, ...), axis 0
     gather_devices  every block onto the first device of x's tuple    (n*s, ...) on that device
     reduce_devices  the n blocks summed, on the first device          (s, ...) on that device
     allgather       every block onto every device                     (n*s, ...), axis -1
     reduce_scatter  the blocks summed over devices, then scattered    (s, ...), axis 0 (s % n == 0)
     allreduce       reduce_scatter, then allgather                    (s, ...), axis -1 */
SN_API sn_uop *sn_tensor_broadcast(sn_graph *graph, sn_uop *x, const char *devices, sn_error **err);
SN_API sn_uop *sn_tensor_scatter(sn_graph *graph, sn_uop *x, const char *devices, sn_error **err);
SN_API sn_uop *sn_tensor_gather_devices(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_reduce_devices(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_allgather(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_reduce_scatter(sn_graph *graph, sn_uop *x, sn_error **err);
SN_API sn_uop *sn_tensor_allreduce(sn_graph *graph, sn_uop *x, sn_error **err);

/* ---- devices ---- */

/* The device called `name` (NULL or "" = the default device, CPU). Names are a backend and an
   index: "CPU" (also "cpu", "CPU:0"); "CL", "CL:1", ... the OpenCL devices of every platform, in
   order; "C" renders C99 source for ahead-of-time export and runs nothing (sn_program_export_c).
   Opening the same name twice in one context gives the same device. An unknown name, a backend
   that this build lacks, or a driver or device this machine lacks (no OpenCL ICD loader, no
   platform) is SN_E_DEVICE naming the device and the reason. */
SN_API sn_device *sn_device_open(sn_context *ctx, const char *name, sn_error **err);
SN_API sn_device *sn_device_retain(sn_device *device);
SN_API void sn_device_release(sn_device *device);
/* The device's canonical name ("CPU", "CL:1"). Borrowed: valid while the device lives. NULL on
   failure. */
SN_API const char *sn_device_name(const sn_device *device, sn_error **err);
/* How many devices backend `backend` ("CPU", "CL", "C") has on this machine: 0 when its driver or
   hardware is missing (sn_device_open then says why); -1 with SN_E_NOT_FOUND for a backend this
   build does not have. (API version 4.) */
SN_API int sn_device_count(sn_context *ctx, const char *backend, sn_error **err);
/* What the device is ("pthread-haswell-AMD EPYC (Portable Computing Language, OpenCL 3.0 ...)"). Free
   with sn_string_free. (API version 4.) */
SN_API char *sn_device_description(const sn_device *device, sn_error **err);

/* ---- debug level ---- */

/* SN_DEBUG level of a context: 0 quiet, 1 kernel timings of every run, 2 + the kernel list of every
   compile, 3 + optimized kernel ASTs, 4 + kernel source, 5 + linearized UOps (printed to stderr).
   The SN_DEBUG environment variable sets the default when the context is created. */
SN_API SN_NODISCARD sn_code sn_context_set_debug(sn_context *ctx, int level, sn_error **err);
/* The level (-1 on failure). */
SN_API int sn_context_debug(const sn_context *ctx, sn_error **err);
/* (API version 6) Whether the context's devices keep compiled kernels and BEAM results in the
   disk cache ($SN_CACHE_DIR, else $XDG_CACHE_HOME/sinter, else ~/.cache/sinter; on by default,
   SN_CACHE=0 turns it off for the whole process; it keeps at most $SN_CACHE_MAX_MB MiB, default
   512, dropping the least recently used). Applies to devices open now and later. */
SN_API SN_NODISCARD sn_code sn_context_set_disk_cache(sn_context *ctx, int enabled, sn_error **err);

/* ---- compile ---- */

typedef struct sn_compile_options {
  uint32_t struct_size; /* sizeof(sn_compile_options) as the caller compiled it */
  int32_t debug;        /* SN_DEBUG level for this compile and the program's runs; -1 = the context's */
  int32_t optimize;     /* non-zero: run the kernel optimizer (loop order, vector tiles, threads) */
  int32_t threads;      /* non-zero: allow kernels to run on all cores */
  int32_t keep_stages;  /* non-zero: keep the graph after every stage as text (sn_program_stage) */
  int32_t use_cache;    /* non-zero: reuse a program compiled before from the same content */
  /* The program's inputs in the order sn_program_run takes them: tensors made by sn_tensor_input
     (or buffers made by sn_uop_buffer). Inputs listed but unused are accepted and ignored. NULL
     (ninputs 0): every input the outputs read, in the order the inputs were created. */
  sn_uop *const *inputs;
  size_t ninputs;
  /* (API version 5) In-place updates to run besides the outputs: the uops sn_tensor_assign
     returned (an After), their Stores, or Groups of those (sn_uop_new). Each writes its value into its input's buffer
     when the program runs, after every read of the old value in the program. NULL (neffects 0): none. An assign among
     the outputs runs too (and is an output). */
  sn_uop *const *effects;
  size_t neffects;
  /* (API version 6) BEAM search width: each kernel's opts are chosen by timing candidates on the
     device (the `beam` fastest kept per step) instead of by the heuristic; never slower than the
     heuristic as timed in the same search. Searched once per kernel and kept in the disk cache.
     Kernels with launch-time variables keep the heuristic. 0: off. Default: $SN_BEAM, else 0. */
  int32_t beam;
  /* (API version 6) Opts to force, one kernel per line "<kernel id>: <opts>" as
     sn_program_kernel_opts prints them, e.g. "5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4) THREAD(0,2)"
     (nothing after the colon: no opts at all). Kernels not listed are optimized as usual. A line
     that does not parse, an id that no kernel of the program has, or opts that do not apply to
     the kernel are SN_E_INVALID_ARG. NULL (nkernel_opts 0): none. */
  const char *const *kernel_opts;
  size_t nkernel_opts;
} sn_compile_options;

/* Sets the defaults: debug -1, optimize 1, threads 1, keep_stages 0, use_cache 1, no inputs, no
   effects, beam $SN_BEAM (else 0), no forced opts. Call
   as sn_compile_options_init(&o, sizeof o, &err). */
SN_API SN_NODISCARD sn_code sn_compile_options_init(sn_compile_options *options, size_t struct_size, sn_error **err);

/* Compiles the tensor graph under outputs[noutputs] (uops of `graph`) for `device` (NULL: the
   context's default device), with `options` (NULL: the defaults). Every output gets its own buffer
   when run. The stages: schedule (kernel fusion), per kernel optimize / expand / lower / linearize,
   compile (LLVM on the CPU), memory plan. Identical kernels compile once per device, and the same
   program built again (in any graph of the context) compiles once. Errors: SN_E_INVALID_ARG for a
   bad graph or option, SN_E_UNSUPPORTED naming what the device cannot do (a dtype or an op it
   cannot run), SN_E_DEVICE for inputs on another device, SN_E_COMPILE. The graph may be released
   afterwards: the program does not need it. noutputs may be 0 when options list effects. */
SN_API sn_program *sn_compile(sn_graph *graph, sn_uop *const *outputs, size_t noutputs, sn_device *device,
                              const sn_compile_options *options, sn_error **err);
SN_API sn_program *sn_program_retain(sn_program *program);
SN_API void sn_program_release(sn_program *program);

/* ---- buffers ---- */

/* A new buffer of `dtype` and shape[ndim] on `device` (contents undefined). Its memory is 64-byte
   aligned. A dtype the device cannot hold is SN_E_UNSUPPORTED. An element count or byte size that
   does not fit int64 is SN_E_INVALID_ARG, more bytes than the device has SN_E_OUT_OF_MEMORY (each
   naming the size). */
SN_API sn_buffer *sn_buffer_alloc(sn_device *device, sn_dtype dtype, const int64_t *shape, size_t ndim, sn_error **err);
SN_API sn_buffer *sn_buffer_retain(sn_buffer *buffer);
SN_API void sn_buffer_release(sn_buffer *buffer);
/* A view sharing the memory of `buffer`: shape[ndim] elements of its dtype starting at element
   `offset`. It keeps the memory alive after `buffer` is released. */
SN_API sn_buffer *sn_buffer_view(sn_buffer *buffer, int64_t offset, const int64_t *shape, size_t ndim, sn_error **err);
/* Copies exactly sn_buffer_nbytes(buffer) bytes from host memory into the buffer, or out of it. A
   different `nbytes` is SN_E_INVALID_ARG (it usually means the wrong dtype or shape). */
SN_API SN_NODISCARD sn_code sn_buffer_copy_in(sn_buffer *buffer, const void *src, size_t nbytes, sn_error **err);
SN_API SN_NODISCARD sn_code sn_buffer_copy_out(const sn_buffer *buffer, void *dst, size_t nbytes, sn_error **err);
/* Copies the contents of `src` into `dst`: the same dtype and element count, on the same device or
   on two (through host memory). Overlapping buffers of one device are SN_E_INVALID_ARG. Blocks
   until done. (API version 4.) */
SN_API SN_NODISCARD sn_code sn_buffer_copy(sn_buffer *dst, const sn_buffer *src, sn_error **err);
/* Queries (SN_DTYPE_INVALID, -1 or 0 on failure). */
SN_API sn_dtype sn_buffer_dtype(const sn_buffer *buffer, sn_error **err);
SN_API int64_t sn_buffer_rank(const sn_buffer *buffer, sn_error **err);
/* Dimension `axis` of the shape (-1 on failure). */
SN_API int64_t sn_buffer_dim(const sn_buffer *buffer, size_t axis, sn_error **err);
SN_API int64_t sn_buffer_numel(const sn_buffer *buffer, sn_error **err);
SN_API size_t sn_buffer_nbytes(const sn_buffer *buffer, sn_error **err);
/* The device's name ("CPU"). Borrowed: valid while the buffer lives. */
SN_API const char *sn_buffer_device(const sn_buffer *buffer, sn_error **err);
/* Host address of element 0 for buffers in host memory (CPU, C), NULL otherwise (CL). Valid
   while the buffer lives; reading or writing it while a program runs on the buffer is a race. */
SN_API void *sn_buffer_host_pointer(sn_buffer *buffer, sn_error **err);

/* ---- run ---- */

/* Runs the program: inputs[ninputs] in its input order, outputs[noutputs] in its output order.
   Each buffer must have the dtype and shape the program expects (sn_program_input_info) and live on
   the program's device; outputs must not overlap inputs or each other. Errors name the buffer
   (e.g. "input 1: expected float32(4,4), got a buffer of int32(4,4)"). Blocks until done. Several
   threads may run one program at once. */
SN_API SN_NODISCARD sn_code sn_program_run(sn_program *program, sn_buffer *const *inputs, size_t ninputs,
                                           sn_buffer *const *outputs, size_t noutputs, sn_error **err);
/* A new buffer with the dtype and shape of output i, on the program's device. */
SN_API sn_buffer *sn_program_alloc_output(sn_program *program, size_t index, sn_error **err);
/* (API version 7) A new buffer for output i at the launch-time variables names[i] = values[i] (any
   order): the output's shape at those values (for a symbolic output; a static one ignores them).
   Every variable the shape uses needs a value in its bounds (SN_E_INVALID_ARG otherwise). */
SN_API sn_buffer *sn_program_alloc_output_vars(sn_program *program, size_t index, const char *const *names,
                                               const int64_t *values, size_t n, sn_error **err);
/* Launch-time variables: the variables (sn_uop_var) the program's kernels read, sorted by name, and
   sn_program_run with a value for each (names[i] takes values[i], in any order). Every variable needs
   a value within its [min, max]; a missing variable, a name the program does not have and a value out
   of bounds are SN_E_INVALID_ARG naming the variable. Values change what runs (loop bounds, scalars)
   without recompiling. sn_program_var_info writes variable `index`'s name (owned by the program) and
   bounds; each output pointer may be NULL. (API version 3.) */
SN_API size_t sn_program_num_vars(const sn_program *program, sn_error **err);
SN_API SN_NODISCARD sn_code sn_program_var_info(const sn_program *program, size_t index, const char **name,
                                                int64_t *min, int64_t *max, sn_error **err);
SN_API SN_NODISCARD sn_code sn_program_run_vars(sn_program *program, sn_buffer *const *inputs, size_t ninputs,
                                                sn_buffer *const *outputs, size_t noutputs, const char *const *names,
                                                const int64_t *values, size_t nvars, sn_error **err);

/* ---- inspect ---- */

SN_API size_t sn_program_num_inputs(const sn_program *program, sn_error **err);
SN_API size_t sn_program_num_outputs(const sn_program *program, sn_error **err);
/* dtype and shape of input / output `index`: *dtype (if not NULL) gets the dtype, *ndim (if not
   NULL) the rank, and shape (if not NULL) the dims, -1 for a symbolic dim (sn_tensor_input_sym);
   shape_cap is how many dims `shape` holds (a smaller cap than the rank is SN_E_INVALID_ARG). */
SN_API SN_NODISCARD sn_code sn_program_input_info(const sn_program *program, size_t index, sn_dtype *dtype,
                                                  int64_t *shape, size_t shape_cap, size_t *ndim, sn_error **err);
SN_API SN_NODISCARD sn_code sn_program_output_info(const sn_program *program, size_t index, sn_dtype *dtype,
                                                   int64_t *shape, size_t shape_cap, size_t *ndim, sn_error **err);
/* Number of kernels the program launches per run (0 on failure; a program may have none, e.g. when
   every output is empty). */
SN_API size_t sn_program_num_kernels(const sn_program *program, sn_error **err);
/* Readable name of kernel i ("r_16_64"), borrowed: valid while the program lives. NULL on failure. */
SN_API const char *sn_program_kernel_name(const sn_program *program, size_t index, sn_error **err);
/* Source of kernel i (LLVM IR on the CPU, OpenCL C on CL, C99 on C). Free with sn_string_free. */
SN_API char *sn_program_kernel_source(const sn_program *program, size_t index, sn_error **err);
/* (API version 6) The opts kernel i got, as one line "<kernel id>: <opts>", e.g.
   "5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4) THREAD(0,2)". The id (16 hex digits) is the content
   hash of the kernel as scheduled, the same in every process; passing the line back in
   sn_compile_options.kernel_opts rebuilds exactly this kernel. Free with sn_string_free. */
SN_API char *sn_program_kernel_opts(const sn_program *program, size_t index, sn_error **err);
/* The graph after a pipeline stage as text, every kernel under a "# kernel i: name" header. Stages:
   "tensor", "schedule", "ast", "optimized", "launch" (the launch grid's indices in place), "expanded",
   "simplified", "reduce", "parallel", "isel", "linear", "source", "plan". Needs keep_stages at compile time ("source"
   does not): otherwise, and for an unknown stage, SN_E_NOT_FOUND. Free with sn_string_free. */
SN_API char *sn_program_stage(const sn_program *program, const char *stage, sn_error **err);
/* Bytes of the one arena the program's intermediate values share (0 on failure or when none). */
SN_API size_t sn_program_arena_bytes(const sn_program *program, sn_error **err);

/* ---- ahead-of-time export ---- */

/* A program compiled for device "C" as one standalone C99 file that needs only libc and libm:
   every kernel, the memory plan and one entry point
     int NAME(void *const *inputs, void *const *outputs)
   taking the buffers in the program's input and output order (contiguous, row-major, dtypes as
   sn_program_input_info says; float16/bfloat16 as their bits, bool as one byte), returning 0 (-1
   when malloc fails for the intermediates). `name` must be a C identifier. A program compiled for
   another device is SN_E_UNSUPPORTED (compile it for "C"); one with launch-time variables too, for
   now. Free with sn_string_free. (API version 4.) */
SN_API char *sn_program_export_c(const sn_program *program, const char *name, sn_error **err);

/* ==== version 8 (GPU targets) =================================================================== */

/* (API version 8) A compile-only device for architecture `arch` of GPU backend `backend`, needing
   neither the driver nor a GPU:
     "CUDA": "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a": PTX from LLVM's NVPTX target;
     "AMD":  "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942" (wave64), "gfx1030", "gfx1100", "gfx1101",
             "gfx1102" (wave32): AMDGPU code objects from LLVM's AMDGPU target, linked by lld (in process).
   Its name is the backend's ("CUDA", "AMD"), so inputs made on that device compile for it; its
   buffers are host memory. Programs compile for it (sn_program_kernel_source gives the PTX or the
   AMDGPU assembly, sn_program_kernel_binary the binary) but sn_program_run fails with SN_E_DEVICE
   saying the device is compile-only. The same backend and arch twice in one context give the same
   device. A backend that cannot compile without its device (or that this build lacks) is
   SN_E_DEVICE naming it; an unknown or empty arch is SN_E_INVALID_ARG naming it and the known ones.
   Release with sn_device_release. */
SN_API sn_device *sn_device_open_target(sn_context *ctx, const char *backend, const char *arch, sn_error **err);
/* (API version 8) The binary of kernel i as its driver loads it: for CUDA the PTX text (*size bytes,
   no terminating NUL counted; the same text as sn_program_kernel_source), for AMD the code object
   (an ELF shared object with the kernel descriptors `<kernel>.kd`). Borrowed, like
   sn_program_kernel_name: valid while the program lives. *size (not NULL) gets its size. A program
   of a device that keeps no binary (CPU, CL, C) is SN_E_UNSUPPORTED naming the device. NULL on
   failure. */
SN_API const void *sn_program_kernel_binary(const sn_program *program, size_t index, size_t *size, sn_error **err);

/* ==== Function table for dlopen hosts ========================================================= */

/* One pointer per exported function, in a fixed order. Append-only: entries are never moved or
   removed; a release that adds functions appends them and bumps SN_API_VERSION. Check struct_size
   (or api_version) before touching entries newer than the version you asked for. */
typedef struct sn_api {
  uint32_t struct_size; /* sizeof(sn_api) of the library */
  uint32_t api_version; /* SN_API_VERSION of the library (>= the version asked for) */
  /* ---- version 1 ---- */
  const char *(*version_string)(void);
  uint32_t (*version_number)(void);
  sn_code (*error_code)(const sn_error *error);
  const char *(*error_message)(const sn_error *error);
  void (*error_free)(sn_error *error);
  sn_code (*last_error_code)(void);
  const char *(*last_error_message)(void);
  void (*clear_last_error)(void);
  void (*string_free)(char *s);
  const char *(*dtype_name)(sn_dtype dtype);
  const char *(*op_name)(sn_op op);
  const char *(*axis_type_name)(sn_axis_type type);
  const char *(*addrspace_name)(sn_addrspace space);
  sn_context *(*context_create)(sn_error **err);
  sn_context *(*context_retain)(sn_context *ctx);
  void (*context_release)(sn_context *ctx);
  sn_graph *(*graph_create)(sn_context *ctx, sn_error **err);
  sn_graph *(*graph_retain)(sn_graph *graph);
  void (*graph_release)(sn_graph *graph);
  size_t (*graph_node_count)(const sn_graph *graph, sn_error **err);
  sn_code (*arg_init)(sn_arg *arg, size_t struct_size, sn_error **err);
  sn_uop *(*uop_new)(sn_graph *graph, sn_op op, sn_dtype dtype, sn_uop *const *srcs, size_t nsrcs, const sn_arg *arg,
                     sn_error **err);
  sn_uop *(*uop_const_int)(sn_graph *graph, sn_dtype dtype, int64_t value, sn_error **err);
  sn_uop *(*uop_const_float)(sn_graph *graph, sn_dtype dtype, double value, sn_error **err);
  sn_uop *(*uop_var)(sn_graph *graph, const char *name, int64_t min, int64_t max, sn_error **err);
  sn_uop *(*uop_buffer)(sn_graph *graph, sn_dtype dtype, int64_t size, const char *device, sn_error **err);
  sn_uop *(*uop_param)(sn_graph *graph, int64_t slot, sn_dtype dtype, const int64_t *shape, size_t ndim,
                       const char *device, sn_error **err);
  sn_uop *(*uop_alu)(sn_graph *graph, sn_op op, sn_uop *const *srcs, size_t nsrcs, sn_error **err);
  sn_uop *(*uop_unary)(sn_graph *graph, sn_op op, sn_uop *a, sn_error **err);
  sn_uop *(*uop_binary)(sn_graph *graph, sn_op op, sn_uop *a, sn_uop *b, sn_error **err);
  sn_uop *(*uop_ternary)(sn_graph *graph, sn_op op, sn_uop *a, sn_uop *b, sn_uop *c, sn_error **err);
  sn_uop *(*uop_cast)(sn_graph *graph, sn_uop *x, sn_dtype dtype, sn_error **err);
  sn_uop *(*uop_bitcast)(sn_graph *graph, sn_uop *x, sn_dtype dtype, sn_error **err);
  sn_uop *(*uop_reshape)(sn_graph *graph, sn_uop *x, const int64_t *shape, size_t ndim, sn_error **err);
  sn_uop *(*uop_expand)(sn_graph *graph, sn_uop *x, const int64_t *shape, size_t ndim, sn_error **err);
  sn_uop *(*uop_pad)(sn_graph *graph, sn_uop *x, const int64_t *offsets, const int64_t *sizes, size_t ndim,
                     sn_error **err);
  sn_uop *(*uop_shrink)(sn_graph *graph, sn_uop *x, const int64_t *offsets, const int64_t *sizes, size_t ndim,
                        sn_error **err);
  sn_uop *(*uop_permute)(sn_graph *graph, sn_uop *x, const int64_t *order, size_t ndim, sn_error **err);
  sn_uop *(*uop_flip)(sn_graph *graph, sn_uop *x, const int64_t *flags, size_t ndim, sn_error **err);
  sn_uop *(*uop_reduce)(sn_graph *graph, sn_uop *x, sn_op op, const int64_t *axes, size_t naxes, sn_error **err);
  sn_uop *(*uop_contiguous)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*uop_sink)(sn_graph *graph, sn_uop *const *srcs, size_t nsrcs, sn_error **err);
  sn_op (*uop_op)(const sn_uop *uop, sn_error **err);
  sn_dtype (*uop_dtype)(const sn_uop *uop, sn_error **err);
  uint32_t (*uop_lanes)(const sn_uop *uop, sn_error **err);
  int (*uop_is_pointer)(const sn_uop *uop, sn_error **err);
  sn_addrspace (*uop_pointer_addrspace)(const sn_uop *uop, sn_error **err);
  size_t (*uop_num_srcs)(const sn_uop *uop, sn_error **err);
  sn_uop *(*uop_src)(const sn_uop *uop, size_t index, sn_error **err);
  sn_code (*uop_arg)(const sn_uop *uop, sn_arg *out, sn_error **err);
  int64_t (*uop_rank)(const sn_uop *uop, sn_error **err);
  sn_code (*uop_dim)(const sn_uop *uop, size_t index, int64_t *value, sn_uop **sym, sn_error **err);
  char *(*uop_device)(const sn_uop *uop, sn_error **err);
  int64_t (*uop_axis)(const sn_uop *uop, sn_error **err);
  sn_code (*uop_min_max_int)(const sn_uop *uop, int64_t *min, int64_t *max, int *clamped, sn_error **err);
  sn_code (*uop_min_max_float)(const sn_uop *uop, double *min, double *max, sn_error **err);
  char *(*uop_to_string)(const sn_uop *uop, sn_error **err);
  char *(*uop_to_tree)(const sn_uop *uop, sn_error **err);
  char *(*uop_to_dot)(const sn_uop *uop, sn_error **err);
  sn_uop *(*graph_simplify)(sn_graph *graph, sn_uop *root, sn_error **err);
  sn_uop *(*graph_simplify_given)(sn_graph *graph, sn_uop *valid, sn_uop *expr, sn_error **err);
  /* ---- version 2 entries go below this line; never reorder the ones above ---- */
  /* ---- version 2: tensors, devices, buffers, programs, DLPack ---- */
  sn_uop *(*tensor_input)(sn_graph *graph, sn_dtype dtype, const int64_t *shape, size_t ndim, const char *device,
                          sn_error **err);
  sn_uop *(*tensor_gemm)(sn_graph *graph, sn_uop *a, sn_uop *b, sn_error **err);
  sn_uop *(*tensor_matmul)(sn_graph *graph, sn_uop *a, sn_uop *b, sn_error **err);
  sn_uop *(*tensor_conv2d)(sn_graph *graph, sn_uop *x, sn_uop *w, sn_uop *bias, const int64_t *stride,
                           const int64_t *padding, const int64_t *dilation, int64_t groups, sn_error **err);
  sn_uop *(*tensor_max_pool2d)(sn_graph *graph, sn_uop *x, const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, sn_error **err);
  sn_uop *(*tensor_avg_pool2d)(sn_graph *graph, sn_uop *x, const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, sn_error **err);
  sn_uop *(*tensor_softmax)(sn_graph *graph, sn_uop *x, int64_t axis, sn_error **err);
  sn_uop *(*tensor_log_softmax)(sn_graph *graph, sn_uop *x, int64_t axis, sn_error **err);
  sn_uop *(*tensor_layernorm)(sn_graph *graph, sn_uop *x, int64_t naxes, sn_uop *weight, sn_uop *bias, double eps,
                              sn_error **err);
  sn_uop *(*tensor_relu)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_gelu)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_sigmoid)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_tanh)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_exp)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_log)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_cumsum)(sn_graph *graph, sn_uop *x, int64_t axis, sn_error **err);
  sn_uop *(*tensor_argmax)(sn_graph *graph, sn_uop *x, int64_t axis, int keepdim, sn_error **err);
  sn_uop *(*tensor_cat)(sn_graph *graph, sn_uop *const *xs, size_t n, int64_t axis, sn_error **err);
  sn_uop *(*tensor_stack)(sn_graph *graph, sn_uop *const *xs, size_t n, int64_t axis, sn_error **err);
  sn_uop *(*tensor_one_hot)(sn_graph *graph, sn_uop *idx, int64_t n, sn_dtype dtype, sn_error **err);
  sn_uop *(*tensor_arange)(sn_graph *graph, int64_t n, sn_dtype dtype, sn_error **err);
  sn_uop *(*tensor_gather)(sn_graph *graph, sn_uop *x, int64_t axis, sn_uop *idx, sn_error **err);
  sn_uop *(*tensor_scatter_add)(sn_graph *graph, sn_uop *x, int64_t axis, sn_uop *idx, sn_uop *val, sn_error **err);
  sn_uop *(*tensor_rand)(sn_graph *graph, const int64_t *shape, size_t ndim, uint64_t seed, sn_dtype dtype,
                         sn_error **err);
  sn_uop *(*tensor_randn)(sn_graph *graph, const int64_t *shape, size_t ndim, uint64_t seed, sn_dtype dtype,
                          sn_error **err);
  sn_device *(*device_open)(sn_context *ctx, const char *name, sn_error **err);
  sn_device *(*device_retain)(sn_device *device);
  void (*device_release)(sn_device *device);
  const char *(*device_name)(const sn_device *device, sn_error **err);
  sn_code (*context_set_debug)(sn_context *ctx, int level, sn_error **err);
  int (*context_debug)(const sn_context *ctx, sn_error **err);
  sn_code (*compile_options_init)(sn_compile_options *options, size_t struct_size, sn_error **err);
  sn_program *(*compile)(sn_graph *graph, sn_uop *const *outputs, size_t noutputs, sn_device *device,
                         const sn_compile_options *options, sn_error **err);
  sn_program *(*program_retain)(sn_program *program);
  void (*program_release)(sn_program *program);
  sn_buffer *(*buffer_alloc)(sn_device *device, sn_dtype dtype, const int64_t *shape, size_t ndim, sn_error **err);
  sn_buffer *(*buffer_retain)(sn_buffer *buffer);
  void (*buffer_release)(sn_buffer *buffer);
  sn_buffer *(*buffer_view)(sn_buffer *buffer, int64_t offset, const int64_t *shape, size_t ndim, sn_error **err);
  sn_code (*buffer_copy_in)(sn_buffer *buffer, const void *src, size_t nbytes, sn_error **err);
  sn_code (*buffer_copy_out)(const sn_buffer *buffer, void *dst, size_t nbytes, sn_error **err);
  sn_dtype (*buffer_dtype)(const sn_buffer *buffer, sn_error **err);
  int64_t (*buffer_rank)(const sn_buffer *buffer, sn_error **err);
  int64_t (*buffer_dim)(const sn_buffer *buffer, size_t axis, sn_error **err);
  int64_t (*buffer_numel)(const sn_buffer *buffer, sn_error **err);
  size_t (*buffer_nbytes)(const sn_buffer *buffer, sn_error **err);
  const char *(*buffer_device)(const sn_buffer *buffer, sn_error **err);
  void *(*buffer_host_pointer)(sn_buffer *buffer, sn_error **err);
  sn_code (*program_run)(sn_program *program, sn_buffer *const *inputs, size_t ninputs, sn_buffer *const *outputs,
                         size_t noutputs, sn_error **err);
  sn_buffer *(*program_alloc_output)(sn_program *program, size_t index, sn_error **err);
  size_t (*program_num_inputs)(const sn_program *program, sn_error **err);
  size_t (*program_num_outputs)(const sn_program *program, sn_error **err);
  sn_code (*program_input_info)(const sn_program *program, size_t index, sn_dtype *dtype, int64_t *shape,
                                size_t shape_cap, size_t *ndim, sn_error **err);
  sn_code (*program_output_info)(const sn_program *program, size_t index, sn_dtype *dtype, int64_t *shape,
                                 size_t shape_cap, size_t *ndim, sn_error **err);
  size_t (*program_num_kernels)(const sn_program *program, sn_error **err);
  const char *(*program_kernel_name)(const sn_program *program, size_t index, sn_error **err);
  char *(*program_kernel_source)(const sn_program *program, size_t index, sn_error **err);
  char *(*program_stage)(const sn_program *program, const char *stage, sn_error **err);
  size_t (*program_arena_bytes)(const sn_program *program, sn_error **err);
  /* DLPack (declared in sinter/sinter_dlpack.h) */
  struct sn_dlpack_tensor *(*buffer_to_dlpack)(sn_buffer *buffer, sn_error **err);
  sn_buffer *(*buffer_from_dlpack)(sn_device *device, struct sn_dlpack_tensor *tensor, sn_error **err);
  /* ---- version 3 ---- */
  size_t (*program_num_vars)(const sn_program *program, sn_error **err);
  sn_code (*program_var_info)(const sn_program *program, size_t index, const char **name, int64_t *min, int64_t *max,
                              sn_error **err);
  sn_code (*program_run_vars)(sn_program *program, sn_buffer *const *inputs, size_t ninputs, sn_buffer *const *outputs,
                              size_t noutputs, const char *const *names, const int64_t *values, size_t nvars,
                              sn_error **err);
  /* ---- version 4: devices of every backend, copies between them, C export ---- */
  int (*device_count)(sn_context *ctx, const char *backend, sn_error **err);
  char *(*device_description)(const sn_device *device, sn_error **err);
  sn_code (*buffer_copy)(sn_buffer *dst, const sn_buffer *src, sn_error **err);
  char *(*program_export_c)(const sn_program *program, const char *name, sn_error **err);
  /* ---- version 5: gradients, in-place updates, functions ---- */
  sn_code (*tensor_gradient)(sn_graph *graph, sn_uop *loss, sn_uop *const *wrt, size_t n, sn_uop **grads,
                             sn_error **err);
  sn_uop *(*tensor_detach)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_assign)(sn_graph *graph, sn_uop *target, sn_uop *value, sn_error **err);
  sn_function *(*function_begin)(sn_graph *graph, size_t nparams, const sn_dtype *dtypes, const int64_t *const *shapes,
                                 const size_t *ranks, sn_error **err);
  sn_uop *(*function_param)(sn_function *fn, size_t i, sn_error **err);
  sn_code (*function_end)(sn_function *fn, sn_uop *const *outputs, size_t n, sn_error **err);
  sn_code (*function_set_flags)(sn_function *fn, uint32_t flags, sn_error **err);
  sn_code (*function_call)(sn_graph *graph, sn_function *fn, sn_uop *const *args, size_t nargs, sn_uop **results,
                           sn_error **err);
  sn_uop *(*tensor_index)(sn_graph *graph, sn_uop *x, sn_uop *const *indices, size_t n, sn_error **err);
  sn_uop *(*tensor_slice)(sn_graph *graph, sn_uop *x, int64_t offset, int64_t size, sn_dtype dtype, sn_error **err);
  sn_uop *(*tensor_binary)(sn_graph *graph, const void *data, size_t nbytes, sn_error **err);
  /* ---- version 6: kernel opts, BEAM, the disk cache switch ---- */
  char *(*program_kernel_opts)(const sn_program *program, size_t index, sn_error **err);
  sn_code (*context_set_disk_cache)(sn_context *ctx, int enabled, sn_error **err);
  /* ---- version 7: symbolic shapes ---- */
  sn_uop *(*tensor_input_sym)(sn_graph *graph, sn_dtype dtype, sn_uop *const *dims, size_t ndim, const char *device,
                              sn_error **err);
  sn_buffer *(*program_alloc_output_vars)(sn_program *program, size_t index, const char *const *names,
                                          const int64_t *values, size_t n, sn_error **err);
  /* ---- version 8: symbolic reshape and expand; GPU targets; multi-device ---- */
  sn_uop *(*tensor_reshape_sym)(sn_graph *graph, sn_uop *x, sn_uop *const *dims, size_t ndim, sn_error **err);
  sn_uop *(*tensor_expand_sym)(sn_graph *graph, sn_uop *x, sn_uop *const *dims, size_t ndim, sn_error **err);
  sn_device *(*device_open_target)(sn_context *ctx, const char *backend, const char *arch, sn_error **err);
  const void *(*program_kernel_binary)(const sn_program *program, size_t index, size_t *size, sn_error **err);
  sn_uop *(*tensor_shard)(sn_graph *graph, sn_uop *x, const char *devices, int64_t axis, sn_error **err);
  sn_uop *(*tensor_to)(sn_graph *graph, sn_uop *x, const char *device, sn_error **err);
  sn_uop *(*tensor_broadcast)(sn_graph *graph, sn_uop *x, const char *devices, sn_error **err);
  sn_uop *(*tensor_scatter)(sn_graph *graph, sn_uop *x, const char *devices, sn_error **err);
  sn_uop *(*tensor_gather_devices)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_reduce_devices)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_allgather)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_reduce_scatter)(sn_graph *graph, sn_uop *x, sn_error **err);
  sn_uop *(*tensor_allreduce)(sn_graph *graph, sn_uop *x, sn_error **err);
  /* ---- version 9 entries go below this line; never reorder the ones above ---- */
} sn_api;

/* The signature of sn_get_api, for dlsym. */
typedef const sn_api *(*sn_get_api_fn)(uint32_t api_version);
/* The function table for `api_version` (use SN_API_VERSION), or NULL when the library is older than
   that version (or api_version is 0). The table is static: never freed. */
SN_API const sn_api *sn_get_api(uint32_t api_version);

#ifdef __cplusplus
}
#endif

#endif /* SINTER_SINTER_H */
