/* SWIG interface for the Java binding: JNI glue over capi/include/sinter/sinter.h.
 *
 * The generated classes (package org.sinter.jni: SinterNative, SinterNativeJNI, SinterNativeConstants) are
 * the raw layer; the public API is the hand-written facade in org.sinter (Context, Graph, UOp, ...), which owns
 * the handles (AutoCloseable + Cleaner) and turns ints into enums.
 *
 * Mapping rules:
 *   - every handle (sn_context*, sn_graph*, sn_uop*) is a Java long; the facade owns their lifetime
 *   - the trailing `sn_error **err` disappears from the Java signature; a reported error is thrown as
 *     org.sinter.SinterException(code, C message) and freed
 *   - `const int64_t *` inputs are long[]; `sn_uop *const *srcs` is long[] of handles
 *   - out-parameters (int64_t*, double*, int*, sn_uop**) are one-element arrays
 *   - returned `char *` strings become java.lang.String and are freed with sn_string_free
 *   - enums and #defines are plain int constants (SinterNativeConstants)
 * sn_arg has pointers into Java-owned or graph-owned memory, so it is not wrapped as a struct: the snj_* helpers
 * at the end pass its fixed fields as a long[12] (order in org.sinter.Arg) and its arrays separately.
 * Likewise snj_compile takes sn_compile_options as plain arguments, and the typed snj_buffer_copy_* helpers
 * replace the void* copies; snj_gradient and snj_function_call hand back their out arrays, and snj_function_begin
 * takes the parameters' shapes flattened. Not wrapped: the dlopen function table (sn_api, sn_get_api) and raw
 * host pointers, which a JVM has no use for, and the last-error functions, which exceptions replace.
 * DLPack (sinter_dlpack.h): a sn_dlpack_tensor* is a long like the handles; the snj_dlpack_* helpers read its
 * fields and call its deleter, so the facade (org.sinter.DLPackTensor) needs no struct wrappers.
 */
%module(jniclassname="SinterNativeJNI") SinterNative

%{
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sinter/sinter.h>
#include <sinter/sinter_dlpack.h>

/* Throws org.sinter.SinterException(int code, String message) for `e` and frees it. Leaves any exception that
   is already pending (e.g. an OutOfMemoryError from an argument conversion) in place. */
static void snj_throw(JNIEnv *jenv, sn_error *e) {
  if (!(*jenv)->ExceptionCheck(jenv)) {
    jclass cls = (*jenv)->FindClass(jenv, "org/sinter/SinterException");
    if (cls != NULL) {
      jmethodID ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(ILjava/lang/String;)V");
      jstring msg = (*jenv)->NewStringUTF(jenv, sn_error_message(e));
      if (ctor != NULL && msg != NULL) {
        jobject ex = (*jenv)->NewObject(jenv, cls, ctor, (jint)sn_error_code(e), msg);
        if (ex != NULL) (*jenv)->Throw(jenv, (jthrowable)ex);
      }
    }
  }
  sn_error_free(e);
}

/* The arg of `uop` in `a`; 0 (with *err set) on failure. */
static int snj_arg_get(const sn_uop *uop, sn_arg *a, sn_error **err) {
  return sn_arg_init(a, sizeof *a, err) == SN_OK && sn_uop_arg(uop, a, err) == SN_OK;
}
%}

/* The header's attribute macros mean nothing to SWIG's parser. */
#define SN_API
#define SN_NODISCARD

%pragma(java) jniclasscode=%{
  static {
    // libsinterjni.so (this glue, which links libsinter.so.0) from java.library.path, $SINTER_LIB_DIR, beside
    // sinter.jar or the installed lib directory: see NativeLibrary.
    NativeLibrary.load();
  }
%}

/* Fixed-width integers get the typemaps of the Java type that holds them, without SWIG ever deciding what C
   type int64_t is (stdint.i would make it `long long` or, on LP64, a Java int): generated casts say int64_t. */
%apply long long { int64_t };
%apply unsigned int { uint32_t };
%apply long long { uint64_t }; /* seeds: the bit pattern in a Java long */
%include "enumsimple.swg"
%javaconst(1);
/* "1u" is no Java literal: read this one through JNI at class load instead. */
%javaconst(0) SN_API_VERSION;

/* ---- errors: sn_error **err -> exception ---- */
%typemap(in, numinputs=0) sn_error **err (sn_error *tmp = NULL) %{ $1 = &tmp; %}
/* No early return: later freearg typemaps (pinned arrays) must still run; JNI allows their Release calls with
   the exception pending, and Java discards the return value of a call that threw. */
%typemap(argout) sn_error **err %{
  if (tmp$argnum != NULL) snj_throw(jenv, tmp$argnum);
%}

/* ---- handles as long ---- */
%define SN_HANDLE(TYPE)
%typemap(jni) TYPE *, const TYPE * "jlong"
%typemap(jtype) TYPE *, const TYPE * "long"
%typemap(jstype) TYPE *, const TYPE * "long"
%typemap(in) TYPE *, const TYPE * %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE *, const TYPE * %{ $result = (jlong)(intptr_t)$1; %}
%typemap(javain) TYPE *, const TYPE * "$javainput"
%typemap(javaout) TYPE *, const TYPE * { return $jnicall; }
%enddef
SN_HANDLE(sn_context)
SN_HANDLE(sn_graph)
SN_HANDLE(sn_uop)
SN_HANDLE(sn_device)
SN_HANDLE(sn_buffer)
SN_HANDLE(sn_program)
SN_HANDLE(sn_dlpack_tensor)
SN_HANDLE(sn_function)

/* ---- int64 arrays (shapes, axes, offsets) as long[] ---- */
%typemap(jni) const int64_t * "jlongArray"
%typemap(jtype) const int64_t * "long[]"
%typemap(jstype) const int64_t * "long[]"
%typemap(javain) const int64_t * "$javainput"
%typemap(in) const int64_t * %{
  $1 = $input ? (int64_t *)(*jenv)->GetLongArrayElements(jenv, $input, NULL) : NULL;
  if ($input && $1 == NULL) return $null; /* OutOfMemoryError pending */
%}
%typemap(freearg) const int64_t * %{
  if ($1) (*jenv)->ReleaseLongArrayElements(jenv, $input, (jlong *)$1, JNI_ABORT);
%}

/* ---- node arrays as long[] of handles ---- */
%typemap(jni) sn_uop *const *srcs "jlongArray"
%typemap(jtype) sn_uop *const *srcs "long[]"
%typemap(jstype) sn_uop *const *srcs "long[]"
%typemap(javain) sn_uop *const *srcs "$javainput"
%typemap(in) sn_uop *const *srcs %{
  $1 = NULL;
  if ($input) {
    jsize n = (*jenv)->GetArrayLength(jenv, $input), i;
    jlong *h = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (h == NULL) return $null;
    $1 = (sn_uop **)malloc(sizeof(sn_uop *) * (size_t)(n > 0 ? n : 1));
    if ($1 != NULL)
      for (i = 0; i < n; i++) $1[i] = (sn_uop *)(intptr_t)h[i];
    (*jenv)->ReleaseLongArrayElements(jenv, $input, h, JNI_ABORT);
    if ($1 == NULL) {
      (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"), "sinter: srcs");
      return $null;
    }
  }
%}
%typemap(freearg) sn_uop *const *srcs %{ free((void *)$1); %}
%apply sn_uop *const *srcs {
  sn_uop *const *outputs, sn_uop *const *inputs, sn_uop *const *xs, sn_uop *const *indices, sn_uop *const *args, sn_uop *const *dims
};

/* ---- buffer arrays as long[] of handles ---- */
%typemap(jni) sn_buffer *const * "jlongArray"
%typemap(jtype) sn_buffer *const * "long[]"
%typemap(jstype) sn_buffer *const * "long[]"
%typemap(javain) sn_buffer *const * "$javainput"
%typemap(in) sn_buffer *const * %{
  $1 = NULL;
  if ($input) {
    jsize n = (*jenv)->GetArrayLength(jenv, $input), i;
    jlong *h = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (h == NULL) return $null;
    $1 = (sn_buffer **)malloc(sizeof(sn_buffer *) * (size_t)(n > 0 ? n : 1));
    if ($1 != NULL)
      for (i = 0; i < n; i++) $1[i] = (sn_buffer *)(intptr_t)h[i];
    (*jenv)->ReleaseLongArrayElements(jenv, $input, h, JNI_ABORT);
    if ($1 == NULL) {
      (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"), "sinter: buffers");
      return $null;
    }
  }
%}
%typemap(freearg) sn_buffer *const * %{ free((void *)$1); %}

/* ---- launch-time variables: names in as String[], one name out as String[1] ---- */
%typemap(jni) const char *const *names "jobjectArray"
%typemap(jtype) const char *const *names "String[]"
%typemap(jstype) const char *const *names "String[]"
%typemap(javain) const char *const *names "$javainput"
/* The jstrings are kept (local refs) so that freearg only calls Release/DeleteLocalRef, the JNI calls allowed
   while the error typemap's exception is pending. */
%typemap(in) const char *const *names (jsize count = 0, jstring *refs = NULL) %{
  $1 = NULL;
  if ($input) {
    const char **names_ = NULL;
    jsize i;
    count = (*jenv)->GetArrayLength(jenv, $input);
    names_ = (const char **)calloc((size_t)(count > 0 ? count : 1), sizeof(char *));
    refs = (jstring *)calloc((size_t)(count > 0 ? count : 1), sizeof(jstring));
    if (names_ == NULL || refs == NULL) {
      free((void *)names_);
      free(refs);
      refs = NULL;
      (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"), "sinter: names");
      return $null;
    }
    for (i = 0; i < count; i++) {
      refs[i] = (jstring)(*jenv)->GetObjectArrayElement(jenv, $input, i);
      names_[i] = refs[i] ? (*jenv)->GetStringUTFChars(jenv, refs[i], NULL) : NULL; /* NULL: the C API reports it */
    }
    $1 = ($1_ltype)names_;
  }
%}
%typemap(freearg) const char *const *names %{
  if ($1) {
    jsize i;
    for (i = 0; i < count$argnum; i++)
      if (refs$argnum[i]) {
        if ($1[i]) (*jenv)->ReleaseStringUTFChars(jenv, refs$argnum[i], $1[i]);
        (*jenv)->DeleteLocalRef(jenv, refs$argnum[i]);
      }
    free((void *)$1);
    free(refs$argnum);
  }
%}
/* The same for the compile options' forced kernel opts, one "<kernel id>: <opts>" line each (API version 6). */
%apply const char *const *names { const char *const *kernel_opts };
%typemap(jni) const char **name "jobjectArray"
%typemap(jtype) const char **name "String[]"
%typemap(jstype) const char **name "String[]"
%typemap(javain) const char **name "$javainput"
%typemap(in) const char **name (const char *tmp = NULL) %{ $1 = ($1_ltype)&tmp; %}
%typemap(argout) const char **name %{
  if ($input != NULL && tmp$argnum != NULL && (*jenv)->GetArrayLength(jenv, $input) > 0) {
    jstring s = (*jenv)->NewStringUTF(jenv, tmp$argnum);
    if (s) (*jenv)->SetObjectArrayElement(jenv, $input, 0, s);
  }
%}

/* ---- typed host arrays for buffer copies: (const T *in_data, size_t in_count) and (T *out_data,
   size_t out_count) as Java primitive arrays; counts are elements ---- */
%define SN_JARRAY(CT, JNIARRAY, JT, JELEM, GETTER, RELEASER)
%typemap(jni) (const CT *in_data, size_t in_count), (CT *out_data, size_t out_count) #JNIARRAY
%typemap(jtype) (const CT *in_data, size_t in_count), (CT *out_data, size_t out_count) #JT "[]"
%typemap(jstype) (const CT *in_data, size_t in_count), (CT *out_data, size_t out_count) #JT "[]"
%typemap(javain) (const CT *in_data, size_t in_count), (CT *out_data, size_t out_count) "$javainput"
%typemap(in) (const CT *in_data, size_t in_count), (CT *out_data, size_t out_count) %{
  $1 = $input ? (CT *)(*jenv)->GETTER(jenv, $input, NULL) : NULL;
  $2 = $input ? (size_t)(*jenv)->GetArrayLength(jenv, $input) : 0;
  if ($input && $1 == NULL) return $null;
%}
%typemap(freearg) (const CT *in_data, size_t in_count) %{
  if ($1) (*jenv)->RELEASER(jenv, $input, (JELEM *)$1, JNI_ABORT);
%}
/* Mode 0: copy the elements back into the Java array. */
%typemap(freearg) (CT *out_data, size_t out_count) %{
  if ($1) (*jenv)->RELEASER(jenv, $input, (JELEM *)$1, 0);
%}
%enddef
SN_JARRAY(float, jfloatArray, float, jfloat, GetFloatArrayElements, ReleaseFloatArrayElements)
SN_JARRAY(double, jdoubleArray, double, jdouble, GetDoubleArrayElements, ReleaseDoubleArrayElements)
SN_JARRAY(int8_t, jbyteArray, byte, jbyte, GetByteArrayElements, ReleaseByteArrayElements)
SN_JARRAY(int32_t, jintArray, int, jint, GetIntArrayElements, ReleaseIntArrayElements)
SN_JARRAY(int64_t, jlongArray, long, jlong, GetLongArrayElements, ReleaseLongArrayElements)

/* ---- out-parameters as one-element arrays ---- */
%define SN_OUT(CTYPE, JNITYPE, JTYPE, JARRAY, SETTER, ...)
%typemap(jni) CTYPE *OUTPUT1 #JARRAY
%typemap(jtype) CTYPE *OUTPUT1 #JTYPE "[]"
%typemap(jstype) CTYPE *OUTPUT1 #JTYPE "[]"
%typemap(javain) CTYPE *OUTPUT1 "$javainput"
%typemap(in) CTYPE *OUTPUT1 (CTYPE tmp = 0) %{ $1 = &tmp; %}
%typemap(argout) CTYPE *OUTPUT1 %{
  if ($input != NULL && (*jenv)->GetArrayLength(jenv, $input) > 0) {
    JNITYPE v = (JNITYPE)tmp$argnum;
    (*jenv)->SETTER(jenv, $input, 0, 1, &v);
  }
%}
%apply CTYPE *OUTPUT1 { __VA_ARGS__ };
%enddef
SN_OUT(int64_t, jlong, long, jlongArray, SetLongArrayRegion, int64_t *value, int64_t *min, int64_t *max)
SN_OUT(double, jdouble, double, jdoubleArray, SetDoubleArrayRegion, double *min, double *max)
SN_OUT(int, jint, int, jintArray, SetIntArrayRegion, int *clamped)

%typemap(jni) sn_uop **sym "jlongArray"
%typemap(jtype) sn_uop **sym "long[]"
%typemap(jstype) sn_uop **sym "long[]"
%typemap(javain) sn_uop **sym "$javainput"
%typemap(in) sn_uop **sym (sn_uop *tmp = NULL) %{ $1 = &tmp; %}
%typemap(argout) sn_uop **sym %{
  if ($input != NULL && (*jenv)->GetArrayLength(jenv, $input) > 0) {
    jlong v = (jlong)(intptr_t)tmp$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &v);
  }
%}

/* ---- sn_arg's fixed fields as long[12] out ---- */
%typemap(jni) int64_t *fields12 "jlongArray"
%typemap(jtype) int64_t *fields12 "long[]"
%typemap(jstype) int64_t *fields12 "long[]"
%typemap(javain) int64_t *fields12 "$javainput"
%typemap(in) int64_t *fields12 (int64_t tmp[12]) %{
  memset(tmp, 0, sizeof tmp);
  $1 = tmp;
%}
%typemap(argout) int64_t *fields12 %{
  if ($input != NULL && (*jenv)->GetArrayLength(jenv, $input) >= 12)
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 12, (const jlong *)tmp$argnum);
%}

/* ---- bytes in (Binary data, names) as byte[] ---- */
%typemap(jni) (const void *bytes, size_t nbytes) "jbyteArray"
%typemap(jtype) (const void *bytes, size_t nbytes) "byte[]"
%typemap(jstype) (const void *bytes, size_t nbytes) "byte[]"
%typemap(javain) (const void *bytes, size_t nbytes) "$javainput"
%typemap(in) (const void *bytes, size_t nbytes) %{
  $1 = $input ? (void *)(*jenv)->GetByteArrayElements(jenv, $input, NULL) : NULL;
  $2 = $input ? (size_t)(*jenv)->GetArrayLength(jenv, $input) : 0;
  if ($input && $1 == NULL) return $null;
%}
%typemap(freearg) (const void *bytes, size_t nbytes) %{
  if ($1) (*jenv)->ReleaseByteArrayElements(jenv, $input, (jbyte *)$1, JNI_ABORT);
%}
%apply (const void *bytes, size_t nbytes) { (const void *data, size_t nbytes) }; /* sn_tensor_binary */

/* ---- strings we own: copy, then sn_string_free ---- */
%newobject sn_uop_device;
%newobject sn_uop_to_string;
%newobject sn_uop_to_tree;
%newobject sn_uop_to_dot;
%newobject sn_device_description;
%newobject sn_program_kernel_source;
%newobject sn_program_kernel_opts;
%newobject sn_program_stage;
%newobject sn_program_export_c;
%typemap(newfree) char * "sn_string_free($1);";

/* ---- not wrapped ---- */
%ignore sn_error_code;
%ignore sn_error_message;
%ignore sn_error_free;
%ignore sn_string_free;
%ignore sn_arg;
%ignore sn_arg_init;
%ignore sn_uop_new;
%ignore sn_uop_arg;
%ignore sn_last_error_code;
%ignore sn_last_error_message;
%ignore sn_clear_last_error;
%ignore sn_compile_options;
%ignore sn_compile_options_init;
%ignore sn_compile;
%ignore sn_tensor_gradient; /* bound by hand below (its grads[] is an out array) */
%ignore sn_function_begin; /* bound by hand below (its shapes are an array of arrays) */
%ignore sn_function_call;  /* bound by hand below (its results[] is an out array) */
%ignore sn_buffer_copy_in;
%ignore sn_buffer_copy_out;
%ignore sn_buffer_host_pointer;
%ignore sn_program_input_info;
%ignore sn_program_output_info;
%ignore sn_api;
%ignore sn_get_api;
%ignore sn_get_api_fn;
%ignore sn_program_kernel_binary; /* bound as snj_program_kernel_binary_* below (a borrowed void *) */

%include <sinter/sinter.h>

/* ---- DLPack: the two functions and the constants; the structs are read by snj_dlpack_* below ---- */
%javaconst(0) SN_DLPACK_FLAG_READ_ONLY; /* "1u" */
%javaconst(0) SN_DLPACK_FLAG_IS_COPIED;
%ignore sn_dlpack_version;
%ignore sn_dlpack_device;
%ignore sn_dlpack_dtype;
%ignore sn_dlpack_dl_tensor;
%ignore sn_dlpack_tensor;
%include <sinter/sinter_dlpack.h>

%inline %{
/* The fixed fields of a DLPack tensor, in this order: version major, version minor, data, byte_offset, ndim,
   dtype code, dtype bits, dtype lanes, device type, device id, flags, and 1 when strides is not NULL. */
void snj_dlpack_fields(const sn_dlpack_tensor *t, int64_t *fields12) {
  if (t == NULL) return;
  fields12[0] = t->version.major;
  fields12[1] = t->version.minor;
  fields12[2] = (int64_t)(intptr_t)t->dl_tensor.data;
  fields12[3] = (int64_t)t->dl_tensor.byte_offset;
  fields12[4] = t->dl_tensor.ndim;
  fields12[5] = t->dl_tensor.dtype.code;
  fields12[6] = t->dl_tensor.dtype.bits;
  fields12[7] = t->dl_tensor.dtype.lanes;
  fields12[8] = t->dl_tensor.device.device_type;
  fields12[9] = t->dl_tensor.device.device_id;
  fields12[10] = (int64_t)t->flags;
  fields12[11] = t->dl_tensor.strides != NULL;
}

/* shape (strides = 0) or strides (strides = 1) into out_data[out_count], out_count = ndim. */
void snj_dlpack_dims(const sn_dlpack_tensor *t, int strides, int64_t *out_data, size_t out_count) {
  const int64_t *src;
  size_t i;
  if (t == NULL || t->dl_tensor.ndim < 0) return;
  src = strides ? t->dl_tensor.strides : t->dl_tensor.shape;
  for (i = 0; src != NULL && i < out_count && i < (size_t)t->dl_tensor.ndim; i++) out_data[i] = src[i];
}

/* Calls the tensor's deleter (DLPack: its owner does, exactly once; a NULL deleter frees nothing). */
void snj_dlpack_delete(sn_dlpack_tensor *t) {
  if (t != NULL && t->deleter != NULL) t->deleter(t);
}
%}

/* ---- sn_arg through flat fields: fields / fields12 = {kind, int_value, nints, dtype, reduce_op, str_len, id,
   axis_type, addrspace, size, min, max} ---- */
%inline %{
/* sn_uop_new with the arg given as flat fields (bytes: the str of STRING and VAR args). */
sn_uop *snj_uop_new(sn_graph *graph, sn_op op, sn_dtype dtype, sn_uop *const *srcs, size_t nsrcs,
                    const int64_t *fields, double float_value, const int64_t *ints, size_t nints,
                    const void *bytes, size_t nbytes, const char *device, sn_error **err) {
  sn_arg a;
  if (sn_arg_init(&a, sizeof a, err) != SN_OK) return NULL;
  if (fields != NULL) {
    a.kind = (sn_arg_kind)fields[0];
    a.int_value = fields[1];
    a.dtype = (sn_dtype)fields[3];
    a.reduce_op = (sn_op)fields[4];
    a.id = fields[6];
    a.axis_type = (sn_axis_type)fields[7];
    a.addrspace = (sn_addrspace)fields[8];
    a.size = fields[9];
    a.min = fields[10];
    a.max = fields[11];
  }
  a.float_value = float_value;
  a.ints = ints;
  a.nints = nints;
  a.str = (const char *)bytes;
  a.str_len = nbytes;
  a.device = device;
  return sn_uop_new(graph, op, dtype, srcs, nsrcs, fields != NULL ? &a : NULL, err);
}

/* The fixed fields of the arg of `uop` (order above). */
void snj_uop_arg_fields(const sn_uop *uop, int64_t *fields12, sn_error **err) {
  sn_arg a;
  if (!snj_arg_get(uop, &a, err)) return;
  fields12[0] = a.kind;
  fields12[1] = a.int_value;
  fields12[2] = (int64_t)a.nints;
  fields12[3] = a.dtype;
  fields12[4] = a.reduce_op;
  fields12[5] = (int64_t)a.str_len;
  fields12[6] = a.id;
  fields12[7] = a.axis_type;
  fields12[8] = a.addrspace;
  fields12[9] = a.size;
  fields12[10] = a.min;
  fields12[11] = a.max;
}

double snj_uop_arg_float(const sn_uop *uop, sn_error **err) {
  sn_arg a;
  return snj_arg_get(uop, &a, err) ? a.float_value : 0.0;
}

/* ints[i] of the arg (the caller bounds i by nints). */
int64_t snj_uop_arg_int_at(const sn_uop *uop, size_t i, sn_error **err) {
  sn_arg a;
  return snj_arg_get(uop, &a, err) && i < a.nints ? a.ints[i] : 0;
}

/* str[i] of the arg as 0..255 (the caller bounds i by str_len). */
int snj_uop_arg_byte_at(const sn_uop *uop, size_t i, sn_error **err) {
  sn_arg a;
  return snj_arg_get(uop, &a, err) && i < a.str_len ? (unsigned char)a.str[i] : 0;
}

/* The device of the arg ("" for none); borrowed from the graph. */
const char *snj_uop_arg_device(const sn_uop *uop, sn_error **err) {
  sn_arg a;
  return snj_arg_get(uop, &a, err) && a.device != NULL ? a.device : "";
}
%}

/* ---- (API version 8) kernel binaries as byte[]: the size, then the bytes ---- */
%inline %{
size_t snj_program_kernel_binary_size(const sn_program *program, size_t index, sn_error **err) {
  size_t size = 0;
  return sn_program_kernel_binary(program, index, &size, err) != NULL ? size : 0;
}

/* The first out_count bytes of the binary into out_data. */
void snj_program_kernel_binary_copy(const sn_program *program, size_t index, int8_t *out_data, size_t out_count,
                                    sn_error **err) {
  size_t size = 0;
  const void *bin = sn_program_kernel_binary(program, index, &size, err);
  if (bin != NULL && out_data != NULL) memcpy(out_data, bin, size < out_count ? size : out_count);
}
%}

/* ---- compile, copies and program info without structs or void* ---- */
%inline %{
/* sn_compile with the options as arguments (debug -1 = the context's; inputs NULL = the default order; beam -1 =
   the default, $SN_BEAM else 0). */
sn_program *snj_compile(sn_graph *graph, sn_uop *const *outputs, size_t noutputs, sn_device *device, int debug,
                        int optimize, int threads, int keep_stages, int use_cache, sn_uop *const *inputs,
                        size_t ninputs, int has_inputs, sn_uop *const *xs, size_t neffects, int beam,
                        const char *const *kernel_opts, size_t nkernel_opts, sn_error **err) {
  sn_compile_options o;
  if (sn_compile_options_init(&o, sizeof o, err) != SN_OK) return NULL;
  o.debug = debug;
  o.optimize = optimize;
  o.threads = threads;
  o.keep_stages = keep_stages;
  o.use_cache = use_cache;
  if (has_inputs) {
    o.inputs = inputs;
    o.ninputs = ninputs;
  }
  o.effects = xs; /* the in-place updates (API version 5) */
  o.neffects = neffects;
  if (beam != -1) o.beam = beam; /* API version 6 */
  o.kernel_opts = kernel_opts;
  o.nkernel_opts = nkernel_opts;
  return sn_compile(graph, outputs, noutputs, device, &o, err);
}

/* grads[i] of sn_tensor_gradient(graph, loss, xs, n). The graph hash-conses, so asking for each i in turn
   builds the gradient graph once. NULL with *err set on failure. */
sn_uop *snj_gradient(sn_graph *graph, sn_uop *loss, sn_uop *const *xs, size_t n, size_t i, sn_error **err) {
  sn_uop **grads = (sn_uop **)calloc(n > 0 ? n : 1, sizeof *grads);
  sn_uop *out = NULL;
  if (grads == NULL) return NULL;
  if (sn_tensor_gradient(graph, loss, xs, n, grads, err) == SN_OK && i < n) out = grads[i];
  free(grads);
  return out;
}

/* sn_function_begin with the parameters' shapes flattened: parameter k has dtypes[k] and the next ranks[k] of
   dims[0..ndims-1]. A parameter whose dims run past ndims is passed with a NULL shape, which the library reports.
   NULL without *err on an allocation failure. */
sn_function *snj_function_begin(sn_graph *graph, const int64_t *dtypes, const int64_t *ranks, size_t nparams,
                                const int64_t *dims, size_t ndims, sn_error **err) {
  sn_dtype *dt;
  size_t *rk, k, at = 0;
  const int64_t **sh;
  sn_function *fn = NULL;
  /* missing arrays: the library names them */
  if (nparams > 0 && (dtypes == NULL || ranks == NULL)) return sn_function_begin(graph, nparams, NULL, NULL, NULL, err);
  dt = (sn_dtype *)calloc(nparams > 0 ? nparams : 1, sizeof *dt);
  rk = (size_t *)calloc(nparams > 0 ? nparams : 1, sizeof *rk);
  sh = (const int64_t **)calloc(nparams > 0 ? nparams : 1, sizeof *sh);
  if (dt != NULL && rk != NULL && sh != NULL) {
    for (k = 0; k < nparams; k++) {
      dt[k] = (sn_dtype)dtypes[k];
      rk[k] = ranks[k] < 0 ? 0 : (size_t)ranks[k];
      sh[k] = rk[k] > 0 && dims != NULL && rk[k] <= ndims - at ? dims + at : NULL;
      if (sh[k] != NULL) at += rk[k];
    }
    fn = sn_function_begin(graph, nparams, dt, sh, rk, err);
  }
  free(dt);
  free(rk);
  free((void *)sh);
  return fn;
}

/* sn_function_call with the results as handles in out_data[out_count]; out_count must be the function's number
   of outputs (the facade, org.sinter.Function, counts them at sn_function_end). */
sn_code snj_function_call(sn_graph *graph, sn_function *fn, sn_uop *const *args, size_t nargs, int64_t *out_data,
                          size_t out_count, sn_error **err) {
  sn_uop **res = (sn_uop **)calloc(out_count > 0 ? out_count : 1, sizeof *res);
  sn_code c;
  size_t i;
  if (res == NULL) return SN_E_OUT_OF_MEMORY;
  c = sn_function_call(graph, fn, args, nargs, res, err);
  if (c == SN_OK)
    for (i = 0; i < out_count; i++) out_data[i] = (int64_t)(intptr_t)res[i];
  free(res);
  return c;
}

sn_code snj_copy_in_f32(sn_buffer *b, const float *in_data, size_t in_count, sn_error **err) {
  return sn_buffer_copy_in(b, in_data, in_count * sizeof *in_data, err);
}
sn_code snj_copy_in_f64(sn_buffer *b, const double *in_data, size_t in_count, sn_error **err) {
  return sn_buffer_copy_in(b, in_data, in_count * sizeof *in_data, err);
}
sn_code snj_copy_in_i8(sn_buffer *b, const int8_t *in_data, size_t in_count, sn_error **err) {
  return sn_buffer_copy_in(b, in_data, in_count * sizeof *in_data, err);
}
sn_code snj_copy_in_i32(sn_buffer *b, const int32_t *in_data, size_t in_count, sn_error **err) {
  return sn_buffer_copy_in(b, in_data, in_count * sizeof *in_data, err);
}
sn_code snj_copy_in_i64(sn_buffer *b, const int64_t *in_data, size_t in_count, sn_error **err) {
  return sn_buffer_copy_in(b, in_data, in_count * sizeof *in_data, err);
}
sn_code snj_copy_out_f32(const sn_buffer *b, float *out_data, size_t out_count, sn_error **err) {
  return sn_buffer_copy_out(b, out_data, out_count * sizeof *out_data, err);
}
sn_code snj_copy_out_f64(const sn_buffer *b, double *out_data, size_t out_count, sn_error **err) {
  return sn_buffer_copy_out(b, out_data, out_count * sizeof *out_data, err);
}
sn_code snj_copy_out_i8(const sn_buffer *b, int8_t *out_data, size_t out_count, sn_error **err) {
  return sn_buffer_copy_out(b, out_data, out_count * sizeof *out_data, err);
}
sn_code snj_copy_out_i32(const sn_buffer *b, int32_t *out_data, size_t out_count, sn_error **err) {
  return sn_buffer_copy_out(b, out_data, out_count * sizeof *out_data, err);
}
sn_code snj_copy_out_i64(const sn_buffer *b, int64_t *out_data, size_t out_count, sn_error **err) {
  return sn_buffer_copy_out(b, out_data, out_count * sizeof *out_data, err);
}

/* dtype of input (output = 0) or output (output = 1) `index`. (The sn_code is redundant: *err reports.) */
int snj_program_io_dtype(const sn_program *p, int output, size_t index, sn_error **err) {
  sn_dtype dt = SN_DTYPE_INVALID;
  sn_code c = output ? sn_program_output_info(p, index, &dt, NULL, 0, NULL, err)
                     : sn_program_input_info(p, index, &dt, NULL, 0, NULL, err);
  return c == SN_OK ? (int)dt : (int)SN_DTYPE_INVALID;
}

/* Rank of input/output `index` (0 on failure). */
size_t snj_program_io_rank(const sn_program *p, int output, size_t index, sn_error **err) {
  size_t ndim = 0;
  sn_code c = output ? sn_program_output_info(p, index, NULL, NULL, 0, &ndim, err)
                     : sn_program_input_info(p, index, NULL, NULL, 0, &ndim, err);
  return c == SN_OK ? ndim : 0;
}

/* Shape of input/output `index` into out_data[out_count] (out_count = the rank). */
void snj_program_io_shape(const sn_program *p, int output, size_t index, int64_t *out_data, size_t out_count,
                          sn_error **err) {
  size_t ndim = 0;
  sn_code c = output ? sn_program_output_info(p, index, NULL, out_data, out_count, &ndim, err)
                     : sn_program_input_info(p, index, NULL, out_data, out_count, &ndim, err);
  (void)c;
}
%}
