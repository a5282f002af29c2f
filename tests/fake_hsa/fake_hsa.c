/* A stand-in for ROCm's HSA runtime, built as libhsa-runtime64.so.1 for the AMD runtime test
 * (test_amd_fake.c, run with LD_LIBRARY_PATH at this library): the calls the AMD backend makes, on
 * host memory, with the checks a real runtime makes on its caller (live pool allocations, memory
 * the GPU was allowed to access, code objects that are ELF files holding the symbol asked for,
 * well-formed AQL dispatch packets behind the doorbell). One CPU agent and one "gfx942" GPU agent.
 * It runs no kernel: a dispatch is checked and recorded (grid, work-group, its kernel arguments),
 * then completed (its completion signal decremented), for the test to inspect through
 * fake_hsa_*. Numbers are only checked on a real GPU.
 *
 * FAKE_HSA_INIT_FAILS=1 makes hsa_init fail; FAKE_HSA_NO_GPU=1 leaves only the CPU agent;
 * FAKE_HSA_DEVICE_BYTES=n limits what the GPU's pool can hold. */
#define _GNU_SOURCE /* memmem */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hsa_status_t;
typedef struct {
  uint64_t handle;
} handle_t;
typedef handle_t hsa_agent_t, hsa_signal_t, hsa_amd_memory_pool_t, hsa_executable_t, hsa_executable_symbol_t,
    hsa_code_object_reader_t, hsa_loaded_code_object_t;

enum {
  OK = 0,
  INFO_BREAK = 1,
  ERROR = 0x1000,
  INVALID_ARGUMENT = 0x1001,
  INVALID_AGENT = 0x1003,
  OUT_OF_RESOURCES = 0x1008,
  NOT_INITIALIZED = 0x100B,
  INVALID_CODE_OBJECT = 0x1010,
  INVALID_SYMBOL_NAME = 0x1013
};

typedef struct {
  uint32_t type, features;
  void *base_address;
  hsa_signal_t doorbell_signal;
  uint32_t size, reserved1;
  uint64_t id;
} hsa_queue_t;

typedef struct {
  uint16_t header, setup, wg[3], reserved0;
  uint32_t grid[3], private_segment_size, group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} packet_t;

#define MAX_ALLOCS 4096
#define MAX_KERNELS 1024
enum { CPU = 1, GPU = 2, GPU_POOL = 10, CPU_POOL = 20 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized = 0;
static struct {
  char *base;
  size_t size;
  int pool, gpu_access;
} allocs[MAX_ALLOCS];
static size_t device_bytes = 0;
static int alloc_calls = 0, free_calls = 0, dispatches = 0, live_executables = 0, copies = 0;
static uint32_t last_grid[3];
static uint16_t last_wg[3];
static uint64_t last_args[8];
static int last_args_live = 0; /* how many of the first words are live GPU allocations */

typedef struct {
  int64_t value;
} signal_t;

typedef struct {
  hsa_queue_t q;
  uint64_t write, read;
  signal_t doorbell;
} queue_t;

typedef struct {
  char *code;
  size_t size;
  int loaded, frozen;
} executable_t;
static uint64_t kernel_objects[MAX_KERNELS]; /* kernel object ids handed out */
static int nkernels = 0;

static int find_alloc(const void *p) {
  int i;
  for (i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].base && (const char *)p >= allocs[i].base && (const char *)p < allocs[i].base + allocs[i].size)
      return i;
  return -1;
}

hsa_status_t hsa_init(void) {
  if (getenv("FAKE_HSA_INIT_FAILS")) return OUT_OF_RESOURCES;
  initialized++;
  return OK;
}
hsa_status_t hsa_status_string(hsa_status_t s, const char **text) {
  switch (s) {
    case OUT_OF_RESOURCES:
      *text = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: the runtime failed to allocate the necessary resources";
      return OK;
    case INVALID_CODE_OBJECT:
      *text = "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: the code object is invalid";
      return OK;
    case INVALID_SYMBOL_NAME:
      *text = "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: there is no symbol with the given name";
      return OK;
    default:
      return INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_iterate_agents(hsa_status_t (*cb)(hsa_agent_t, void *), void *data) {
  hsa_agent_t a;
  hsa_status_t s;
  if (!initialized) return NOT_INITIALIZED;
  a.handle = CPU;
  if ((s = cb(a, data)) != OK) return s == INFO_BREAK ? OK : s;
  if (getenv("FAKE_HSA_NO_GPU")) return OK;
  a.handle = GPU;
  s = cb(a, data);
  return s == INFO_BREAK ? OK : s;
}

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, int attribute, void *value) {
  int gpu = agent.handle == GPU;
  if (!initialized) return NOT_INITIALIZED;
  if (agent.handle != CPU && agent.handle != GPU) return INVALID_AGENT;
  switch (attribute) {
    case 0: /* NAME, char[64] */
      strcpy((char *)value, gpu ? "gfx942" : "Fake CPU");
      return OK;
    case 6: /* WAVEFRONT_SIZE */
      *(uint32_t *)value = gpu ? 64 : 1;
      return OK;
    case 7: { /* WORKGROUP_MAX_DIM */
      uint16_t *d = (uint16_t *)value;
      d[0] = d[1] = d[2] = 1024;
      return OK;
    }
    case 8: /* WORKGROUP_MAX_SIZE */
      *(uint32_t *)value = 1024;
      return OK;
    case 14: /* QUEUE_MAX_SIZE */
      *(uint32_t *)value = gpu ? 131072 : 0;
      return OK;
    case 17: /* DEVICE */
      *(int *)value = gpu ? 1 : 0;
      return OK;
    case 0xA002: /* COMPUTE_UNIT_COUNT */
      *(uint32_t *)value = gpu ? 304 : 2;
      return OK;
    case 0xA009: /* PRODUCT_NAME */
      strcpy((char *)value, gpu ? "Fake Instinct MI300X" : "Fake CPU");
      return OK;
    default:
      return INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t agent, hsa_status_t (*cb)(hsa_amd_memory_pool_t, void *),
                                                void *data) {
  hsa_amd_memory_pool_t p;
  hsa_status_t s;
  if (agent.handle != CPU && agent.handle != GPU) return INVALID_AGENT;
  p.handle = agent.handle == GPU ? GPU_POOL : CPU_POOL;
  s = cb(p, data);
  return s == INFO_BREAK ? OK : s;
}

hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, int attribute, void *value) {
  switch (attribute) {
    case 0: /* SEGMENT: global */
      *(int *)value = 0;
      return OK;
    case 1: /* GLOBAL_FLAGS: the GPU's is coarse-grained; the CPU's fine-grained and for kernel arguments */
      *(uint32_t *)value = pool.handle == GPU_POOL ? 4u : 3u;
      return OK;
    case 5: /* RUNTIME_ALLOC_ALLOWED */
      *(int8_t *)value = 1;
      return OK;
    default:
      return INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void **ptr) {
  int i;
  const char *limit = getenv("FAKE_HSA_DEVICE_BYTES");
  (void)flags;
  if (pool.handle != GPU_POOL && pool.handle != CPU_POOL) return INVALID_ARGUMENT;
  if (size == 0 || !ptr) return INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  alloc_calls++;
  if (pool.handle == GPU_POOL && limit && device_bytes + size > (size_t)atoll(limit)) {
    pthread_mutex_unlock(&mu);
    return OUT_OF_RESOURCES;
  }
  for (i = 0; i < MAX_ALLOCS && allocs[i].base; i++) {
  }
  if (i == MAX_ALLOCS) {
    pthread_mutex_unlock(&mu);
    return OUT_OF_RESOURCES;
  }
  allocs[i].base = calloc(1, size);
  allocs[i].size = size;
  allocs[i].pool = (int)pool.handle;
  allocs[i].gpu_access = pool.handle == GPU_POOL;
  if (pool.handle == GPU_POOL) device_bytes += size;
  *ptr = allocs[i].base;
  pthread_mutex_unlock(&mu);
  return OK;
}

hsa_status_t hsa_amd_memory_pool_free(void *ptr) {
  int i;
  pthread_mutex_lock(&mu);
  for (i = 0; i < MAX_ALLOCS; i++)
    if (allocs[i].base == ptr && ptr) break;
  if (i == MAX_ALLOCS) {
    pthread_mutex_unlock(&mu);
    return INVALID_ARGUMENT;
  }
  if (allocs[i].pool == GPU_POOL) device_bytes -= allocs[i].size;
  free(allocs[i].base);
  allocs[i].base = NULL;
  free_calls++;
  pthread_mutex_unlock(&mu);
  return OK;
}

hsa_status_t hsa_amd_agents_allow_access(uint32_t n, const hsa_agent_t *agents, const uint32_t *flags,
                                         const void *ptr) {
  int i;
  (void)flags;
  if (n != 1 || agents[0].handle != GPU) return INVALID_AGENT;
  pthread_mutex_lock(&mu);
  i = find_alloc(ptr);
  if (i >= 0 && allocs[i].base == ptr) allocs[i].gpu_access = 1;
  pthread_mutex_unlock(&mu);
  return i >= 0 ? OK : INVALID_ARGUMENT;
}

/* Memory the GPU may touch: a live allocation of the GPU's pool, or one it was allowed to access. */
static int gpu_memory(const void *p, size_t n) {
  int i = find_alloc(p);
  return i >= 0 && allocs[i].gpu_access && (const char *)p + n <= allocs[i].base + allocs[i].size;
}

hsa_status_t hsa_signal_create(int64_t initial, uint32_t n, const hsa_agent_t *consumers, hsa_signal_t *signal) {
  signal_t *s = (signal_t *)malloc(sizeof *s);
  (void)n, (void)consumers;
  s->value = initial;
  signal->handle = (uint64_t)(uintptr_t)s;
  return OK;
}
hsa_status_t hsa_signal_destroy(hsa_signal_t signal) {
  free((void *)(uintptr_t)signal.handle);
  return OK;
}
void hsa_signal_add_relaxed(hsa_signal_t signal, int64_t v) {
  __atomic_add_fetch(&((signal_t *)(uintptr_t)signal.handle)->value, v, __ATOMIC_RELAXED);
}
int64_t hsa_signal_load_scacquire(hsa_signal_t signal) {
  return __atomic_load_n(&((signal_t *)(uintptr_t)signal.handle)->value, __ATOMIC_ACQUIRE);
}
/* Every operation completes before the call that starts it returns: waiting returns at once. */
int64_t hsa_signal_wait_scacquire(hsa_signal_t signal, int condition, int64_t compare, uint64_t timeout, int state) {
  (void)condition, (void)compare, (void)timeout, (void)state;
  return hsa_signal_load_scacquire(signal);
}

hsa_status_t hsa_amd_memory_async_copy(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                                       size_t size, uint32_t ndeps, const hsa_signal_t *deps, hsa_signal_t done) {
  int ok;
  (void)ndeps, (void)deps, (void)dst_agent, (void)src_agent;
  pthread_mutex_lock(&mu);
  ok = gpu_memory(dst, size) && gpu_memory(src, size); /* both ends must be visible to the DMA engine */
  if (ok) memcpy(dst, src, size), copies++;
  pthread_mutex_unlock(&mu);
  if (!ok) return INVALID_ARGUMENT;
  hsa_signal_add_relaxed(done, -1);
  return OK;
}

hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, int type,
                              void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *data, uint32_t priv,
                              uint32_t group, hsa_queue_t **queue) {
  queue_t *q;
  (void)type, (void)cb, (void)data, (void)priv, (void)group;
  if (agent.handle != GPU) return INVALID_AGENT;
  if (size == 0 || (size & (size - 1)) || size > 131072) return INVALID_ARGUMENT;
  q = (queue_t *)calloc(1, sizeof *q);
  q->q.size = size;
  q->q.base_address = aligned_alloc(64, (size_t)size * 64);
  memset(q->q.base_address, 0, (size_t)size * 64);
  q->q.doorbell_signal.handle = (uint64_t)(uintptr_t)&q->doorbell;
  *queue = &q->q;
  return OK;
}
hsa_status_t hsa_queue_destroy(hsa_queue_t *queue) {
  queue_t *q = (queue_t *)queue;
  if (q->read != q->write) return INVALID_ARGUMENT; /* packets still queued */
  free(q->q.base_address);
  free(q);
  return OK;
}
uint64_t hsa_queue_add_write_index_screlease(const hsa_queue_t *queue, uint64_t v) {
  return __atomic_fetch_add(&((queue_t *)queue)->write, v, __ATOMIC_RELEASE);
}
uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *queue) {
  return __atomic_load_n(&((const queue_t *)queue)->read, __ATOMIC_ACQUIRE);
}

static int known_kernel(uint64_t object) {
  int i;
  for (i = 0; i < nkernels; i++)
    if (kernel_objects[i] == object) return 1;
  return 0;
}

/* The packet processor: a store to a queue's doorbell runs the packets up to that index. A packet
   that is not a well-formed kernel dispatch aborts the process, as a GPU would fault. */
void hsa_signal_store_screlease(hsa_signal_t signal, int64_t value) {
  queue_t *q = NULL;
  signal_t *s = (signal_t *)(uintptr_t)signal.handle;
  __atomic_store_n(&s->value, value, __ATOMIC_RELEASE);
  q = (queue_t *)((char *)s - offsetof(queue_t, doorbell));
  pthread_mutex_lock(&mu);
  while (q->read <= (uint64_t)value && q->read < q->write) {
    packet_t *p = (packet_t *)q->q.base_address + (q->read % q->q.size);
    uint32_t header = __atomic_load_n((uint32_t *)p, __ATOMIC_ACQUIRE);
    int d, live = 0;
    if ((header & 0xff) != 2 || ((header >> 16) & 3) != 3 || !known_kernel(p->kernel_object) || !p->kernarg_address ||
        !gpu_memory(p->kernarg_address, 8)) {
      fprintf(stderr, "fake hsa: malformed dispatch packet (header 0x%x, kernel %llu)\n", header,
              (unsigned long long)p->kernel_object);
      abort();
    }
    for (d = 0; d < 3; d++) {
      if (p->wg[d] == 0 || p->grid[d] == 0) {
        fprintf(stderr, "fake hsa: empty grid or work-group in a dispatch\n");
        abort();
      }
      last_grid[d] = p->grid[d], last_wg[d] = p->wg[d];
    }
    memcpy(last_args, p->kernarg_address, sizeof last_args);
    for (d = 0; d < 8; d++) {
      int i = find_alloc((void *)(uintptr_t)last_args[d]);
      live += i >= 0 && allocs[i].pool == GPU_POOL;
    }
    last_args_live = live;
    dispatches++;
    __atomic_store_n((uint32_t *)p, 1u, __ATOMIC_RELEASE); /* back to an invalid packet */
    q->read++;
    if (p->completion_signal.handle) hsa_signal_add_relaxed(p->completion_signal, -1);
  }
  pthread_mutex_unlock(&mu);
}

hsa_status_t hsa_code_object_reader_create_from_memory(const void *code, size_t size, hsa_code_object_reader_t *r) {
  executable_t *e;
  if (size < 4 || memcmp(code,
                         "\x7f"
                         "ELF",
                         4) != 0)
    return INVALID_CODE_OBJECT;
  e = (executable_t *)calloc(1, sizeof *e);
  e->code = (char *)malloc(size);
  memcpy(e->code, code, size);
  e->size = size;
  r->handle = (uint64_t)(uintptr_t)e;
  return OK;
}
hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t r) {
  executable_t *e = (executable_t *)(uintptr_t)r.handle;
  free(e->code);
  free(e);
  return OK;
}
hsa_status_t hsa_executable_create_alt(int profile, int rounding, const char *options, hsa_executable_t *exe) {
  (void)rounding, (void)options;
  if (profile != 0 && profile != 1) return INVALID_ARGUMENT;
  exe->handle = (uint64_t)(uintptr_t)calloc(1, sizeof(executable_t));
  pthread_mutex_lock(&mu);
  live_executables++;
  pthread_mutex_unlock(&mu);
  return OK;
}
hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t exe, hsa_agent_t agent, hsa_code_object_reader_t r,
                                                   const char *options, hsa_loaded_code_object_t *loaded) {
  executable_t *e = (executable_t *)(uintptr_t)exe.handle, *code = (executable_t *)(uintptr_t)r.handle;
  (void)options, (void)loaded;
  if (agent.handle != GPU) return INVALID_AGENT;
  if (e->loaded || e->frozen) return INVALID_ARGUMENT;
  e->code = (char *)malloc(code->size);
  memcpy(e->code, code->code, code->size);
  e->size = code->size;
  e->loaded = 1;
  return OK;
}
hsa_status_t hsa_executable_freeze(hsa_executable_t exe, const char *options) {
  executable_t *e = (executable_t *)(uintptr_t)exe.handle;
  (void)options;
  if (!e->loaded) return INVALID_ARGUMENT;
  e->frozen = 1;
  return OK;
}
hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t exe, const char *name, const hsa_agent_t *agent,
                                               hsa_executable_symbol_t *sym) {
  executable_t *e = (executable_t *)(uintptr_t)exe.handle;
  size_t n = strlen(name);
  if (!e->frozen || !agent || agent->handle != GPU) return INVALID_ARGUMENT;
  /* a kernel descriptor symbol the code object's string table holds */
  if (n < 4 || strcmp(name + n - 3, ".kd") != 0 || !memmem(e->code, e->size, name, n + 1)) return INVALID_SYMBOL_NAME;
  sym->handle = exe.handle;
  return OK;
}
hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t sym, int attribute, void *value) {
  switch (attribute) {
    case 22: /* KERNEL_OBJECT */
      pthread_mutex_lock(&mu);
      if (nkernels < MAX_KERNELS) kernel_objects[nkernels++] = sym.handle;
      pthread_mutex_unlock(&mu);
      *(uint64_t *)value = sym.handle;
      return OK;
    case 11: /* KERNARG_SEGMENT_SIZE */
    case 13: /* GROUP_SEGMENT_SIZE */
    case 14: /* PRIVATE_SEGMENT_SIZE */
      *(uint32_t *)value = attribute == 11 ? 256 : 0;
      return OK;
    default:
      return INVALID_ARGUMENT;
  }
}
hsa_status_t hsa_executable_destroy(hsa_executable_t exe) {
  executable_t *e = (executable_t *)(uintptr_t)exe.handle;
  int i;
  pthread_mutex_lock(&mu);
  for (i = 0; i < nkernels; i++)
    if (kernel_objects[i] == exe.handle) kernel_objects[i] = 0;
  live_executables--;
  pthread_mutex_unlock(&mu);
  free(e->code);
  free(e);
  return OK;
}

/* For the test. */
void fake_hsa_counts(int *allocations, int *frees, int *dispatch_count, int *executables, int *copy_count) {
  pthread_mutex_lock(&mu);
  *allocations = alloc_calls, *frees = free_calls, *dispatch_count = dispatches, *executables = live_executables;
  *copy_count = copies;
  pthread_mutex_unlock(&mu);
}
void fake_hsa_last_dispatch(uint32_t grid[3], uint16_t wg[3], int *live_buffer_args) {
  pthread_mutex_lock(&mu);
  memcpy(grid, last_grid, sizeof last_grid);
  memcpy(wg, last_wg, sizeof last_wg);
  *live_buffer_args = last_args_live;
  pthread_mutex_unlock(&mu);
}
