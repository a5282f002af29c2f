/* A stand-in for NVIDIA's driver, built as libcuda.so.1 for the CUDA runtime test
 * (test_cuda_fake.c, run with LD_LIBRARY_PATH at this library): the Driver API calls the CUDA
 * backend makes, on host memory, with the checks a real driver makes on its caller (a current
 * context on the calling thread, live device pointers, PTX with the entry asked for). It runs no
 * kernel: cuLaunchKernel records the launch (grid, block, the values of its parameters) for the
 * test to inspect through fake_cuda_*. Numbers are only checked on a real GPU.
 *
 * FAKE_CUDA_REJECT_PTX=1 makes cuModuleLoadDataEx fail with a JIT log, as a driver rejecting PTX;
 * FAKE_CUDA_INIT_FAILS=1 makes cuInit fail (CUDA_ERROR_NO_DEVICE), FAKE_CUDA_NO_DEVICES=1 makes the
 * driver count no device. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  NO_DEVICE = 100,
  INVALID_DEVICE = 101,
  INVALID_CONTEXT = 201,
  INVALID_PTX = 218,
  NOT_FOUND = 500
};

#define MAX_ALLOCS 4096
#define MAX_PARAMS 64
static const size_t kMemory = (size_t)1 << 30; /* what cuMemAlloc can give in all */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized = 0;
static int context_refs = 0;
static int the_context; /* its address is the context handle */
static __thread void *current = NULL;
static struct {
  char *base;
  size_t size;
} allocs[MAX_ALLOCS];
static size_t allocated = 0;
static int alloc_calls = 0, free_calls = 0, launches = 0;
static unsigned last_grid[3], last_block[3];
static int last_nparams = 0, last_live_params = 0;

/* Stream capture: launches go into the graph being captured instead of running. */
#define MAX_RECORDS 256
struct Record {
  unsigned grid[3], block[3];
  int nparams;
  CUdeviceptr params[MAX_PARAMS];
};
struct Graph {
  int n;
  struct Record records[MAX_RECORDS];
};
static struct Graph *capturing = NULL;
static int graphs_instantiated = 0, graph_launches = 0, live_graphs = 0;

struct Function {
  char name[256];
  int nparams;
  struct Function *next; /* the module's other functions */
};
struct Module {
  char *ptx;
  struct Function *functions; /* freed with the module, as a driver's are */
};

static CUresult need_context(void) {
  if (!initialized) return NOT_INITIALIZED;
  return current == &the_context ? OK : INVALID_CONTEXT;
}

/* The allocation that holds address p, or -1. Holds mu. */
static int live(CUdeviceptr p) {
  int i;
  for (i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].base && (char *)(uintptr_t)p >= allocs[i].base &&
        (char *)(uintptr_t)p <= allocs[i].base + allocs[i].size)
      return i;
  return -1;
}
static CUresult need_range(CUdeviceptr p, size_t n) {
  int i;
  pthread_mutex_lock(&mu);
  i = live(p);
  pthread_mutex_unlock(&mu);
  if (i < 0 || (char *)(uintptr_t)p + n > allocs[i].base + allocs[i].size) return INVALID_VALUE;
  return OK;
}

CUresult cuInit(unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  if (getenv("FAKE_CUDA_INIT_FAILS")) return NO_DEVICE; /* as a driver whose GPU is gone */
  initialized = 1;
  return OK;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
    case OK:
      *s = "CUDA_SUCCESS";
      return OK;
    case INVALID_VALUE:
      *s = "CUDA_ERROR_INVALID_VALUE";
      return OK;
    case OUT_OF_MEMORY:
      *s = "CUDA_ERROR_OUT_OF_MEMORY";
      return OK;
    case NOT_INITIALIZED:
      *s = "CUDA_ERROR_NOT_INITIALIZED";
      return OK;
    case NO_DEVICE:
      *s = "CUDA_ERROR_NO_DEVICE";
      return OK;
    case INVALID_DEVICE:
      *s = "CUDA_ERROR_INVALID_DEVICE";
      return OK;
    case INVALID_CONTEXT:
      *s = "CUDA_ERROR_INVALID_CONTEXT";
      return OK;
    case INVALID_PTX:
      *s = "CUDA_ERROR_INVALID_PTX";
      return OK;
    case NOT_FOUND:
      *s = "CUDA_ERROR_NOT_FOUND";
      return OK;
    default:
      *s = NULL;
      return INVALID_VALUE;
  }
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == OUT_OF_MEMORY ? "out of memory" : r == INVALID_CONTEXT ? "invalid device context" : "fake error";
  return OK;
}
CUresult cuDeviceGetCount(int *n) {
  if (!initialized) return NOT_INITIALIZED;
  *n = getenv("FAKE_CUDA_NO_DEVICES") ? 0 : 1;
  return OK;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  if (!initialized) return NOT_INITIALIZED;
  if (ordinal != 0) return INVALID_DEVICE;
  *d = 0;
  return OK;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
  if (d != 0) return INVALID_DEVICE;
  snprintf(name, (size_t)len, "Sinter fake GPU");
  return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  if (d != 0) return INVALID_DEVICE;
  switch (attr) {
    case 1:
    case 2:
    case 3:
      *v = 1024;
      break; /* threads per block, block x, y */
    case 4:
      *v = 64;
      break; /* block z */
    case 5:
      *v = 2147483647;
      break; /* grid x */
    case 6:
    case 7:
      *v = 65535;
      break; /* grid y, z */
    case 8:
      *v = 49152;
      break; /* shared memory per block */
    case 16:
      *v = 132;
      break; /* SMs */
    case 75:
      *v = 9;
      break; /* compute capability 9.0 */
    case 76:
      *v = 0;
      break;
    default:
      *v = 0;
  }
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) {
  if (d != 0) return INVALID_DEVICE;
  *bytes = kMemory;
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
  if (d != 0) return INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  context_refs++;
  pthread_mutex_unlock(&mu);
  *ctx = &the_context;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  if (d != 0) return INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  context_refs--;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuCtxSetCurrent(void *ctx) {
  if (ctx != NULL && ctx != &the_context) return INVALID_CONTEXT;
  current = ctx;
  return OK;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
  CUresult r = need_context();
  (void)flags;
  if (r) return r;
  *s = malloc(1);
  return OK;
}
CUresult cuStreamDestroy_v2(void *s) {
  CUresult r = need_context();
  if (r) return r;
  free(s);
  return OK;
}
CUresult cuStreamSynchronize(void *s) {
  (void)s;
  return need_context();
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  CUresult r = need_context();
  int i;
  if (r) return r;
  if (n == 0) return INVALID_VALUE;
  pthread_mutex_lock(&mu);
  if (allocated + n > kMemory) {
    pthread_mutex_unlock(&mu);
    return OUT_OF_MEMORY;
  }
  for (i = 0; i < MAX_ALLOCS && allocs[i].base; i++) {
  }
  if (i == MAX_ALLOCS) {
    pthread_mutex_unlock(&mu);
    return OUT_OF_MEMORY;
  }
  allocs[i].base = malloc(n);
  allocs[i].size = n;
  allocated += n;
  alloc_calls++;
  *p = (CUdeviceptr)(uintptr_t)allocs[i].base;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  CUresult r = need_context();
  int i;
  if (r) return r;
  pthread_mutex_lock(&mu);
  i = live(p);
  if (i < 0 || allocs[i].base != (char *)(uintptr_t)p) {
    pthread_mutex_unlock(&mu);
    return INVALID_VALUE;
  }
  free(allocs[i].base);
  allocated -= allocs[i].size;
  allocs[i].base = NULL;
  free_calls++;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
  CUresult r = need_context();
  (void)s;
  if (r || (r = need_range(dst, n))) return r;
  memcpy((void *)(uintptr_t)dst, src, n);
  return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
  CUresult r = need_context();
  (void)s;
  if (r || (r = need_range(src, n))) return r;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
  CUresult r = need_context();
  (void)s;
  if (r || (r = need_range(dst, n)) || (r = need_range(src, n))) return r;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return OK;
}
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned nopts, int *opts, void **values) {
  CUresult r = need_context();
  const char *ptx = (const char *)image;
  struct Module *mod;
  unsigned i;
  if (r) return r;
  if (getenv("FAKE_CUDA_REJECT_PTX") || !strstr(ptx, ".version") || !strstr(ptx, ".target sm_") ||
      !strstr(ptx, ".entry")) {
    for (i = 0; i < nopts; i++)
      if (opts[i] == 5) { /* CU_JIT_ERROR_LOG_BUFFER, its size next */
        size_t size = i + 1 < nopts ? (size_t)(uintptr_t)values[i + 1] : 0;
        if (size > 0) snprintf((char *)values[i], size, "ptxas fatal: fake driver rejects this PTX");
      }
    return INVALID_PTX;
  }
  mod = malloc(sizeof *mod);
  mod->functions = NULL;
  mod->ptx = malloc(strlen(ptx) + 1);
  strcpy(mod->ptx, ptx);
  *m = mod;
  return OK;
}
CUresult cuModuleUnload(void *m) {
  CUresult r = need_context();
  struct Module *mod = (struct Module *)m;
  if (r) return r;
  while (mod->functions) {
    struct Function *next = mod->functions->next;
    free(mod->functions);
    mod->functions = next;
  }
  free(mod->ptx);
  free(mod);
  return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  CUresult r = need_context();
  struct Module *mod = (struct Module *)m;
  struct Function *fn;
  char key[300];
  const char *at, *open, *close, *q;
  if (r) return r;
  snprintf(key, sizeof key, ".entry %s(", name);
  at = strstr(mod->ptx, key);
  if (!at || strlen(name) >= sizeof fn->name) return NOT_FOUND;
  fn = calloc(1, sizeof *fn);
  strcpy(fn->name, name);
  open = at + strlen(key);
  close = strchr(open, ')');
  for (q = open; close && (q = strstr(q, ".param")) != NULL && q < close; q += 6) fn->nparams++;
  fn->next = mod->functions;
  mod->functions = fn;
  *f = fn;
  return OK;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
  (void)f;
  if (attr != 0) return INVALID_VALUE;
  *v = 1024;
  return need_context();
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  CUresult r = need_context();
  struct Function *fn = (struct Function *)f;
  int i, alive = 0;
  (void)stream;
  if (r) return r;
  if (!params || extra || shared != 0 || fn->nparams > MAX_PARAMS) return INVALID_VALUE;
  if (bx * by * bz > 1024 || gx == 0 || gy == 0 || gz == 0) return INVALID_VALUE;
  pthread_mutex_lock(&mu);
  if (capturing) {
    struct Record *rec;
    if (capturing->n == MAX_RECORDS) {
      pthread_mutex_unlock(&mu);
      return INVALID_VALUE;
    }
    rec = &capturing->records[capturing->n++];
    rec->grid[0] = gx, rec->grid[1] = gy, rec->grid[2] = gz;
    rec->block[0] = bx, rec->block[1] = by, rec->block[2] = bz;
    rec->nparams = fn->nparams;
    for (i = 0; i < fn->nparams; i++) memcpy(&rec->params[i], params[i], sizeof rec->params[i]);
    pthread_mutex_unlock(&mu);
    return OK;
  }
  for (i = 0; i < fn->nparams; i++) {
    CUdeviceptr v;
    memcpy(&v, params[i], sizeof v); /* every parameter Sinter passes is 8 bytes */
    if (live(v) >= 0) alive++;
  }
  launches++;
  last_grid[0] = gx, last_grid[1] = gy, last_grid[2] = gz;
  last_block[0] = bx, last_block[1] = by, last_block[2] = bz;
  last_nparams = fn->nparams;
  last_live_params = alive;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = malloc(1);
  return need_context();
}
CUresult cuEventDestroy_v2(void *e) {
  free(e);
  return need_context();
}
static int events_recorded = 0;
CUresult cuEventRecord(void *e, void *s) {
  (void)e, (void)s;
  pthread_mutex_lock(&mu);
  events_recorded++;
  pthread_mutex_unlock(&mu);
  return need_context();
}
/* For the test: how many events were recorded (BEAM times kernels between two). */
int fake_cuda_events(void) {
  int n;
  pthread_mutex_lock(&mu);
  n = events_recorded;
  pthread_mutex_unlock(&mu);
  return n;
}
CUresult cuEventSynchronize(void *e) {
  (void)e;
  return need_context();
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  (void)a, (void)b;
  *ms = 0.0f;
  return need_context();
}

CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  CUresult r = need_context();
  (void)s;
  if (r) return r;
  if (mode != 1 || capturing) return INVALID_VALUE;
  capturing = calloc(1, sizeof *capturing);
  return OK;
}
CUresult cuStreamEndCapture(void *s, void **graph) {
  CUresult r = need_context();
  (void)s;
  if (r) return r;
  if (!capturing) return INVALID_VALUE;
  *graph = capturing;
  capturing = NULL;
  return OK;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  CUresult r = need_context();
  struct Graph *g;
  if (r) return r;
  if (flags != 0) return INVALID_VALUE;
  g = malloc(sizeof *g);
  memcpy(g, graph, sizeof *g);
  *exec = g;
  pthread_mutex_lock(&mu);
  graphs_instantiated++;
  live_graphs++;
  pthread_mutex_unlock(&mu);
  return OK;
}
CUresult cuGraphDestroy(void *graph) {
  free(graph);
  return need_context();
}
CUresult cuGraphExecDestroy(void *exec) {
  free(exec);
  pthread_mutex_lock(&mu);
  live_graphs--;
  pthread_mutex_unlock(&mu);
  return need_context();
}
/* Runs the captured launches: each counts as a launch, with its parameters checked as live. */
CUresult cuGraphLaunch(void *exec, void *s) {
  CUresult r = need_context();
  struct Graph *g = (struct Graph *)exec;
  int i, j;
  (void)s;
  if (r) return r;
  pthread_mutex_lock(&mu);
  for (i = 0; i < g->n; i++) {
    struct Record *rec = &g->records[i];
    int alive = 0;
    for (j = 0; j < rec->nparams; j++)
      if (live(rec->params[j]) >= 0) alive++;
    launches++;
    memcpy(last_grid, rec->grid, sizeof last_grid);
    memcpy(last_block, rec->block, sizeof last_block);
    last_nparams = rec->nparams;
    last_live_params = alive;
  }
  graph_launches++;
  pthread_mutex_unlock(&mu);
  return OK;
}

/* ---- for the test ---------------------------------------------------------------------------- */
void fake_cuda_graphs(int *instantiated, int *graph_launches_out, int *live_out) {
  pthread_mutex_lock(&mu);
  *instantiated = graphs_instantiated;
  *graph_launches_out = graph_launches;
  *live_out = live_graphs;
  pthread_mutex_unlock(&mu);
}
void fake_cuda_counts(int *alloc_calls_out, int *free_calls_out, int *launches_out, int *context_refs_out) {
  pthread_mutex_lock(&mu);
  *alloc_calls_out = alloc_calls;
  *free_calls_out = free_calls;
  *launches_out = launches;
  *context_refs_out = context_refs;
  pthread_mutex_unlock(&mu);
}
void fake_cuda_last_launch(unsigned grid[3], unsigned block[3], int *nparams, int *live_params) {
  pthread_mutex_lock(&mu);
  memcpy(grid, last_grid, sizeof last_grid);
  memcpy(block, last_block, sizeof last_block);
  *nparams = last_nparams;
  *live_params = last_live_params;
  pthread_mutex_unlock(&mu);
}
