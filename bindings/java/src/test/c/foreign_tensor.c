/* Test-only JNI library for org.sinter.ForeignTensor (the Java tests): DLPack tensors made the way another
 * library would make them, with float32 data in C memory, any strides and flags, and a deleter that only counts
 * its calls (so a second call shows up as a count of 2, not as a double free). free() releases a tensor. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sinter/sinter_dlpack.h"

typedef struct foreign {
  sn_dlpack_tensor t; /* first: the tensor's address is the struct's */
  int64_t shape[8];
  int64_t strides[8];
  int deleted;
} foreign;

static void foreign_deleter(sn_dlpack_tensor *self) { ((foreign *)self->manager_ctx)->deleted++; }

static foreign *as_foreign(jlong address) { return (foreign *)(intptr_t)address; }

/* create(values, shape, strides or null, flags, dtype code, dtype bits, DLPack major version): the address. */
JNIEXPORT jlong JNICALL Java_org_sinter_ForeignTensor_create(JNIEnv *env, jclass cls, jfloatArray values,
                                                             jlongArray shape, jlongArray strides, jlong flags,
                                                             jint code, jint bits, jint major) {
  jsize n = (*env)->GetArrayLength(env, values), ndim = (*env)->GetArrayLength(env, shape);
  foreign *f;
  float *data;
  (void)cls;
  if (ndim > 8 || (strides != NULL && (*env)->GetArrayLength(env, strides) != ndim)) return 0;
  f = (foreign *)calloc(1, sizeof *f);
  data = (float *)malloc(n > 0 ? (size_t)n * sizeof *data : 1);
  if (f == NULL || data == NULL) {
    free(f);
    free(data);
    return 0;
  }
  (*env)->GetFloatArrayRegion(env, values, 0, n, data);
  (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong *)f->shape);
  if (strides != NULL) (*env)->GetLongArrayRegion(env, strides, 0, ndim, (jlong *)f->strides);
  f->t.version.major = (uint32_t)major;
  f->t.manager_ctx = f;
  f->t.deleter = foreign_deleter;
  f->t.flags = (uint64_t)flags;
  f->t.dl_tensor.data = data;
  f->t.dl_tensor.device.device_type = SN_DLPACK_DEVICE_CPU;
  f->t.dl_tensor.ndim = (int32_t)ndim;
  f->t.dl_tensor.dtype.code = (uint8_t)code;
  f->t.dl_tensor.dtype.bits = (uint8_t)bits;
  f->t.dl_tensor.dtype.lanes = 1;
  f->t.dl_tensor.shape = f->shape;
  f->t.dl_tensor.strides = strides != NULL ? f->strides : NULL;
  return (jlong)(intptr_t)f;
}

JNIEXPORT jint JNICALL Java_org_sinter_ForeignTensor_deleted(JNIEnv *env, jclass cls, jlong address) {
  (void)env;
  (void)cls;
  return as_foreign(address)->deleted;
}

JNIEXPORT jlong JNICALL Java_org_sinter_ForeignTensor_data(JNIEnv *env, jclass cls, jlong address) {
  (void)env;
  (void)cls;
  return (jlong)(intptr_t)as_foreign(address)->t.dl_tensor.data;
}

JNIEXPORT void JNICALL Java_org_sinter_ForeignTensor_free(JNIEnv *env, jclass cls, jlong address) {
  (void)env;
  (void)cls;
  free(as_foreign(address)->t.dl_tensor.data);
  free(as_foreign(address));
}

/* The float at data address + 4 * index: reads memory any DLPack tensor points at. */
JNIEXPORT jfloat JNICALL Java_org_sinter_ForeignTensor_peekFloat(JNIEnv *env, jclass cls, jlong data, jlong index) {
  (void)env;
  (void)cls;
  return ((const float *)(intptr_t)data)[index];
}

JNIEXPORT void JNICALL Java_org_sinter_ForeignTensor_pokeFloat(JNIEnv *env, jclass cls, jlong data, jlong index,
                                                               jfloat value) {
  (void)env;
  (void)cls;
  ((float *)(intptr_t)data)[index] = value;
}
